/* Opening a CUDA device: the driver, the device checked against the
 * embedded kernels (as the probe does, in the same words), its primary
 * context (shared with any CUDA runtime code in the process), the kernels
 * loaded from the embedded fatbin, and the limits the shared GPU code needs.
 * Any failing step undoes the ones before it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "error.h"

/* The device `device`, if it exists and the kernels can run on it. */
static lkv_status find_device(lkv_cu_api *a, int device, const lkv_fatbin_info *fb,
                              lkv_cu_identity *id)
{
    int n = 0;
    lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuDeviceGetCount(&n), "cuDeviceGetCount");
    if (st != LKV_OK)
        return st;
    if (device < 0 || device >= n)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cuda device %d does not exist (%d found)", device,
                        n);
    st = lkv_cu_check(&a->lib, a->lib.fn.cuDeviceGet(&a->dev, device), "cuDeviceGet");
    if (st == LKV_OK)
        st = lkv_cu_identify(&a->lib, a->dev, id);
    if (st != LKV_OK)
        return st;
    char how[96], why[200];
    if (!lkv_cu_can_run(fb, lkv_cuda_fatbin_toolkit, a->lib.driver_version, id->cc_major,
                        id->cc_minor, how, sizeof how, why, sizeof why))
        return lkv_fail(LKV_INCOMPATIBLE, "cuda device %d (%s): %s", device, id->name, why);
    return LKV_OK;
}

/* The JIT log on one line: its lines joined by "; ", blank ones dropped. */
static void flatten_log(const char *log, char *out, size_t len)
{
    size_t at = 0;
    for (const char *line = log; *line && at + 1 < len;) {
        size_t n = strcspn(line, "\r\n");
        while (n && line[n - 1] == ' ')
            n--;
        if (n) {
            int w = snprintf(out + at, len - at, "%s%.*s", at ? "; " : "", (int)n, line);
            at = w < 0 ? len : at + (size_t)w;
        }
        line += strcspn(line, "\r\n");
        line += strspn(line, "\r\n");
    }
    if (at >= len && len)
        out[len - 1] = '\0';
    else if (len)
        out[at] = '\0';
}

static int load_refused(CUresult r)
{
    return r == LKV_CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == LKV_CUDA_ERROR_NO_BINARY_FOR_GPU ||
           r == LKV_CUDA_ERROR_INVALID_IMAGE || r == LKV_CUDA_ERROR_INVALID_PTX ||
           r == LKV_CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
           r == LKV_CUDA_ERROR_JIT_COMPILATION_DISABLED;
}

/* cuModuleLoadDataEx on the embedded fatbin, with the JIT's error log
 * caught for the message. A driver that refuses the kernels is
 * INCOMPATIBLE, with what to do about it. */
static lkv_status load_module(lkv_cu_api *a, const lkv_fatbin_info *fb)
{
    char log[2048] = "", flat[1024];
    CUjit_option opts[2] = {LKV_CU_JIT_ERROR_LOG_BUFFER, LKV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    CUresult r = a->lib.fn.cuModuleLoadDataEx(&a->module, lkv_cuda_fatbin, 2, opts, vals);
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    a->module = NULL;
    log[sizeof log - 1] = '\0';
    flatten_log(log, flat, sizeof flat);
    char text[200], carried[96], advice[200];
    lkv_cu_error_text(&a->lib, r, text, sizeof text);
    if (!load_refused(r))
        return lkv_fail(r == LKV_CUDA_ERROR_OUT_OF_MEMORY ? LKV_OUT_OF_MEMORY : LKV_DEVICE_ERROR,
                        "cuda: loading the kernels: cuModuleLoadDataEx: %s%s%.400s", text,
                        *flat ? "; JIT log: " : "", flat);
    lkv_fatbin_summary(fb, carried, sizeof carried);
    lkv_cu_driver_advice(lkv_cuda_fatbin_toolkit, lkv_cuda_fatbin_toolkit, a->lib.driver_version,
                         advice, sizeof advice);
    return lkv_fail(LKV_INCOMPATIBLE,
                    "the driver cannot load the kernels (%s): cuModuleLoadDataEx: %s%s%.400s: %s",
                    carried, text, *flat ? "; JIT log: " : "", flat, advice);
}

static lkv_status get_functions(lkv_cu_api *a)
{
    for (int k = 0; k < (int)LKV_GPU_KERNEL_COUNT; k++) {
        CUresult r = a->lib.fn.cuModuleGetFunction(&a->kernels[k], a->module,
                                                   lkv_gpu_kernel_names[k]);
        if (r != LKV_CUDA_SUCCESS) {
            char text[200];
            lkv_cu_error_text(&a->lib, r, text, sizeof text);
            return lkv_fail(LKV_INTERNAL, "cuda: the embedded kernels lack %s (%s): the fatbin and "
                            "backends/gpu/gpu_kernels.h disagree", lkv_gpu_kernel_names[k], text);
        }
    }
    return LKV_OK;
}

/* The context: the engine's (checked to be the device's), or the device's
 * primary context, retained. */
static lkv_status take_context(lkv_cu_api *a, CUcontext engine_ctx, int device)
{
    if (!engine_ctx) {
        lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuDevicePrimaryCtxRetain(&a->ctx, a->dev),
                                     "cuDevicePrimaryCtxRetain");
        a->retained = st == LKV_OK;
        if (st != LKV_OK)
            a->ctx = NULL;
        return st;
    }
    a->ctx = engine_ctx;
    lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuCtxPushCurrent_v2(a->ctx),
                                 "cuCtxPushCurrent of the engine's context");
    if (st != LKV_OK) {
        a->ctx = NULL;
        return lkv_fail_context(LKV_INVALID_ARGUMENT, "cuda external device: the context is not "
                                "usable");
    }
    CUdevice owner = -1;
    st = lkv_cu_check(&a->lib, a->lib.fn.cuCtxGetDevice(&owner), "cuCtxGetDevice");
    CUcontext popped;
    a->lib.fn.cuCtxPopCurrent_v2(&popped);
    if (st == LKV_OK && owner != a->dev)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "cuda external device: the context belongs to "
                      "device %d, not to device %d", (int)owner, device);
    if (st != LKV_OK)
        a->ctx = NULL;
    return st;
}

/* In the context: the stream (created unless the engine gave one), the
 * module and its kernels. */
static lkv_status load_kernels(lkv_cu_api *a, const lkv_fatbin_info *fb, int own_stream,
                               CUstream engine_stream)
{
    lkv_status st = lkv_cu_check(&a->lib, a->lib.fn.cuCtxPushCurrent_v2(a->ctx),
                                 "cuCtxPushCurrent");
    if (st != LKV_OK)
        return st;
    a->stream = engine_stream;
    if (own_stream) {
        /* a blocking stream: ordered with the legacy default stream, as the
         * work of a CUDA program that knows nothing of lazykv's stream is */
        st = lkv_cu_check(&a->lib, a->lib.fn.cuStreamCreate(&a->stream, LKV_CU_STREAM_DEFAULT),
                          "cuStreamCreate");
        a->own_stream = st == LKV_OK;
        if (st != LKV_OK)
            a->stream = NULL;
    }
    if (st == LKV_OK)
        st = load_module(a, fb);
    if (st == LKV_OK)
        st = get_functions(a);
    CUcontext popped;
    a->lib.fn.cuCtxPopCurrent_v2(&popped);
    return st;
}

static lkv_status read_limits(lkv_cu_api *a, const lkv_cu_identity *id, lkv_gpu_limits *out)
{
    int warp = 0, grid_y = 0, grid_z = 0;
    lkv_status st = lkv_cu_attribute(&a->lib, a->dev, LKV_CU_DEVICE_ATTRIBUTE_WARP_SIZE,
                                     "WARP_SIZE", &warp);
    if (st == LKV_OK)
        st = lkv_cu_attribute(&a->lib, a->dev, LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                              "MAX_GRID_DIM_Y", &grid_y);
    if (st == LKV_OK)
        st = lkv_cu_attribute(&a->lib, a->dev, LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
                              "MAX_GRID_DIM_Z", &grid_z);
    if (st != LKV_OK)
        return st;
    out->warp = warp;
    out->multiprocessors = id->multiprocessors;
    out->max_grid_y = grid_y > 0 ? (uint32_t)grid_y : 0;
    out->max_grid_z = grid_z > 0 ? (uint32_t)grid_z : 0;
    return LKV_OK;
}

/* Everything open and open_external share: the driver, the device, its
 * context and stream, the kernels, the limits. */
static lkv_status open_on(int device, CUcontext engine_ctx, int own_stream, CUstream engine_stream,
                          lkv_device **out_dev)
{
    lkv_fatbin_info fb;
    lkv_status st = lkv_cu_embedded_fatbin(&fb);
    if (st != LKV_OK)
        return st;
    lkv_cu_api *a = calloc(1, sizeof *a);
    if (!a)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the cuda backend");
    st = lkv_cu_load(&a->lib);
    if (st != LKV_OK) {
        free(a);
        return st;
    }
    lkv_cu_identity id;
    lkv_gpu_limits lim;
    st = find_device(a, device, &fb, &id);
    if (st == LKV_OK) {
        st = take_context(a, engine_ctx, device);
        if (st == LKV_OK)
            st = load_kernels(a, &fb, own_stream, engine_stream);
        if (st == LKV_OK)
            st = read_limits(a, &id, &lim);
        if (st != LKV_OK)
            st = lkv_fail_context(st, "cuda device %d (%s, compute capability %d.%d)", device,
                                  id.name, id.cc_major, id.cc_minor);
    }
    if (st != LKV_OK) {
        lkv_cu_driver.close(a);
        return st;
    }
    /* lkv_gpu_device_create closes the driver itself when it fails */
    return lkv_gpu_device_create(&lkv_cu_driver, a, &lim, out_dev);
}

lkv_status lkv_cu_open(int device, lkv_device **out_dev)
{
    return open_on(device, NULL, 1, NULL, out_dev);
}

/* Borrows the engine's context (NULL: the device's primary context) and
 * stream (NULL: the legacy default stream); close gives back neither. */
lkv_status lkv_cu_open_external(const lkv_external_device *ext, lkv_device **out_dev)
{
    if (!ext->backend || strcmp(ext->backend, "cuda") != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cuda: external device of backend '%s'",
                        ext->backend ? ext->backend : "(null)");
    if (ext->instance || ext->physical_device || ext->logical_device || ext->queue_family)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cuda external device: instance, physical_device, "
                        "logical_device and queue_family must be zero (they are Vulkan's and "
                        "OpenCL's)");
    return open_on(ext->device, (CUcontext)ext->context, 0, (CUstream)ext->stream, out_dev);
}
