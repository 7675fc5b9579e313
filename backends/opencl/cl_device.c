/* Opening an OpenCL device: a context and an in-order queue on it, and the
 * settings the shared plans drive it with, or the engine's context and
 * queue (open_external, cl_external.c), retained and released, never made
 * or destroyed here. lkv_cl_close closes a lane too (cl_lane.c). Three
 * environment knobs narrow them for testing, as Vulkan's do:
 *   LAZYKV_OPENCL_WG         work-group size, a power of two in 32..256
 *   LAZYKV_OPENCL_MAX_RANGE  a smaller binding range, >= 4096 bytes (runs the
 *                            windowed paths of long caches on small ones)
 *   LAZYKV_OPENCL_F64        0 computes scores in f32 even where the device
 *                            has cl_khr_fp64
 * A knob with a bad value fails the open, naming it. */
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"

/* Kernels index a binding with 32-bit element counts, so one binding spans
 * at most this many bytes (f16 and bf16 elements count halves). */
#define LKV_CL_MAX_RANGE ((uint64_t)1 << 31)

static lkv_status settings(lkv_device *d)
{
    lkv_bind_limits *lim = &d->bind.lim;
    d->bind.drv = &lkv_cl_bind_driver;
    lim->max_groups = lkv_bind_group_budget((d->info.type & LKV_CL_DEVICE_TYPE_CPU) != 0);
    lim->max_slot_groups = lkv_bind_group_budget(0);
    lim->max_count[0] = lim->max_count[1] = 65535;
    lim->align = 16; /* offsets are kernel arguments: only the 16-byte loads care */
    lim->max_range = d->info.max_alloc < LKV_CL_MAX_RANGE ? d->info.max_alloc : LKV_CL_MAX_RANGE;
    lkv_status st = lkv_bind_work_group("LAZYKV_OPENCL_WG", d->info.max_wg, d->info.local_mem,
                                        &lim->wg);
    long long v = 0;
    int set = 0;
    if (st == LKV_OK)
        st = lkv_bind_env_long("LAZYKV_OPENCL_MAX_RANGE", 4096, (long long)lim->max_range, &v, &set);
    if (st == LKV_OK && set)
        lim->max_range = (uint64_t)v;
    v = 1;
    if (st == LKV_OK)
        st = lkv_bind_env_long("LAZYKV_OPENCL_F64", 0, 1, &v, &set);
    lim->has_f64 = d->info.has_f64 && v == 1;
    return st;
}

/* Our own context and queue, or the engine's, retained so that close
 * releases what it took and never destroys the engine's objects. */
static lkv_status take_queue(lkv_device *d, cl_context ctx, cl_command_queue queue)
{
    if (ctx) {
        lkv_status st = lkv_cl_external_check(d, ctx, queue);
        if (st == LKV_OK)
            st = lkv_cl_check(d->lib.fn.clRetainContext(ctx), "clRetainContext");
        if (st != LKV_OK)
            return st;
        d->ctx = ctx;
        st = lkv_cl_check(d->lib.fn.clRetainCommandQueue(queue), "clRetainCommandQueue");
        if (st == LKV_OK)
            d->queue = queue;
        d->external = 1;
        return st;
    }
    cl_context_properties props[3] = {LKV_CL_CONTEXT_PLATFORM,
                                      (cl_context_properties)d->lib.dev_platform[d->index], 0};
    cl_int err = LKV_CL_SUCCESS;
    d->ctx = d->lib.fn.clCreateContext(props, 1, &d->dev, NULL, NULL, &err);
    if (err != LKV_CL_SUCCESS)
        return lkv_cl_check(err, "clCreateContext");
    d->queue = d->lib.fn.clCreateCommandQueue(d->ctx, d->dev, 0, &err);
    return lkv_cl_check(err, "clCreateCommandQueue");
}

void lkv_cl_close(lkv_device *d)
{
    if (!d)
        return;
    if (d->queue)
        d->lib.fn.clFinish(d->queue);
    lkv_buffer *scratch[5] = {d->arena, d->bind.logits, d->bind.partials, d->bind.lse,
                              d->bind.compact_scratch};
    for (int i = 0; i < 5; i++)
        lkv_cl_free(d, scratch[i]);
    free(d->arena_host);
    lkv_bind_release(&d->bind);
    lkv_cl_pipes_destroy(d);
    if (d->queue)
        d->lib.fn.clReleaseCommandQueue(d->queue);
    if (d->ctx)
        d->lib.fn.clReleaseContext(d->ctx);
    lkv_host_lock_destroy(&d->bind.lock);
    if (!d->lane) /* a lane borrows its parent's reference */
        lkv_cl_unload(&d->lib);
    free(d);
}

/* The library loaded into a fresh device, or a status. */
static lkv_status new_device(lkv_device **out_dev)
{
    lkv_device *d = calloc(1, sizeof *d);
    if (!d)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the opencl backend");
    lkv_status st = lkv_cl_load(&d->lib);
    if (st != LKV_OK) {
        free(d);
        return st;
    }
    *out_dev = d;
    return LKV_OK;
}

static lkv_status open_loaded(lkv_device *d, int device, cl_device_id want, cl_context ctx,
                              cl_command_queue queue)
{
    for (int i = 0; want && i < d->lib.n_devs; i++)
        device = d->lib.devs[i] == want ? i : device;
    if (want && device < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl: physical_device %p is none of the %d "
                        "devices the OpenCL loader lists", (void *)want, d->lib.n_devs);
    if (device < 0 || device >= d->lib.n_devs)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl device %d does not exist (%d found)", device,
                        d->lib.n_devs);
    d->index = device;
    d->dev = d->lib.devs[device];
    lkv_cl_read_info(&d->lib, device, &d->info);
    char why[200];
    if (!lkv_cl_usable(&d->info, why, sizeof why))
        return lkv_fail(LKV_UNAVAILABLE, "opencl device %d: %s", device, why);
    lkv_status st = settings(d);
    if (st == LKV_OK && !lkv_host_lock_init(&d->bind.lock, &lkv_bind_inner))
        st = lkv_fail(LKV_INTERNAL, "opencl: cannot create the device lock");
    if (st == LKV_OK)
        st = take_queue(d, ctx, queue);
    if (st != LKV_OK)
        return lkv_fail_context(st, "opening opencl device %d (%s)", device, d->info.name);
    return LKV_OK;
}

lkv_status lkv_cl_open_on(int device, cl_device_id want, cl_context ctx, cl_command_queue queue,
                          lkv_device **out_dev)
{
    lkv_device *d = NULL;
    lkv_status st = new_device(&d);
    if (st != LKV_OK)
        return st;
    st = open_loaded(d, want ? -1 : device, want, ctx, queue);
    if (st != LKV_OK) {
        lkv_cl_close(d);
        return st;
    }
    *out_dev = d;
    return LKV_OK;
}

lkv_status lkv_cl_open(int device, lkv_device **out_dev)
{
    return lkv_cl_open_on(device, NULL, NULL, NULL, out_dev);
}
