/* A fake CUDA driver: a shared library exporting the entry points of
 * backends/cuda/cuda_symbols.h, loaded by the backend in place of
 * libcuda.so.1 (LAZYKV_CUDA_LIBRARY), so the tests can play the machines the
 * backend must cope with and check what it did to the driver. Built several
 * times with different defines (tests/CMakeLists.txt):
 *
 *   FAKE_INIT_RESULT     what cuInit returns (100: CUDA_ERROR_NO_DEVICE)
 *   FAKE_DEVICES         how many devices (device 1 is compute capability 8.6)
 *   FAKE_CC_MAJOR/MINOR  device 0's compute capability
 *   FAKE_DRIVER_VERSION  what cuDriverGetVersion says (12020: CUDA 12.2)
 *   FAKE_LOAD_RESULT     what cuModuleLoadDataEx returns, with a JIT log
 *   FAKE_NAME            device 0's name
 *   FAKE_OMIT_MEMALLOC   leave cuMemAlloc_v2 out, as a driver too old would
 *
 * At run time LKV_FAKE_CUDA_PCI_BUS places the devices (see
 * cuDeviceGetPCIBusId), and LKV_FAKE_CUDA_FAIL=name[=code] makes that one entry point
 * return `code` (default 999, CUDA_ERROR_UNKNOWN), to walk every failure
 * path. Device memory is host memory from malloc, so a buffer the backend
 * forgets to free is also a leak LeakSanitizer reports; copies, memsets and
 * frees are checked against the live allocations.
 *
 * As in the real driver, the context stack is per thread: a call that acts
 * on the current context fails with CUDA_ERROR_INVALID_CONTEXT on a thread
 * that has not pushed one, so a backend entry that forgets to make its
 * context current is caught when it runs on another thread than open. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda.h"

#ifndef FAKE_INIT_RESULT
#define FAKE_INIT_RESULT 0
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 1
#endif
#ifndef FAKE_CC_MAJOR
#define FAKE_CC_MAJOR 9
#endif
#ifndef FAKE_CC_MINOR
#define FAKE_CC_MINOR 0
#endif
#ifndef FAKE_DRIVER_VERSION
#define FAKE_DRIVER_VERSION 13000
#endif
#ifndef FAKE_LOAD_RESULT
#define FAKE_LOAD_RESULT 0
#endif
#ifndef FAKE_NAME
#define FAKE_NAME "Fake H200"
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))
#define ERR_INVALID_VALUE 1
#define ERR_NOT_INITIALIZED 3
#define ERR_INVALID_DEVICE 101
#define ERR_INVALID_CONTEXT 201
#define ERR_NOT_FOUND 500
#define ERR_UNKNOWN 999
#define MAX_LIVE 4096
#define MAX_FUNCTIONS 128

static fake_cuda_state state;
static struct {
    unsigned char *base;
    size_t size;
} live[MAX_LIVE];
static char function_names[MAX_FUNCTIONS][64];
static int function_tokens[MAX_FUNCTIONS]; /* a CUfunction is the address of one */
static int context_token;
static CUdevice context_device; /* the device of the last retained primary context */
static int stream_tokens[64];
static int stream_live[64]; /* created and not destroyed, by token */
static int n_stream_tokens;
static _Thread_local int thread_ctx_depth; /* this thread's pushes not yet popped */

FAKE_EXPORT fake_cuda_state *fake_cuda_get_state(void) { return &state; }

/* The injected result for `name`, or 0. */
static CUresult injected(const char *name)
{
    const char *want = getenv("LKV_FAKE_CUDA_FAIL");
    size_t n = strlen(name);
    if (!want || strncmp(want, name, n) != 0 || (want[n] != '\0' && want[n] != '='))
        return 0;
    return want[n] == '=' ? (CUresult)atoi(want + n + 1) : ERR_UNKNOWN;
}

#define FAKE_ENTER(name)                                                                     \
    do {                                                                                     \
        CUresult fake_r_ = injected(name);                                                   \
        if (fake_r_)                                                                         \
            return fake_r_;                                                                  \
        if (strcmp(name, "cuInit") != 0 && strncmp(name, "cuGetError", 10) != 0 &&         \
            strcmp(name, "cuDriverGetVersion") != 0 && state.inits == 0)                     \
            return ERR_NOT_INITIALIZED;                                                      \
    } while (0)

/* For the calls that act on the current context: the calling thread's. */
#define FAKE_NEEDS_CONTEXT()                                                                 \
    do {                                                                                     \
        if (thread_ctx_depth < 1) {                                                          \
            state.without_context++;                                                         \
            return ERR_INVALID_CONTEXT;                                                      \
        }                                                                                    \
    } while (0)

static int find_live(CUdeviceptr p, size_t bytes)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        uintptr_t base = (uintptr_t)live[i].base;
        if (live[i].base && p >= base && p - base <= live[i].size &&
            bytes <= live[i].size - (p - base))
            return i;
    }
    state.bad_addresses++;
    return -1;
}

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    FAKE_ENTER("cuInit");
    if (flags != 0)
        return ERR_INVALID_VALUE;
    if (FAKE_INIT_RESULT != 0)
        return FAKE_INIT_RESULT;
    state.inits++;
    return 0;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *version)
{
    FAKE_ENTER("cuDriverGetVersion");
    *version = FAKE_DRIVER_VERSION;
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
    FAKE_ENTER("cuDeviceGetCount");
    *count = FAKE_DEVICES;
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    FAKE_ENTER("cuDeviceGet");
    if (ordinal < 0 || ordinal >= FAKE_DEVICES)
        return ERR_INVALID_DEVICE;
    *dev = ordinal;
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetName");
    if (dev < 0 || dev >= FAKE_DEVICES || len < 1)
        return ERR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", dev == 0 ? FAKE_NAME : "Fake RTX A6000");
    return 0;
}

/* Device d sits on PCI bus LKV_FAKE_CUDA_PCI_BUS (hex, default 17) + d,
 * written with the 8-digit domain some drivers use. */
FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetPCIBusId");
    if (dev < 0 || dev >= FAKE_DEVICES || len < 1)
        return ERR_INVALID_VALUE;
    const char *bus = getenv("LKV_FAKE_CUDA_PCI_BUS");
    snprintf(buf, (size_t)len, "00000000:%02X:00.0", (unsigned)(bus ? strtol(bus, NULL, 16) : 0x17) + (unsigned)dev);
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetAttribute");
    if (dev < 0 || dev >= FAKE_DEVICES)
        return ERR_INVALID_DEVICE;
    switch (attr) {
    case LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; return 0;
    case LKV_CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; return 0;
    case LKV_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = dev == 0 ? 132 : 84; return 0;
    case LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = dev == 0 ? FAKE_CC_MAJOR : 8;
        return 0;
    case LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = dev == 0 ? FAKE_CC_MINOR : 6;
        return 0;
    default: return ERR_INVALID_VALUE;
    }
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    FAKE_ENTER("cuDeviceTotalMem_v2");
    if (dev < 0 || dev >= FAKE_DEVICES)
        return ERR_INVALID_DEVICE;
    *bytes = (size_t)(dev == 0 ? 143771 : 48676) << 20;
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetUuid_v2");
    if (dev < 0 || dev >= FAKE_DEVICES)
        return ERR_INVALID_DEVICE;
    for (int i = 0; i < 16; i++)
        uuid->bytes[i] = (char)(0xa0 + i + 0x10 * dev);
    return 0;
}

FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRetain");
    if (dev < 0 || dev >= FAKE_DEVICES)
        return ERR_INVALID_DEVICE;
    state.retains++;
    context_device = dev;
    *ctx = (CUcontext)(void *)&context_token;
    return 0;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRelease_v2");
    if (dev < 0 || dev >= FAKE_DEVICES || state.retains < 1)
        return ERR_INVALID_CONTEXT;
    state.retains--;
    return 0;
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    FAKE_ENTER("cuCtxPushCurrent_v2");
    if ((void *)ctx != (void *)&context_token || state.retains < 1)
        return ERR_INVALID_CONTEXT;
    thread_ctx_depth++;
    state.ctx_depth++;
    return 0;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    FAKE_ENTER("cuCtxPopCurrent_v2");
    FAKE_NEEDS_CONTEXT();
    thread_ctx_depth--;
    state.ctx_depth--;
    if (ctx)
        *ctx = (CUcontext)(void *)&context_token;
    return 0;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
    FAKE_ENTER("cuCtxSynchronize");
    FAKE_NEEDS_CONTEXT();
    return 0;
}

/* Writes the JIT's error log into the buffer the options give, as the
 * driver does when the load fails. */
static void write_jit_log(unsigned int n, const CUjit_option *opts, void **vals)
{
    char *buf = NULL;
    size_t size = 0;
    for (unsigned int i = 0; i < n; i++) {
        if (opts[i] == LKV_CU_JIT_ERROR_LOG_BUFFER)
            buf = vals[i];
        else if (opts[i] == LKV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)vals[i];
    }
    state.jit_log_given = buf && size;
    if (buf && size)
        snprintf(buf, size,
                 "ptxas application ptx input, line 9; fatal   : Unsupported .version 9.0; "
                 "current version is '8.8'\nptxas fatal   : Ptx assembly aborted\n");
}

FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                        CUjit_option *opts, void **vals)
{
    FAKE_ENTER("cuModuleLoadDataEx");
    FAKE_NEEDS_CONTEXT();
    const unsigned char *b = image;
    /* what the backend hands over must be a fatbin (magic 0xBA55ED50) */
    if (!b || b[0] != 0x50 || b[1] != 0xed || b[2] != 0x55 || b[3] != 0xba)
        return LKV_CUDA_ERROR_INVALID_IMAGE;
    write_jit_log(n, opts, vals);
    if (FAKE_LOAD_RESULT != 0)
        return FAKE_LOAD_RESULT;
    state.modules++;
    *module = (CUmodule)(void *)&state.modules;
    return 0;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule module)
{
    FAKE_ENTER("cuModuleUnload");
    FAKE_NEEDS_CONTEXT();
    if ((void *)module != (void *)&state.modules || state.modules < 1)
        return ERR_INVALID_VALUE;
    state.modules--;
    return 0;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name)
{
    FAKE_ENTER("cuModuleGetFunction");
    FAKE_NEEDS_CONTEXT();
    if ((void *)module != (void *)&state.modules || state.modules < 1 || !name)
        return ERR_INVALID_VALUE;
    for (int i = 0; i < MAX_FUNCTIONS; i++) {
        if (function_names[i][0] && strcmp(function_names[i], name) != 0)
            continue;
        if (!function_names[i][0])
            snprintf(function_names[i], sizeof function_names[i], "%s", name);
        *fn = (CUfunction)(void *)&function_tokens[i];
        state.functions++;
        return 0;
    }
    return ERR_NOT_FOUND;
}

#ifndef FAKE_OMIT_MEMALLOC
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    FAKE_ENTER("cuMemAlloc_v2");
    FAKE_NEEDS_CONTEXT();
    if (bytes == 0)
        return ERR_INVALID_VALUE; /* as the real driver */
    for (int i = 0; i < MAX_LIVE; i++) {
        if (live[i].base)
            continue;
        live[i].base = malloc(bytes);
        if (!live[i].base)
            return LKV_CUDA_ERROR_OUT_OF_MEMORY;
        live[i].size = bytes;
        memset(live[i].base, 0xcd, bytes); /* new device memory is not zero */
        state.allocations++;
        *p = (CUdeviceptr)(uintptr_t)live[i].base;
        return 0;
    }
    return LKV_CUDA_ERROR_OUT_OF_MEMORY;
}
#endif

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    FAKE_ENTER("cuMemFree_v2");
    FAKE_NEEDS_CONTEXT();
    int i = find_live(p, 0);
    if (i >= 0 && (uintptr_t)live[i].base != p) {
        state.bad_addresses++;
        i = -1;
    }
    if (i < 0)
        return ERR_INVALID_VALUE;
    free(live[i].base);
    live[i].base = NULL;
    state.allocations--;
    return 0;
}

FAKE_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char value, size_t bytes)
{
    FAKE_ENTER("cuMemsetD8_v2");
    FAKE_NEEDS_CONTEXT();
    if (find_live(p, bytes) < 0)
        return ERR_INVALID_VALUE;
    memset((void *)(uintptr_t)p, value, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyHtoD_v2");
    FAKE_NEEDS_CONTEXT();
    if (find_live(dst, bytes) < 0)
        return ERR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyDtoH_v2");
    FAKE_NEEDS_CONTEXT();
    if (find_live(src, bytes) < 0)
        return ERR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyDtoD_v2");
    FAKE_NEEDS_CONTEXT();
    if (find_live(dst, bytes) < 0 || find_live(src, bytes) < 0)
        return ERR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    FAKE_ENTER("cuCtxGetDevice");
    FAKE_NEEDS_CONTEXT();
    *dev = context_device;
    return 0;
}

/* The live stream `s` is, or -1 (the legacy default stream, an engine's,
 * one destroyed). */
static int live_stream(CUstream s)
{
    const int *t = (const int *)(const void *)s;
    if (t < stream_tokens || t >= stream_tokens + 64)
        return -1;
    return stream_live[t - stream_tokens] ? (int)(t - stream_tokens) : -1;
}

/* Work on a stream lazykv did not create (or destroyed), unless the test
 * lent it one. */
static void check_stream(CUstream s)
{
    if (live_stream(s) < 0 && !getenv("LKV_FAKE_CUDA_ANY_STREAM"))
        state.foreign_streams++;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    FAKE_ENTER("cuStreamCreate");
    FAKE_NEEDS_CONTEXT();
    if (flags > 1)
        return ERR_INVALID_VALUE;
    int token = n_stream_tokens++ % 64;
    stream_live[token] = 1;
    *s = (CUstream)(void *)&stream_tokens[token];
    state.created_stream = *s;
    state.created_flags = flags;
    state.streams++;
    return 0;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    FAKE_ENTER("cuStreamDestroy_v2");
    FAKE_NEEDS_CONTEXT();
    int token = live_stream(s);
    if (token < 0 || state.streams < 1)
        return ERR_INVALID_VALUE;
    stream_live[token] = 0;
    state.streams--;
    return 0;
}

/* Work runs at once, so the event has passed: only counted. */
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    FAKE_ENTER("cuStreamWaitEvent");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    if (!e || flags != 0)
        return ERR_INVALID_VALUE;
    state.stream_waits++;
    state.waiting_stream = s;
    state.waited_event = e;
    return 0;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    FAKE_ENTER("cuStreamSynchronize");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    state.stream_syncs++;
    return 0;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    FAKE_ENTER("cuEventCreate");
    FAKE_NEEDS_CONTEXT();
    (void)flags;
    *e = malloc(16);
    if (!*e)
        return LKV_CUDA_ERROR_OUT_OF_MEMORY;
    state.events++;
    return 0;
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    FAKE_ENTER("cuEventDestroy_v2");
    FAKE_NEEDS_CONTEXT();
    if (!e)
        return ERR_INVALID_VALUE;
    free(e);
    state.events--;
    return 0;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    FAKE_ENTER("cuEventRecord");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    return e ? 0 : ERR_INVALID_VALUE;
}

/* Work runs at once, so every event has passed. */
FAKE_EXPORT CUresult cuEventQuery(CUevent e)
{
    FAKE_ENTER("cuEventQuery");
    FAKE_NEEDS_CONTEXT();
    return e ? 0 : ERR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    FAKE_ENTER("cuEventSynchronize");
    FAKE_NEEDS_CONTEXT();
    state.stream_syncs++;
    return e ? 0 : ERR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    FAKE_ENTER("cuMemHostAlloc");
    FAKE_NEEDS_CONTEXT();
    (void)flags;
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return LKV_CUDA_ERROR_OUT_OF_MEMORY;
    state.host_allocations++;
    return 0;
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p)
{
    FAKE_ENTER("cuMemFreeHost");
    FAKE_NEEDS_CONTEXT();
    if (!p)
        return ERR_INVALID_VALUE;
    free(p);
    state.host_allocations--;
    return 0;
}

FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t bytes, CUstream s)
{
    FAKE_ENTER("cuMemsetD8Async");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    if (find_live(p, bytes) < 0)
        return ERR_INVALID_VALUE;
    memset((void *)(uintptr_t)p, value, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                                          CUstream s)
{
    FAKE_ENTER("cuMemcpyHtoDAsync_v2");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    if (find_live(dst, bytes) < 0)
        return ERR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    FAKE_ENTER("cuMemcpyDtoHAsync_v2");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    if (find_live(src, bytes) < 0)
        return ERR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                          CUstream s)
{
    FAKE_ENTER("cuMemcpyDtoDAsync_v2");
    FAKE_NEEDS_CONTEXT();
    check_stream(s);
    if (find_live(dst, bytes) < 0 || find_live(src, bytes) < 0)
        return ERR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return 0;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared_bytes, CUstream stream,
                                    void **params, void **extra)
{
    FAKE_ENTER("cuLaunchKernel");
    FAKE_NEEDS_CONTEXT();
    (void)params;
    int i = (int)((int *)(void *)fn - function_tokens);
    if (i < 0 || i >= MAX_FUNCTIONS || !function_names[i][0])
        return ERR_INVALID_VALUE;
    check_stream(stream);
    state.launches++;
    snprintf(state.last_kernel, sizeof state.last_kernel, "%s", function_names[i]);
    state.grid[0] = gx, state.grid[1] = gy, state.grid[2] = gz;
    state.block[0] = bx, state.block[1] = by, state.block[2] = bz;
    state.shared_bytes = shared_bytes;
    state.stream = stream;
    state.extra_given = extra != NULL;
    return 0;
}

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult r)
{
    for (int i = 0; i < (int)(sizeof errors / sizeof errors[0]); i++)
        if (errors[i].code == r)
            return i;
    return -1;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char **out)
{
    FAKE_ENTER("cuGetErrorName");
    int i = error_index(r);
    *out = i < 0 ? NULL : errors[i].name;
    return i < 0 ? ERR_INVALID_VALUE : 0;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult r, const char **out)
{
    FAKE_ENTER("cuGetErrorString");
    int i = error_index(r);
    *out = i < 0 ? NULL : errors[i].text;
    return i < 0 ? ERR_INVALID_VALUE : 0;
}
