/* The CUDA driver table the shared GPU host code runs on: the device's
 * primary context made current around each entry, and every copy, memset
 * and launch on the legacy default stream (stream NULL), so each one is
 * ordered after everything issued before it. */
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
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemsetD8_v2(ptr, 0, bytes), "cuMemsetD8");
}

/* From pageable host memory cuMemcpyHtoD returns once the source has been
 * staged, so `src` may be reused at once, as the table promises. */
static lkv_status cu_htod(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD");
}

static lkv_status cu_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH");
}

static lkv_status cu_dtod(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_cu_api *a = api;
    if (!bytes)
        return LKV_OK;
    return lkv_cu_check(&a->lib, a->lib.fn.cuMemcpyDtoD_v2(dst, src, bytes), "cuMemcpyDtoD");
}

static lkv_status cu_launch(void *api, const lkv_gpu_launch *l)
{
    lkv_cu_api *a = api;
    CUresult r = a->lib.fn.cuLaunchKernel(a->kernels[l->kernel], l->grid[0], l->grid[1],
                                          l->grid[2], l->block, 1, 1, 0, NULL, l->args, NULL);
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    char what[96];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", lkv_gpu_kernel_names[l->kernel]);
    return lkv_cu_check(&a->lib, r, what);
}

static lkv_status cu_sync(void *api)
{
    lkv_cu_api *a = api;
    return lkv_cu_check(&a->lib, a->lib.fn.cuCtxSynchronize(), "cuCtxSynchronize");
}

/* Undoes whatever open got done, in reverse, so open uses it on failure. */
static void cu_close(void *api)
{
    lkv_cu_api *a = api;
    if (!a)
        return;
    if (a->module && a->lib.fn.cuCtxPushCurrent_v2(a->ctx) == LKV_CUDA_SUCCESS) {
        a->lib.fn.cuModuleUnload(a->module);
        CUcontext popped;
        a->lib.fn.cuCtxPopCurrent_v2(&popped);
    }
    if (a->ctx)
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
    .htod = cu_htod,
    .dtoh = cu_dtoh,
    .dtod = cu_dtod,
    .launch = cu_launch,
    .sync = cu_sync,
    .close = cu_close,
};
