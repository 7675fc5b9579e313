/* An engine that owns its OpenCL objects embeds lazykv: it makes its own
 * context, in-order queue and buffers (through the ICD loader, found the
 * way lazykv finds it), opens lazykv on them with lkv_runtime_open_external
 * and checks wrap, store and a decode batch on device arrays against the
 * cpu oracle (engine_checks.h), then closes lazykv and finds its own
 * objects alive. Skips without an OpenCL device unless
 * LAZYKV_REQUIRE_BACKENDS names opencl. */
#include "opencl/cl_internal.h"
#include "engine_checks.h"

#define MAX_BUFFERS 64

struct lkv_engine {
    lkv_cl_lib lib;
    cl_context ctx;
    cl_command_queue queue;
    cl_device_id dev;
    cl_mem bufs[MAX_BUFFERS];
    void *copies[MAX_BUFFERS * 4]; /* host copies of queued writes, kept to the end */
    int n_bufs, n_copies;
};

static uint64_t engine_buffer(lkv_engine *e, size_t bytes)
{
    cr_assert_lt(e->n_bufs, MAX_BUFFERS);
    cl_int err = 0;
    cl_mem m = e->lib.fn.clCreateBuffer(e->ctx, LKV_CL_MEM_READ_WRITE, bytes, NULL, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
    const cl_uint zero = 0;
    cr_assert_eq(e->lib.fn.clEnqueueFillBuffer(e->queue, m, &zero, 4, 0, bytes / 4 * 4, 0, NULL,
                                               NULL), LKV_CL_SUCCESS);
    e->bufs[e->n_bufs++] = m;
    return (uint64_t)(uintptr_t)m;
}

static void engine_put(lkv_engine *e, uint64_t h, size_t off, const void *src, size_t bytes)
{
    if (e->n_copies == MAX_BUFFERS * 4) { /* reuse the copies once the queue has run */
        cr_assert_eq(e->lib.fn.clFinish(e->queue), LKV_CL_SUCCESS);
        for (int i = 0; i < e->n_copies; i++)
            free(e->copies[i]);
        e->n_copies = 0;
    }
    void *copy = malloc(bytes);
    memcpy(copy, src, bytes);
    e->copies[e->n_copies++] = copy;
    cr_assert_eq(e->lib.fn.clEnqueueWriteBuffer(e->queue, (cl_mem)(uintptr_t)h, LKV_CL_FALSE, off,
                                                bytes, copy, 0, NULL, NULL), LKV_CL_SUCCESS);
}

static void engine_get(lkv_engine *e, uint64_t h, size_t off, void *dst, size_t bytes)
{
    cr_assert_eq(e->lib.fn.clEnqueueReadBuffer(e->queue, (cl_mem)(uintptr_t)h, LKV_CL_TRUE, off,
                                               bytes, dst, 0, NULL, NULL), LKV_CL_SUCCESS);
}

static int required(void)
{
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    return req && strstr(req, "opencl") != NULL;
}

static void engine_open(lkv_engine *e)
{
    memset(e, 0, sizeof *e);
    lkv_status st = lkv_cl_load(&e->lib);
    if (st != LKV_OK) {
        cr_assert(!required(), "opencl is required here: %s", lkv_last_error());
        cr_skip_test("no OpenCL: %s", lkv_last_error());
    }
    e->dev = e->lib.devs[0];
    cl_context_properties props[3] = {LKV_CL_CONTEXT_PLATFORM,
                                      (cl_context_properties)e->lib.dev_platform[0], 0};
    cl_int err = 0;
    e->ctx = e->lib.fn.clCreateContext(props, 1, &e->dev, NULL, NULL, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
    e->queue = e->lib.fn.clCreateCommandQueue(e->ctx, e->dev, 0, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
}

static void engine_close(lkv_engine *e)
{
    e->lib.fn.clFinish(e->queue);
    for (int i = 0; i < e->n_copies; i++)
        free(e->copies[i]);
    for (int i = 0; i < e->n_bufs; i++)
        e->lib.fn.clReleaseMemObject(e->bufs[i]);
    e->lib.fn.clReleaseCommandQueue(e->queue);
    e->lib.fn.clReleaseContext(e->ctx);
    lkv_cl_unload(&e->lib);
}

static lkv_runtime *lazykv_on(lkv_engine *e)
{
    lkv_external_device ext = {.backend = "opencl", .context = e->ctx, .stream = e->queue,
                               .physical_device = e->dev};
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open_external(&ext, &rt));
    return rt;
}

Test(opencl_engine, store_through_views_of_the_engine_s_buffers_matches_the_cpu)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    check_store_like_cpu(rt, &e, LKV_DTYPE_F32);
    check_store_like_cpu(rt, &e, LKV_DTYPE_F16);
    check_store_like_cpu(rt, &e, LKV_DTYPE_BF16);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(opencl_engine, a_decode_batch_on_device_arrays_matches_host_arrays_on_the_cpu)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    check_decode_batch_like_cpu(rt, &e, LKV_DTYPE_F16);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(opencl_engine, an_engine_cache_observing_device_rows_makes_the_cpu_s_plans)
{
    ON_ENGINE(check_observe_device_like_cpu);
}

Test(opencl_engine, a_plan_applied_to_paged_device_k_v_moves_what_the_host_apply_moves)
{
    ON_ENGINE(check_plan_apply_device_like_host);
}

Test(opencl_engine, a_cache_s_plan_applied_from_its_device_lists_moves_what_the_host_apply_moves)
{
    ON_ENGINE(check_cache_plan_device_like_host);
}

Test(opencl_engine, probabilities_recomputed_from_device_q_k_and_lse_make_the_host_plans)
{
    ON_ENGINE(check_qk_device_like_host);
}

Test(opencl_engine, prompt_votes_recomputed_from_device_q_k_and_lse_are_the_host_votes)
{
    ON_ENGINE(check_prompt_qk_device_like_host);
}

Test(opencl_engine, wrap_refuses_an_offset_off_the_16_byte_alignment_naming_both)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    check_wrap_refuses_misalignment(rt, engine_buffer(&e, 4096), 16);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(opencl_engine, wrap_refuses_a_cl_mem_of_another_context)
{
    lkv_engine e, other;
    engine_open(&e);
    engine_open(&other);
    lkv_runtime *rt = lazykv_on(&e);
    lkv_buffer *view = NULL;
    cr_assert_eq(rt->ops->wrap(rt->dev, engine_buffer(&other, 4096), 0, 64, &view),
                 LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "another context"), "message: %s", lkv_last_error());
    lkv_runtime_close(rt);
    engine_close(&other);
    engine_close(&e);
}

Test(opencl_engine, an_out_of_order_queue_is_refused)
{
    lkv_engine e;
    engine_open(&e);
    cl_int err = 0;
    cl_command_queue ooo = e.lib.fn.clCreateCommandQueue(
        e.ctx, e.dev, LKV_CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (err != LKV_CL_SUCCESS) {
        engine_close(&e);
        cr_skip_test("the device makes no out-of-order queue");
    }
    lkv_external_device ext = {.backend = "opencl", .context = e.ctx, .stream = ooo,
                               .physical_device = e.dev};
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open_external(&ext, &rt), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "out of order"), "message: %s", lkv_last_error());
    e.lib.fn.clReleaseCommandQueue(ooo);
    engine_close(&e);
}

/* lazykv retained and released, never destroyed: the engine's queue still
 * runs work after lkv_runtime_close. */
Test(opencl_engine, closing_lazykv_leaves_the_engine_s_objects_working)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    uint64_t h = engine_buffer(&e, 64);
    lkv_runtime_close(rt);
    const float x[4] = {1, 2, 3, 4};
    float y[4] = {0};
    engine_put(&e, h, 16, x, sizeof x);
    engine_get(&e, h, 16, y, sizeof y);
    cr_assert(memcmp(x, y, sizeof x) == 0);
    engine_close(&e);
}
