/* The lkv_gpu_driver table over the HIP module API, and the module itself.
 * Everything runs on the null stream of the device, so copies and launches
 * are ordered as the shared code expects; hipMemcpyHtoD/DtoH return once the
 * host buffer may be reused or holds the data. */
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
    snprintf(what, sizeof what, "hipMemset(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipMemset(dev_ptr(ptr), 0, bytes), what);
}

static lkv_status hip_htod(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyHtoD(%zu bytes)", bytes);
    /* hipMemcpyHtoD's source is not const-qualified, but it is only read */
    return lkv_hip_check(&a->lib,
                         a->lib.fn.hipMemcpyHtoD(dev_ptr(dst), (void *)(uintptr_t)src, bytes),
                         what);
}

static lkv_status hip_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyDtoH(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipMemcpyDtoH(dst, dev_ptr(src), bytes), what);
}

static lkv_status hip_dtod(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_hip_api *a = api;
    char what[64];
    snprintf(what, sizeof what, "hipMemcpyDtoD(%zu bytes)", bytes);
    return lkv_hip_check(&a->lib, a->lib.fn.hipMemcpyDtoD(dev_ptr(dst), dev_ptr(src), bytes),
                         what);
}

static lkv_status hip_launch(void *api, const lkv_gpu_launch *l)
{
    lkv_hip_api *a = api;
    hipError_t e = a->lib.fn.hipModuleLaunchKernel(a->fn[l->kernel], l->grid[0], l->grid[1],
                                                   l->grid[2], l->block, 1, 1, 0, NULL, l->args,
                                                   NULL);
    return lkv_hip_check(&a->lib, e, "hipModuleLaunchKernel");
}

static lkv_status hip_sync(void *api)
{
    lkv_hip_api *a = api;
    return lkv_hip_check(&a->lib, a->lib.fn.hipDeviceSynchronize(), "hipDeviceSynchronize");
}

/* Also the clean-up of a half-opened device: every field may be unset. */
static void hip_close(void *api)
{
    lkv_hip_api *a = api;
    if (!a)
        return;
    /* raw calls: a failure here must not replace the message of the open
     * that failed and is cleaning up */
    if (a->module && select_device(a) == hipSuccess) {
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
    .htod = hip_htod,
    .dtoh = hip_dtoh,
    .dtod = hip_dtod,
    .launch = hip_launch,
    .sync = hip_sync,
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
    hip_leave(a);
    return st;
}
