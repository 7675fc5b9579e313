/* The lkv_gpu_driver table over the HIP module API, and the module itself.
 * Everything runs on the handle's one stream (created at open, or the
 * engine's: open_external; a lane's own), so copies and launches are
 * ordered as the shared code expects; only dtoh, sync and event_wait make
 * the host wait. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hip_internal.h"

static void *dev_ptr(lkv_gpu_ptr p)
{
    return (void *)(uintptr_t)p;
}

/* HIP's current device is per thread, and ops may come from any thread (one
 * at a time, under the device lock), so every entry selects it. The calling
 * thread's own choice is saved first and put back by leave: the thread may
 * run HIP code of its own, and a library must not change its device under
 * it. Where hipGetDevice fails the thread has no device to go back to. */
static hipError_t select_device(lkv_hip_api *a)
{
    int current = -1;
    if (a->lib.fn.hipGetDevice(&current) != hipSuccess)
        current = -1;
    hipError_t e = a->lib.fn.hipSetDevice(a->ordinal);
    a->saved_device = e == hipSuccess ? current : -1;
    return e;
}

static void restore_device(lkv_hip_api *a)
{
    if (a->saved_device >= 0 && a->saved_device != a->ordinal)
        (void)a->lib.fn.hipSetDevice(a->saved_device); /* nothing to do if it fails */
    a->saved_device = -1;
}

static lkv_status hip_enter(void *api)
{
    lkv_hip_api *a = api;
    char what[48];
    snprintf(what, sizeof what, "hipSetDevice(%d)", a->ordinal);
    return lkv_hip_check(&a->lib, select_device(a), what);
}

static void hip_leave(void *api)
{
    restore_device(api);
}

static lkv_status hip_mem_alloc(void *api, size_t bytes, lkv_gpu_ptr *out_ptr)
{
    lkv_hip_api *a = api;
    void *p = NULL;
    char what[64];
    snprintf(what, sizeof what, "hipMalloc(%zu bytes)", bytes);
    lkv_status st = lkv_hip_check(&a->lib, a->lib.fn.hipMalloc(&p, bytes), what);
    if (st == LKV_OK)
        *out_ptr = (lkv_gpu_ptr)(uintptr_t)p;
    return st;
}

static void hip_mem_free(void *api, lkv_gpu_ptr ptr)
{
    lkv_hip_api *a = api;
    if (ptr)
        (void)a->lib.fn.hipFree(dev_ptr(ptr)); /* nothing to do about a failed free */
}

static lkv_status hip_mem_zero(void *api, lkv_gpu_ptr ptr, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemsetAsync(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipMemsetAsync(dev_ptr(ptr), 0, bytes, a->stream),
                         what);
}

static lkv_status hip_host_alloc(void *api, size_t bytes, void **out_host)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipHostMalloc(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipHostMalloc(out_host, bytes, 0), what);
}

static void hip_host_free(void *api, void *host)
{
    lkv_hip_api *a = api;
    if (host)
        (void)a->lib.fn.hipHostFree(host);
}

static lkv_status hip_htod_async(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyHtoDAsync(%zu bytes)", bytes);
    /* hipMemcpyHtoDAsync's source is not const-qualified, but it is only read */
    return lkv_hip_check(&a->lib,
                         a->lib.fn.hipMemcpyHtoDAsync(dev_ptr(dst), (void *)(uintptr_t)src, bytes,
                                                      a->stream),
                         what);
}

/* Queued behind the stream's work, then the stream is waited for. */
static lkv_status hip_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyDtoHAsync(%zu bytes)", bytes);
    lkv_status st = lkv_hip_check(&a->lib, a->lib.fn.hipMemcpyDtoHAsync(dst, dev_ptr(src), bytes,
                                                                        a->stream),
                                  what);
    if (st == LKV_OK)
        st = lkv_hip_check(&a->lib, a->lib.fn.hipStreamSynchronize(a->stream),
                           "hipStreamSynchronize");
    return st;
}

static lkv_status hip_dtod(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyDtoDAsync(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipMemcpyDtoDAsync(dev_ptr(dst), dev_ptr(src), bytes,
                                                               a->stream),
                         what);
}

static lkv_status hip_launch(void *api, const lkv_gpu_launch *l)
{
    lkv_hip_api *a = api;
    hipError_t e = a->lib.fn.hipModuleLaunchKernel(a->fn[l->kernel], l->grid[0], l->grid[1],
                                                   l->grid[2], l->block, 1, 1, 0, a->stream,
                                                   l->args, NULL);
    return lkv_hip_check(&a->lib, e, "hipModuleLaunchKernel");
}

/* UNSUPPORTED where the grid does not fit the device at once
 * (hipErrorCooperativeLaunchTooLarge, 720) or the device or runtime has no
 * cooperative launch (hipErrorNotSupported, 801; the symbol absent): the
 * caller then launches otherwise. */
static lkv_status hip_launch_cooperative(void *api, const lkv_gpu_launch *l)
{
    lkv_hip_api *a = api;
    if (!a->lib.fn.hipModuleLaunchCooperativeKernel)
        return lkv_fail(LKV_UNSUPPORTED, "hip: the runtime has no "
                        "hipModuleLaunchCooperativeKernel");
    hipError_t e = a->lib.fn.hipModuleLaunchCooperativeKernel(
        a->fn[l->kernel], l->grid[0], l->grid[1], l->grid[2], l->block, 1, 1, 0, a->stream,
        l->args);
    if ((int)e == 720 || (int)e == 801)
        return lkv_fail(LKV_UNSUPPORTED, "hip: %s: %u x %u x %u blocks cannot all be resident "
                        "(hipError_t %d)", lkv_gpu_kernel_names[l->kernel], (unsigned)l->grid[0],
                        (unsigned)l->grid[1], (unsigned)l->grid[2], (int)e);
    return lkv_hip_check(&a->lib, e, "hipModuleLaunchCooperativeKernel");
}

static lkv_status hip_occupancy(void *api, lkv_gpu_kernel_id kernel, uint32_t block,
                                int *out_blocks)
{
    lkv_hip_api *a = api;
    if (!a->lib.fn.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)
        return LKV_UNSUPPORTED;
    hipError_t e = a->lib.fn.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
        out_blocks, a->fn[kernel], (int)block, 0);
    return lkv_hip_check(&a->lib, e, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
}

static lkv_status hip_event_create(void *api, void **out_event)
{
    lkv_hip_api *a = api;
    hipEvent_t e = NULL;
    lkv_status st = lkv_hip_check(&a->lib, a->lib.fn.hipEventCreateWithFlags(
                                                &e, LKV_HIP_EVENT_DISABLE_TIMING),
                                  "hipEventCreateWithFlags");
    if (st == LKV_OK)
        *out_event = e;
    return st;
}

static void hip_event_destroy(void *api, void *event)
{
    lkv_hip_api *a = api;
    if (event)
        (void)a->lib.fn.hipEventDestroy((hipEvent_t)event);
}

static lkv_status hip_event_record(void *api, void *event)
{
    lkv_hip_api *a = api;
    return lkv_hip_check(&a->lib, a->lib.fn.hipEventRecord((hipEvent_t)event, a->stream),
                         "hipEventRecord");
}

static lkv_status hip_event_done(void *api, void *event, int *out_done)
{
    lkv_hip_api *a = api;
    hipError_t e = a->lib.fn.hipEventQuery((hipEvent_t)event);
    *out_done = e == hipSuccess;
    return e == hipErrorNotReady ? LKV_OK : lkv_hip_check(&a->lib, e, "hipEventQuery");
}

static lkv_status hip_event_wait(void *api, void *event)
{
    lkv_hip_api *a = api;
    return lkv_hip_check(&a->lib, a->lib.fn.hipEventSynchronize((hipEvent_t)event),
                         "hipEventSynchronize");
}

static lkv_status hip_sync(void *api)
{
    lkv_hip_api *a = api;
    return lkv_hip_check(&a->lib, a->lib.fn.hipStreamSynchronize(a->stream),
                         "hipStreamSynchronize");
}

/* A stream of our own on the parent's device, for its module's kernels:
 * non-blocking, so nothing but the marks it waits for holds it back. A
 * device on an engine's stream gets none: the engine orders (and may
 * capture into a graph) only that stream, so lazykv's work stays on it. */
static lkv_status hip_lane_open(void *api, void **out_api)
{
    const lkv_hip_api *a = api;
    if (a->borrowed_stream)
        return lkv_fail(LKV_UNSUPPORTED, "hip: no lane on the engine's stream (open_external): "
                        "lazykv's work stays on the stream the engine orders");
    lkv_hip_api *l = malloc(sizeof *l);
    if (!l)
        return lkv_fail(LKV_OUT_OF_MEMORY, "hip: no host memory for a lane");
    *l = *a;
    /* the parent's to release (lkv_hip_api) */
    l->lib.handle = NULL;
    l->module = NULL;
    l->rtc_code = NULL;
    l->saved_device = -1;
    l->stream = NULL;
    l->own_stream = 0;
    hipError_t e = l->lib.fn.hipStreamCreateWithFlags(&l->stream, LKV_HIP_STREAM_NON_BLOCKING);
    lkv_status st = lkv_hip_check(&l->lib, e, "hipStreamCreateWithFlags (a lane)");
    if (st != LKV_OK) {
        free(l);
        return st;
    }
    l->own_stream = 1;
    *out_api = l;
    return LKV_OK;
}

static lkv_status hip_stream_wait(void *api, void *event)
{
    lkv_hip_api *a = api;
    return lkv_hip_check(&a->lib, a->lib.fn.hipStreamWaitEvent(a->stream, (hipEvent_t)event, 0),
                         "hipStreamWaitEvent");
}

/* Also the clean-up of a half-opened device: every field may be unset
 * (and a lane's are but its stream). */
static void hip_close(void *api)
{
    lkv_hip_api *a = api;
    if (!a)
        return;
    /* raw calls: a failure here must not replace the message of the open
     * that failed and is cleaning up */
    if ((a->module || a->own_stream) && select_device(a) == hipSuccess) {
        if (a->own_stream) /* a borrowed stream is the engine's */
            (void)a->lib.fn.hipStreamDestroy(a->stream);
        if (a->module)
            (void)a->lib.fn.hipModuleUnload(a->module);
        restore_device(a);
    }
    free(a->rtc_code);
    lkv_hip_unload(&a->lib);
    free(a);
}

const lkv_gpu_driver lkv_hip_driver = {
    .name = "hip",
    .enter = hip_enter,
    .leave = hip_leave,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .mem_zero = hip_mem_zero,
    .host_alloc = hip_host_alloc,
    .host_free = hip_host_free,
    .htod_async = hip_htod_async,
    .dtoh = hip_dtoh,
    .dtod = hip_dtod,
    .launch = hip_launch,
    .launch_cooperative = hip_launch_cooperative,
    .occupancy = hip_occupancy,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_done = hip_event_done,
    .event_wait = hip_event_wait,
    .sync = hip_sync,
    .lane_open = hip_lane_open,
    .stream_wait = hip_stream_wait,
    .close = hip_close,
};

/* The embedded offload bundle's code objects, parsed; INTERNAL when it does
 * not parse (the build went wrong). */
static lkv_status embedded_codes(lkv_hip_code_list *b)
{
    lkv_status st = lkv_hip_bundle_parse(lkv_hip_bundle, lkv_hip_bundle_size, b);
    if (st != LKV_OK)
        return lkv_fail_context(LKV_INTERNAL, "hip: this lazykv's embedded code objects are "
                                "damaged (a build problem)");
    return LKV_OK;
}

static lkv_status no_code(const lkv_hip_code_list *b, const char *arch)
{
    char targets[256];
    lkv_hip_bundle_targets(b, targets, sizeof targets);
    return lkv_fail_context(LKV_INCOMPATIBLE, "device %s has no embedded code object (this lazykv "
                            "carries %s) and hiprtc was not found: install hiprtc (ROCm)", arch,
                            targets);
}

lkv_status lkv_hip_code_source(const lkv_hip_lib *lib, const char *arch, char *out_how,
                               size_t cap)
{
    lkv_hip_code_list b;
    lkv_status st = embedded_codes(&b);
    if (st != LKV_OK)
        return st;
    const lkv_hip_code *code = lkv_hip_bundle_pick(&b, arch);
    if (code) {
        snprintf(out_how, cap, "embedded %s code object", code->target);
        return LKV_OK;
    }
    lkv_hip_rtc rtc;
    if (lkv_hip_rtc_find(lib, &rtc) != LKV_OK)
        return no_code(&b, arch);
    snprintf(out_how, cap, "no embedded code object: hiprtc (%s) compiles the kernels at open",
             rtc.from);
    lkv_hip_rtc_close(&rtc);
    return LKV_OK;
}

/* hiprtc's code object for `arch`, into a->rtc_code. */
static lkv_status compile_for(lkv_hip_api *a, const lkv_hip_code_list *b, const char *arch)
{
    lkv_hip_rtc rtc;
    if (lkv_hip_rtc_find(&a->lib, &rtc) != LKV_OK)
        return no_code(b, arch);
    size_t size = 0;
    lkv_status st = lkv_hip_rtc_compile(&rtc, (const char *)lkv_hip_source, arch, &a->rtc_code,
                                        &size);
    lkv_hip_rtc_close(&rtc);
    return st;
}

static lkv_status resolve_kernels(lkv_hip_api *a, const char *arch)
{
    for (int k = 0; k < LKV_GPU_KERNEL_COUNT; k++) {
        hipError_t e = a->lib.fn.hipModuleGetFunction(&a->fn[k], a->module,
                                                      lkv_gpu_kernel_names[k]);
        if (e != hipSuccess) {
            char what[128];
            snprintf(what, sizeof what, "hipModuleGetFunction(%s) on the %s module",
                     lkv_gpu_kernel_names[k], arch);
            return lkv_hip_check(&a->lib, e, what);
        }
    }
    return LKV_OK;
}

lkv_status lkv_hip_module_load(lkv_hip_api *a, const char *arch)
{
    lkv_hip_code_list b;
    lkv_status st = embedded_codes(&b);
    if (st != LKV_OK)
        return st;
    const lkv_hip_code *code = lkv_hip_bundle_pick(&b, arch);
    const void *image = code ? (const void *)code->data : NULL;
    if (!code) {
        st = compile_for(a, &b, arch);
        if (st != LKV_OK)
            return st;
        image = a->rtc_code;
    }
    st = hip_enter(a);
    if (st != LKV_OK)
        return st;
    char what[128];
    snprintf(what, sizeof what, "hipModuleLoadData(%s code object for device %s)",
             code ? code->target : "hiprtc", arch);
    st = lkv_hip_check(&a->lib, a->lib.fn.hipModuleLoadData(&a->module, image), what);
    if (st != LKV_OK)
        a->module = NULL;
    else
        st = resolve_kernels(a, arch);
    if (st == LKV_OK && !a->borrowed_stream) {
        /* a blocking stream: ordered with the null stream, as the HIP work
         * of a program that knows nothing of lazykv's stream is */
        st = lkv_hip_check(&a->lib, a->lib.fn.hipStreamCreate(&a->stream), "hipStreamCreate");
        a->own_stream = st == LKV_OK;
        if (st != LKV_OK)
            a->stream = NULL;
    }
    hip_leave(a);
    return st;
}
