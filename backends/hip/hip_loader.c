/* Loading the HIP runtime at run time: libamdhip64 of ROCm 6, else ROCm 5,
 * else the unversioned development name; the entry points of
 * hip_symbols.h; hipInit; at least one device. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hip_internal.h"

static const char *const lib_names[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
#define LIB_NAME_COUNT (sizeof lib_names / sizeof lib_names[0])

/* RTLD_NODELETE: the HIP runtime keeps threads and exit-time teardown of its
 * own, which must not outlive its code, and memory its globals hold must
 * stay reachable for leak checkers. Closing only drops the reference. */
static void *open_lib(const char *name)
{
    return dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}

static void append(char *buf, size_t cap, const char *text)
{
    size_t used = strlen(buf);
    if (used < cap)
        snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", text);
}

/* The first library that loads, by the name it loaded under; `tried` lists
 * the names otherwise. $ROCM_PATH/lib is searched after the loader's path,
 * where ROCm's packages do not register it. */
static void *open_runtime(char *path, size_t path_cap, char *tried, size_t tried_cap)
{
    tried[0] = '\0';
    const char *env = getenv(LKV_HIP_LIBRARY_ENV);
    if (env && *env) {
        snprintf(path, path_cap, "%s", env);
        void *h = open_lib(env);
        if (!h)
            snprintf(tried, tried_cap, "%s from %s: %s", env, LKV_HIP_LIBRARY_ENV, dlerror());
        return h;
    }
    for (size_t i = 0; i < LIB_NAME_COUNT; i++) {
        snprintf(path, path_cap, "%s", lib_names[i]);
        void *h = open_lib(path);
        if (h)
            return h;
        append(tried, tried_cap, path);
    }
    const char *rocm = getenv("ROCM_PATH");
    for (size_t i = 0; rocm && *rocm && i < LIB_NAME_COUNT; i++) {
        snprintf(path, path_cap, "%s/lib/%s", rocm, lib_names[i]);
        void *h = open_lib(path);
        if (h)
            return h;
        append(tried, tried_cap, path);
    }
    return NULL;
}

/* dlsym's object pointer stored into a function pointer: POSIX guarantees
 * the conversion, memcpy does it without a cast ISO C frowns upon. */
#define RESOLVE(handle, field, name)                                                         \
    do {                                                                                     \
        void *sym_ = dlsym((handle), (name));                                                \
        memcpy(&(field), &sym_, sizeof sym_);                                                \
    } while (0)

static lkv_status resolve(lkv_hip_lib *lib)
{
#define LKV_HIP_REQ(ret, name, params)                                                      \
    RESOLVE(lib->handle, lib->fn.name, #name);                                               \
    if (!lib->fn.name)                                                                       \
        return lkv_fail(LKV_UNAVAILABLE, "%s lacks %s: not a HIP runtime lazykv can use "    \
                        "(ROCm 5 or newer is needed)", lib->path, #name);
#define LKV_HIP_OPT(ret, name, params) RESOLVE(lib->handle, lib->fn.name, #name);
#include "hip_symbols.h"
    if (!lib->fn.hipGetDevicePropertiesR0600 && !lib->fn.hipGetDeviceProperties)
        return lkv_fail(LKV_UNAVAILABLE, "%s has neither hipGetDevicePropertiesR0600 nor "
                        "hipGetDeviceProperties: not a HIP runtime lazykv can use", lib->path);
    return LKV_OK;
}

static const char *error_name(const lkv_hip_lib *lib, hipError_t err)
{
    const char *name = lib->fn.hipGetErrorName ? lib->fn.hipGetErrorName(err) : NULL;
    return name ? name : "unnamed error";
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
    return lkv_fail(st, "hip: %s failed: %s (%s, error %d)", what, text ? text : "no description",
                    error_name(lib, err), (int)err);
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
        return lkv_fail(LKV_UNAVAILABLE, "no HIP device: %s reports none (hipInit: %s)",
                        lib->path, error_name(lib, init));
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
    char tried[512];
    out->handle = open_runtime(out->path, sizeof out->path, tried, sizeof tried);
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
    if (lib->handle)
        dlclose(lib->handle);
    lib->handle = NULL;
    memset(&lib->fn, 0, sizeof lib->fn);
}
