/* Loading the CUDA driver at run time: lazykv links no CUDA library, so a
 * machine without the NVIDIA driver still runs it, and this backend then
 * says in words why it is unavailable. LAZYKV_CUDA_LIBRARY names another
 * library (the tests' fake drivers). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "error.h"
#include "host/host_library.h"
#include "host/host_symbols.h"
#include "host/host_text.h"

/* The driver's name and text for `r`, NULL where it has none. */
static void error_words(const lkv_cu_lib *lib, CUresult r, const char **name, const char **text)
{
    *name = *text = NULL;
    if (lib->fn.cuGetErrorName && lib->fn.cuGetErrorName(r, name) != LKV_CUDA_SUCCESS)
        *name = NULL;
    if (lib->fn.cuGetErrorString && lib->fn.cuGetErrorString(r, text) != LKV_CUDA_SUCCESS)
        *text = NULL;
}

void lkv_cu_error_text(const lkv_cu_lib *lib, CUresult r, char *buf, size_t len)
{
    const char *name, *text;
    error_words(lib, r, &name, &text);
    lkv_host_error_text(r, name, text, buf, len);
}

lkv_status lkv_cu_check(const lkv_cu_lib *lib, CUresult r, const char *what)
{
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    const char *name, *text;
    error_words(lib, r, &name, &text);
    return lkv_host_call_failed(r == LKV_CUDA_ERROR_OUT_OF_MEMORY ? LKV_OUT_OF_MEMORY
                                                                  : LKV_DEVICE_ERROR,
                                "cuda", what, r, name, text);
}

void lkv_cu_version_text(int version, char *buf, size_t len)
{
    snprintf(buf, len, "CUDA %d.%d", version / 1000, version % 1000 / 10);
}

static const lkv_host_symbol cu_symbols[] = {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SYMBOL(lkv_cu_fns, group, need, name)
#include "cuda_symbols.h"
#undef LKV_SYM
};

static lkv_status resolve(lkv_cu_lib *lib, const char *name)
{
    const char *missing = lkv_host_resolve(cu_symbols, sizeof cu_symbols / sizeof cu_symbols[0],
                                           "cuda", lkv_host_dlsym, lib->handle, &lib->fn);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "%s lacks %s: the NVIDIA driver is too old, or the "
                        "library is not the CUDA driver", name, missing);
    return LKV_OK;
}

static lkv_status init_driver(lkv_cu_lib *lib)
{
    CUresult r = lib->fn.cuInit(0);
    char text[200];
    if (r != LKV_CUDA_SUCCESS) {
        lkv_cu_error_text(lib, r, text, sizeof text);
        if (r == LKV_CUDA_ERROR_NO_DEVICE)
            return lkv_fail(LKV_UNAVAILABLE, "no CUDA device: cuInit reports %s", text);
        return lkv_fail(LKV_UNAVAILABLE, "the CUDA driver did not start: cuInit: %s", text);
    }
    r = lib->fn.cuDriverGetVersion(&lib->driver_version);
    if (r != LKV_CUDA_SUCCESS) {
        lkv_cu_error_text(lib, r, text, sizeof text);
        return lkv_fail(LKV_UNAVAILABLE, "the CUDA driver did not say its version: "
                        "cuDriverGetVersion: %s", text);
    }
    return LKV_OK;
}

/* The driver stays mapped after we close it (lkv_host_library_find opens
 * with RTLD_NODELETE): once cuInit has run, libcuda has threads and exit
 * handlers of its own, and the application may use it too, so unmapping it
 * under them would crash later. Closing still balances every open. */
lkv_status lkv_cu_load(lkv_cu_lib *out_lib)
{
    static const char *const names[] = {"libcuda.so.1"};
    const lkv_host_library_search search = {.env = "LAZYKV_CUDA_LIBRARY", .names = names,
                                            .count = 1};
    lkv_cu_lib lib;
    memset(&lib, 0, sizeof lib);
    char name[512], tried[512] = "";
    lib.handle = lkv_host_library_find(&search, name, sizeof name, tried, sizeof tried);
    if (!lib.handle)
        return lkv_fail(LKV_UNAVAILABLE, "libcuda not found (tried %s): install the NVIDIA driver",
                        tried);
    lkv_status st = resolve(&lib, name);
    if (st == LKV_OK)
        st = init_driver(&lib);
    if (st != LKV_OK) {
        lkv_host_library_close(lib.handle);
        return st;
    }
    *out_lib = lib;
    return LKV_OK;
}

void lkv_cu_unload(lkv_cu_lib *lib)
{
    lkv_host_library_close(lib->handle);
    memset(lib, 0, sizeof *lib);
}
