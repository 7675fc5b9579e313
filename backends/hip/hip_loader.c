/* Loading the HIP runtime at run time: libamdhip64 of ROCm 7, 6 or 5, else
 * the unversioned development name (pip-installed ROCm wheels ship only the
 * versioned file), found by the shared loader (host/host_library.h); the
 * entry points of hip_symbols.h; hipInit; at least one device. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "hip_internal.h"
#include "host/host_library.h"
#include "host/host_symbols.h"
#include "host/host_text.h"

/* Newest first: a machine with several ROCm installs gets the newest the
 * loader can see. */
static const char *const lib_names[] = {"libamdhip64.so.7", "libamdhip64.so.6",
                                        "libamdhip64.so.5", "libamdhip64.so"};

const lkv_host_symbol lkv_hip_symbols[] = {
#define LKV_SYM(group, need, ret, name, params)                                              \
    LKV_HOST_SYMBOL(lkv_##group##_fns, group, need, name)
#include "hip_symbols.h"
#undef LKV_SYM
};
const size_t lkv_hip_symbol_count = sizeof lkv_hip_symbols / sizeof lkv_hip_symbols[0];

static lkv_status resolve(lkv_hip_lib *lib)
{
    const char *missing = lkv_host_resolve(lkv_hip_symbols, lkv_hip_symbol_count, "hip",
                                           lkv_host_dlsym, lib->handle, &lib->fn);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "%s lacks %s: not a HIP runtime lazykv can use (ROCm 5 "
                        "or newer is needed)", lib->path, missing);
    if (!lib->fn.hipGetDevicePropertiesR0600 && !lib->fn.hipGetDeviceProperties)
        return lkv_fail(LKV_UNAVAILABLE, "%s has neither hipGetDevicePropertiesR0600 nor "
                        "hipGetDeviceProperties: not a HIP runtime lazykv can use", lib->path);
    return LKV_OK;
}

static const char *error_name(const lkv_hip_lib *lib, hipError_t err)
{
    return lib->fn.hipGetErrorName ? lib->fn.hipGetErrorName(err) : NULL;
}

lkv_status lkv_hip_check(const lkv_hip_lib *lib, hipError_t err, const char *what)
{
    if (err == hipSuccess)
        return LKV_OK;
    const char *text = lib->fn.hipGetErrorString ? lib->fn.hipGetErrorString(err) : NULL;
    lkv_status st = LKV_DEVICE_ERROR;
    if (err == hipErrorOutOfMemory)
        st = LKV_OUT_OF_MEMORY;
    else if (err == hipErrorInvalidImage || err == hipErrorNoBinaryForGpu)
        st = LKV_INCOMPATIBLE;
    return lkv_host_call_failed(st, "hip", what, err, error_name(lib, err), text);
}

/* hipInit, then the device count. A runtime with no GPU to drive (no amdgpu
 * kernel driver, or no permission on it) may fail hipInit itself; the count
 * tells that case from a broken install. */
static lkv_status init_runtime(lkv_hip_lib *lib, int *out_count)
{
    hipError_t init = lib->fn.hipInit(0);
    int n = 0;
    hipError_t counted = lib->fn.hipGetDeviceCount(&n);
    if (counted == hipErrorNoDevice || (counted == hipSuccess && n <= 0)) {
        if (init == hipSuccess)
            return lkv_fail(LKV_UNAVAILABLE, "no HIP device: %s reports none", lib->path);
        char words[128];
        lkv_host_error_text(init, error_name(lib, init), NULL, words, sizeof words);
        return lkv_fail(LKV_UNAVAILABLE, "no HIP device: %s reports none (hipInit: %s)",
                        lib->path, words);
    }
    if (init != hipSuccess || counted != hipSuccess) {
        lkv_hip_check(lib, init != hipSuccess ? init : counted,
                      init != hipSuccess ? "hipInit" : "hipGetDeviceCount");
        return lkv_fail_context(LKV_UNAVAILABLE, "%s", lib->path);
    }
    *out_count = n;
    return LKV_OK;
}

lkv_status lkv_hip_load(lkv_hip_lib *out, int *out_count)
{
    memset(out, 0, sizeof *out);
    const lkv_host_library_search search = {.env = LKV_HIP_LIBRARY_ENV,
                                            .names = lib_names,
                                            .count = sizeof lib_names / sizeof lib_names[0],
                                            .dir_env = "ROCM_PATH"};
    char tried[512] = "";
    out->handle = lkv_host_library_find(&search, out->path, sizeof out->path, tried,
                                        sizeof tried);
    if (!out->handle)
        return lkv_fail(LKV_UNAVAILABLE, "libamdhip64 not found (tried %s): install ROCm (the HIP "
                        "runtime)", tried);
    lkv_status st = resolve(out);
    if (st == LKV_OK)
        st = init_runtime(out, out_count);
    if (st != LKV_OK)
        lkv_hip_unload(out);
    return st;
}

void lkv_hip_unload(lkv_hip_lib *lib)
{
    lkv_host_library_close(lib->handle);
    lib->handle = NULL;
    memset(&lib->fn, 0, sizeof lib->fn);
}
