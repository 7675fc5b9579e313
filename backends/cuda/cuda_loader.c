/* Loading the CUDA driver at run time: lazykv links no CUDA library, so a
 * machine without the NVIDIA driver still runs it, and this backend then
 * says in words why it is unavailable. LAZYKV_CUDA_LIBRARY names another
 * library (the tests' fake drivers). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "error.h"

/* The driver stays mapped after our dlclose: once cuInit has run, libcuda
 * has threads and exit handlers of its own, and the application may use it
 * too, so unmapping it under them would crash later. dlclose still balances
 * every dlopen. */
#ifdef RTLD_NODELETE
#define LKV_CU_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define LKV_CU_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif

void lkv_cu_error_text(const lkv_cu_lib *lib, CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (lib->fn.cuGetErrorName && lib->fn.cuGetErrorName(r, &name) != LKV_CUDA_SUCCESS)
        name = NULL;
    if (lib->fn.cuGetErrorString && lib->fn.cuGetErrorString(r, &text) != LKV_CUDA_SUCCESS)
        text = NULL;
    if (name && text)
        snprintf(buf, len, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "CUresult %d", r);
}

lkv_status lkv_cu_check(const lkv_cu_lib *lib, CUresult r, const char *what)
{
    if (r == LKV_CUDA_SUCCESS)
        return LKV_OK;
    char text[200];
    lkv_cu_error_text(lib, r, text, sizeof text);
    return lkv_fail(r == LKV_CUDA_ERROR_OUT_OF_MEMORY ? LKV_OUT_OF_MEMORY : LKV_DEVICE_ERROR,
                    "cuda: %s: %s", what, text);
}

void lkv_cu_version_text(int version, char *buf, size_t len)
{
    snprintf(buf, len, "CUDA %d.%d", version / 1000, version % 1000 / 10);
}

static const char *library_name(void)
{
    const char *name = getenv("LAZYKV_CUDA_LIBRARY");
    return name && *name ? name : "libcuda.so.1";
}

static lkv_status resolve(lkv_cu_lib *lib, const char *name)
{
    void *entry;
    /* dlsym gives an object pointer; POSIX guarantees it converts to a
     * function pointer, which memcpy does without an aliasing cast. */
#define LKV_CU_REQ(sym, ...)                                                                 \
    entry = dlsym(lib->handle, #sym);                                                        \
    if (!entry)                                                                              \
        return lkv_fail(LKV_UNAVAILABLE, "%s lacks %s: the NVIDIA driver is too old, or the " \
                        "library is not the CUDA driver", name, #sym);                      \
    memcpy(&lib->fn.sym, &entry, sizeof entry);
#define LKV_CU_OPT(sym, ...)                                                                 \
    entry = dlsym(lib->handle, #sym);                                                        \
    memcpy(&lib->fn.sym, &entry, sizeof entry);
#include "cuda_symbols.h"
#undef LKV_CU_REQ
#undef LKV_CU_OPT
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

lkv_status lkv_cu_load(lkv_cu_lib *out_lib)
{
    lkv_cu_lib lib;
    memset(&lib, 0, sizeof lib);
    const char *name = library_name();
    lib.handle = dlopen(name, LKV_CU_DLOPEN_FLAGS);
    if (!lib.handle) {
        const char *err = dlerror();
        return lkv_fail(LKV_UNAVAILABLE, "%s not found (%s): install the NVIDIA driver", name,
                        err ? err : "no reason given");
    }
    lkv_status st = resolve(&lib, name);
    if (st == LKV_OK)
        st = init_driver(&lib);
    if (st != LKV_OK) {
        dlclose(lib.handle);
        return st;
    }
    *out_lib = lib;
    return LKV_OK;
}

void lkv_cu_unload(lkv_cu_lib *lib)
{
    if (lib->handle)
        dlclose(lib->handle);
    memset(lib, 0, sizeof *lib);
}
