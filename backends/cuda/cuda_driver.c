/* The CUDA driver table the shared GPU host code runs on: the device's
 * context (its primary context, or the engine's) made current around each
 * entry, and every copy, memset, launch and event on the device's one
 * stream (created at open, or the engine's; a lane's own), so each is
 * ordered after everything issued before it and only dtoh, sync and
 * event_wait make the host wait. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "error.h"

_Static_assert(sizeof(CUdeviceptr) == sizeof(lkv_gpu_ptr), "CUdeviceptr is a 64-bit address");

static lkv_status cu_enter(void *api)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuCtxPushCurrent_v2(a->ctx), "cuCtxPushCurrent");
}

static void cu_leave(void *api)
{
    lkv_cu_api *a = api;
    CUcontext popped;
    a->lib.fn.cuCtxPopCurrent_v2(&popped);
}

static lkv_status cu_mem_alloc(void *api, size_t bytes, lkv_gpu_ptr *out_ptr)
{
    lkv_cu_api *a = api;
    CUdeviceptr p = 0;
    /* never 0 bytes, which cuMemAlloc refuses: lkv_gpu_alloc asks for whole
     * 16-byte units, at least one */
    CUresult r = a->lib.fn.cuMemAlloc_v2(&p, bytes);
    if (r != LKV_CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "cuMemAlloc of %zu bytes", bytes);
        return lkv_cu_check(&a->lib, r, what);
    }
    *out_ptr = p;
    return LKV_OK;
}

static void cu_mem_free(void *api, lkv_gpu_ptr ptr)
{
    lkv_cu_api *a = api;
    if (ptr)
        a->lib.fn.cuMemFree_v2(ptr);
}

static lkv_status cu_mem_zero(void *api, lkv_gpu_ptr ptr, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemsetD8Async(ptr, 0, bytes, a->stream),
                        "cuMemsetD8Async");
}

static lkv_status cu_host_alloc(void *api, size_t bytes, void **out_host)
{
    lkv_cu_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "cuMemHostAlloc of %zu bytes", bytes);
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemHostAlloc(out_host, bytes, 0), what);
}

static void cu_host_free(void *api, void *host)
{
    lkv_cu_api *a = api;
    if (host)
        (void)a->lib.fn.cuMemFreeHost(host);
}

/* From page-locked memory the copy is queued and the call returns. */
static lkv_status cu_htod_async(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyHtoDAsync_v2(dst, src, bytes, a->stream),
                        "cuMemcpyHtoDAsync");
}

/* Into the caller's (pageable) memory: queued behind the stream's work,
 * then the stream is waited for, so `dst` holds the data on return. */
static lkv_status cu_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyDtoHAsync_v2(dst, src, bytes,
                                                                        a->stream),
                                 "cuMemcpyDtoHAsync");
    if (st == LKV_OK)
        st = lkv_cu_check(&a->lib, a->lib.fn.cuStreamSynchronize(a->stream),
                          "cuStreamSynchronize");
    return st;
}

static lkv_status cu_dtod(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyDtoDAsync_v2(dst, src, bytes, a->stream),
                        "cuMemcpyDtoDAsync");
}

static lkv_status cu_launch(void *api, const lkv_gpu_launch *l)
{
    lkv_cu_api *a = api;
    CUresult r = a->lib.fn.cuLaunchKernel(a->kernels[l->kernel], l->grid[0], l->grid[1],
                                          l->grid[2], l->block, 1, 1, 0, a->stream, l->args,
                                          NULL);
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    char what[96];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", lkv_gpu_kernel_names[l->kernel]);
    return lkv_cu_check(&a->lib, r, what);
}

/* UNSUPPORTED where the grid does not fit the device at once, or the
 * device has no cooperative launch: the caller then launches otherwise. */
static lkv_status cu_launch_cooperative(void *api, const lkv_gpu_launch *l)
{
    lkv_cu_api *a = api;
    if (!a->lib.fn.cuLaunchCooperativeKernel)
        return lkv_fail(LKV_UNSUPPORTED, "cuda: the driver has no cuLaunchCooperativeKernel");
    CUresult r = a->lib.fn.cuLaunchCooperativeKernel(a->kernels[l->kernel], l->grid[0],
                                                     l->grid[1], l->grid[2], l->block, 1, 1, 0,
                                                     a->stream, l->args);
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    if (r == LKV_CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == LKV_CUDA_ERROR_NOT_SUPPORTED)
        return lkv_fail(LKV_UNSUPPORTED, "cuda: %s: %u x %u x %u blocks cannot all be resident "
                        "(CUresult %d)", lkv_gpu_kernel_names[l->kernel], (unsigned)l->grid[0],
                        (unsigned)l->grid[1], (unsigned)l->grid[2], (int)r);
    char what[96];
    snprintf(what, sizeof what, "cuLaunchCooperativeKernel(%s)", lkv_gpu_kernel_names[l->kernel]);
    return lkv_cu_check(&a->lib, r, what);
}

static lkv_status cu_occupancy(void *api, lkv_gpu_kernel_id kernel, uint32_t block,
                               int *out_blocks)
{
    lkv_cu_api *a = api;
    if (!a->lib.fn.cuOccupancyMaxActiveBlocksPerMultiprocessor)
        return LKV_UNSUPPORTED;
    return lkv_cu_check(&a->lib,
                        a->lib.fn.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                            out_blocks, a->kernels[kernel], (int)block, 0),
                        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}

static lkv_status cu_event_create(void *api, void **out_event)
{
    lkv_cu_api *a = api;
    CUevent e = NULL;
    lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuEventCreate(&e, LKV_CU_EVENT_DISABLE_TIMING),
                                 "cuEventCreate");
    if (st == LKV_OK)
        *out_event = e;
    return st;
}

static void cu_event_destroy(void *api, void *event)
{
    lkv_cu_api *a = api;
    if (event)
        (void)a->lib.fn.cuEventDestroy_v2((CUevent)event);
}

static lkv_status cu_event_record(void *api, void *event)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuEventRecord((CUevent)event, a->stream),
                        "cuEventRecord");
}

static lkv_status cu_event_done(void *api, void *event, int *out_done)
{
    lkv_cu_api *a = api;
    CUresult r = a->lib.fn.cuEventQuery((CUevent)event);
    *out_done = r == LKV_CUDA_SUCCESS;
    return r == LKV_CUDA_ERROR_NOT_READY ? LKV_OK : lkv_cu_check(&a->lib, r, "cuEventQuery");
}

static lkv_status cu_event_wait(void *api, void *event)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuEventSynchronize((CUevent)event),
                        "cuEventSynchronize");
}

static lkv_status cu_sync(void *api)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuStreamSynchronize(a->stream), "cuStreamSynchronize");
}

/* A stream of our own on the parent's context, for its kernels. It does
 * not block with the legacy default stream (as the device's own does), so
 * nothing but the marks it waits for holds it back. A device on an engine's
 * stream gets none: the engine orders (and may capture into a graph) only
 * that stream, so lazykv's work stays on it. */
static lkv_status cu_lane_open(void *api, void **out_api)
{
    const lkv_cu_api *a = api;
    if (!a->own_stream)
        return lkv_fail(LKV_UNSUPPORTED, "cuda: no lane on the engine's stream (open_external): "
                        "lazykv's work stays on the stream the engine orders");
    lkv_cu_api *l = malloc(sizeof *l);
    if (!l)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cuda: no host memory for a lane");
    *l = *a;
    /* the parent's to release (lkv_cu_api) */
    l->lib.handle = NULL;
    l->module = NULL;
    l->retained = 0;
    l->stream = NULL;
    l->own_stream = 0;
    lkv_status st = lkv_cu_check(&l->lib, l->lib.fn.cuStreamCreate(&l->stream,
                                                                   LKV_CU_STREAM_NON_BLOCKING),
                                 "cuStreamCreate (a lane)");
    if (st != LKV_OK) {
        free(l);
        return st;
    }
    l->own_stream = 1;
    *out_api = l;
    return LKV_OK;
}

static lkv_status cu_stream_wait(void *api, void *event)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuStreamWaitEvent(a->stream, (CUevent)event, 0),
                        "cuStreamWaitEvent");
}

/* Undoes whatever open got done, in reverse, so open uses it on failure;
 * for a lane, only its stream (the rest is unset). */
static void cu_close(void *api)
{
    lkv_cu_api *a = api;
    if (!a)
        return;
    if ((a->module || a->own_stream) && a->lib.fn.cuCtxPushCurrent_v2(a->ctx) == LKV_CUDA_SUCCESS) {
        if (a->own_stream)
            a->lib.fn.cuStreamDestroy_v2(a->stream);
        if (a->module)
            a->lib.fn.cuModuleUnload(a->module);
        CUcontext popped;
        a->lib.fn.cuCtxPopCurrent_v2(&popped);
    }
    /* a borrowed context (open_external) is the engine's: never released */
    if (a->ctx && a->retained)
        a->lib.fn.cuDevicePrimaryCtxRelease_v2(a->dev);
    lkv_cu_unload(&a->lib);
    free(a);
}

const lkv_gpu_driver lkv_cu_driver = {
    .name = "cuda",
    .enter = cu_enter,
    .leave = cu_leave,
    .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free,
    .mem_zero = cu_mem_zero,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .htod_async = cu_htod_async,
    .dtoh = cu_dtoh,
    .dtod = cu_dtod,
    .launch = cu_launch,
    .launch_cooperative = cu_launch_cooperative,
    .occupancy = cu_occupancy,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_done = cu_event_done,
    .event_wait = cu_event_wait,
    .sync = cu_sync,
    .lane_open = cu_lane_open,
    .stream_wait = cu_stream_wait,
    .close = cu_close,
};
