/* A stand-in for libamdhip64, for the HIP backend's tests on machines with
 * no AMD GPU: the entry points of backends/hip/hip_symbols.h over host
 * memory, with a strict hipModuleLoadData that takes only a single AMDGPU
 * code object built for the device (not a bundle, not another target's).
 *
 * Built twice (tests/CMakeLists.txt):
 *   FAKE_HIP_ROCM=6  hipGetDevicePropertiesR0600 and the plain call, no hiprtc
 *   FAKE_HIP_ROCM=5  only the plain (ROCm 5 layout) call, hiprtc inside
 * Read at every call, so one process can change them between opens:
 *   FAKE_HIP_DEVICES  device count (default 1)
 *   FAKE_HIP_ARCH     gcnArchName (default "gfx90a:sramecc+:xnack-")
 *   FAKE_HIP_FAIL     the name of one entry point that fails
 *   FAKE_HIPRTC_FAIL  hiprtcCompileProgram fails with a log
 *   FAKE_HIP_PCI_BUS  the PCI bus of device 0, hex (default 23)
 * Test hooks (fake_hip_*) report what the backend did.
 *
 * The current device is per thread, as in HIP (0 for a thread that never
 * chose one). Every allocation and module remembers the device it was made
 * on, and a call on it from a thread whose current device is another one
 * fails with hipErrorInvalidDevice and is counted ("wrong_device"): stricter
 * than the runtime, so an entry that forgets to select its device is caught
 * when it runs on another thread than open.
 *
 * Streams, events and page-locked host memory count as live like
 * allocations; work queued on a stream runs at once, so every event has
 * passed. The last stream a launch named is fake_hip_last_stream(). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu_elf.h"

#ifndef FAKE_HIP_ROCM
#error "define FAKE_HIP_ROCM (5 or 6)"
#endif

enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    NO_BINARY_FOR_GPU = 209,
    NOT_FOUND = 500,
};

/* Layouts as hip_api.h documents them: total size, gcnArchName offset. */
#define R0000_SIZE 792
#define R0000_ARCH 396
#define R0600_SIZE 1472
#define R0600_ARCH 1160

static atomic_int live;      /* allocations, modules and programs not yet released */
static _Thread_local int current = -1; /* this thread's hipSetDevice, -1 before any */
static size_t loaded_size;
static uint64_t loaded_hash;
static unsigned loaded_mach;
static const char *last_kernel;
static unsigned last_grid[3], last_block;
static const void *last_stream;

#define COUNTED(X)                                                                           \
    X(r0600) X(props) X(rtc_compile) X(launch) X(module_load) X(wrong_device) X(bad_address)     \
    X(stream_wait)
#define DECLARE(name) static atomic_int count_##name;
COUNTED(DECLARE)

static int devices(void)
{
    const char *v = getenv("FAKE_HIP_DEVICES");
    return v ? atoi(v) : 1;
}

static const char *arch(void)
{
    const char *v = getenv("FAKE_HIP_ARCH");
    return v && *v ? v : "gfx90a:sramecc+:xnack-";
}

static int failing(const char *fn)
{
    const char *v = getenv("FAKE_HIP_FAIL");
    return v && strcmp(v, fn) == 0;
}

static int valid_device(int d)
{
    return d >= 0 && d < devices();
}

int hipInit(unsigned int flags)
{
    (void)flags;
    return failing("hipInit") ? INVALID_VALUE : devices() > 0 ? OK : NO_DEVICE;
}

int hipGetDeviceCount(int *count)
{
    *count = devices() > 0 ? devices() : 0;
    return *count ? OK : NO_DEVICE;
}

int hipDeviceGet(int *device, int ordinal)
{
    if (!valid_device(ordinal))
        return INVALID_DEVICE;
    *device = ordinal;
    return OK;
}

int hipDeviceGetName(char *name, int len, int device)
{
    if (failing("hipDeviceGetName") || !valid_device(device) || len < 1)
        return INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake AMD %.*s", (int)strcspn(arch(), ":"), arch());
    return OK;
}

/* Device d sits on PCI bus FAKE_HIP_PCI_BUS (hex, default 23) + d. */
int hipDeviceGetPCIBusId(char *buf, int len, int device)
{
    if (failing("hipDeviceGetPCIBusId") || !valid_device(device) || len < 1)
        return INVALID_VALUE;
    const char *bus = getenv("FAKE_HIP_PCI_BUS");
    snprintf(buf, (size_t)len, "0000:%02x:00.0", (unsigned)(bus ? strtol(bus, NULL, 16) : 0x23) + (unsigned)device);
    return OK;
}

/* wave64 on GCN/CDNA (gfx9xx), wave32 on RDNA (gfx10xx, gfx11xx) */
static int warp(void)
{
    return strcspn(arch(), ":") == 6 && strncmp(arch(), "gfx9", 4) == 0 ? 64 : 32;
}

int hipDeviceGetAttribute(int *value, int attr, int device)
{
    if (failing("hipDeviceGetAttribute") || !valid_device(device))
        return INVALID_VALUE;
    switch (attr) {
    case 30: /* MaxGridDimY */
    case 31: /* MaxGridDimZ */
        *value = 65535;
        return OK;
    case 56: /* MaxThreadsPerBlock */
        *value = 1024;
        return OK;
    case 63: /* MultiprocessorCount */
        *value = 104;
        return OK;
    case 87: /* WarpSize */
        *value = warp();
        return OK;
    }
    return INVALID_VALUE;
}

int hipDeviceTotalMem(size_t *bytes, int device)
{
    if (!valid_device(device))
        return INVALID_DEVICE;
    *bytes = (size_t)64 << 30;
    return OK;
}

int hipDeviceGetUuid(char *uuid16, int device)
{
    if (!valid_device(device))
        return INVALID_DEVICE;
    for (int i = 0; i < 16; i++)
        uuid16[i] = (char)(0x10 + i);
    return OK;
}

int hipDriverGetVersion(int *v)
{
    *v = FAKE_HIP_ROCM == 6 ? 60241133 : 50221153;
    return OK;
}

int hipRuntimeGetVersion(int *v)
{
    return hipDriverGetVersion(v);
}

static int fill_props(void *props, int device, size_t size, size_t arch_at)
{
    if (!valid_device(device))
        return INVALID_DEVICE;
    memset(props, 0, size);
    snprintf(props, 256, "Fake AMD device");
    snprintf((char *)props + arch_at, 256, "%s", arch());
    return OK;
}

#if FAKE_HIP_ROCM >= 6
int hipGetDevicePropertiesR0600(void *props, int device)
{
    atomic_fetch_add(&count_r0600, 1);
    if (failing("hipGetDevicePropertiesR0600"))
        return INVALID_VALUE;
    return fill_props(props, device, R0600_SIZE, R0600_ARCH);
}
#endif

int hipGetDeviceProperties(void *props, int device)
{
    atomic_fetch_add(&count_props, 1);
    if (failing("hipGetDeviceProperties"))
        return INVALID_VALUE;
    return fill_props(props, device, R0000_SIZE, R0000_ARCH);
}

int hipSetDevice(int device)
{
    if (failing("hipSetDevice") || !valid_device(device))
        return INVALID_DEVICE;
    current = device;
    return OK;
}

/* The calling thread's device: HIP's default is device 0. */
static int thread_device(void)
{
    return current < 0 ? 0 : current;
}

int hipGetDevice(int *device)
{
    if (failing("hipGetDevice"))
        return INVALID_VALUE;
    *device = thread_device();
    return OK;
}

/* Whether something made on `device` may be used from this thread. */
static int on_this_device(int device)
{
    if (device == thread_device())
        return 1;
    atomic_fetch_add(&count_wrong_device, 1);
    return 0;
}

#define MAX_ALLOCS 4096
static struct {
    unsigned char *base;
    size_t size;
    int device;
} allocs[MAX_ALLOCS];
static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;

/* OK when [p, p + bytes) lies in one live allocation of this thread's
 * device, with its index in *out (when wanted). */
static int check_range(const void *p, size_t bytes, int *out)
{
    uintptr_t at = (uintptr_t)p;
    int found = -1;
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS && found < 0; i++) {
        uintptr_t base = (uintptr_t)allocs[i].base;
        if (allocs[i].base && at >= base && at - base <= allocs[i].size &&
            bytes <= allocs[i].size - (at - base))
            found = i;
    }
    int device = found >= 0 ? allocs[found].device : -1;
    pthread_mutex_unlock(&allocs_lock);
    if (found < 0) {
        atomic_fetch_add(&count_bad_address, 1);
        return INVALID_VALUE;
    }
    if (!on_this_device(device))
        return INVALID_DEVICE;
    if (out)
        *out = found;
    return OK;
}

int hipMalloc(void **ptr, size_t bytes)
{
    if (failing("hipMalloc"))
        return OUT_OF_MEMORY;
    unsigned char *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        return OUT_OF_MEMORY;
    int stored = 0;
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS && !stored; i++)
        if (!allocs[i].base) {
            allocs[i].base = p;
            allocs[i].size = bytes;
            allocs[i].device = thread_device();
            stored = 1;
        }
    pthread_mutex_unlock(&allocs_lock);
    if (!stored) {
        free(p);
        return OUT_OF_MEMORY;
    }
    atomic_fetch_add(&live, 1);
    *ptr = p;
    return OK;
}

int hipFree(void *ptr)
{
    if (!ptr)
        return OK;
    int i = -1;
    int e = check_range(ptr, 0, &i);
    if (e != OK)
        return e;
    pthread_mutex_lock(&allocs_lock);
    int exact = allocs[i].base == ptr;
    if (exact)
        allocs[i].base = NULL;
    pthread_mutex_unlock(&allocs_lock);
    if (!exact) {
        atomic_fetch_add(&count_bad_address, 1);
        return INVALID_VALUE;
    }
    atomic_fetch_sub(&live, 1);
    free(ptr);
    return OK;
}

int hipMemset(void *dst, int value, size_t bytes)
{
    int e = check_range(dst, bytes, NULL);
    if (e == OK)
        memset(dst, value, bytes);
    return e;
}

int hipMemcpyHtoD(void *dst, void *src, size_t bytes)
{
    int e = check_range(dst, bytes, NULL);
    if (e == OK)
        memcpy(dst, src, bytes);
    return e;
}

int hipMemcpyDtoH(void *dst, void *src, size_t bytes)
{
    int e = check_range(src, bytes, NULL);
    if (e == OK)
        memcpy(dst, src, bytes);
    return e;
}

int hipMemcpyDtoD(void *dst, void *src, size_t bytes)
{
    int e = check_range(dst, bytes, NULL);
    if (e == OK)
        e = check_range(src, bytes, NULL);
    if (e == OK)
        memmove(dst, src, bytes);
    return e;
}

int hipHostMalloc(void **ptr, size_t bytes, unsigned int flags)
{
    (void)flags;
    if (failing("hipHostMalloc"))
        return OUT_OF_MEMORY;
    *ptr = malloc(bytes ? bytes : 1);
    if (!*ptr)
        return OUT_OF_MEMORY;
    atomic_fetch_add(&live, 1);
    return OK;
}

int hipHostFree(void *ptr)
{
    if (!ptr)
        return OK;
    atomic_fetch_sub(&live, 1);
    free(ptr);
    return OK;
}

int hipMemsetAsync(void *dst, int value, size_t bytes, void *stream)
{
    (void)stream;
    return failing("hipMemsetAsync") ? INVALID_VALUE : hipMemset(dst, value, bytes);
}

int hipMemcpyHtoDAsync(void *dst, void *src, size_t bytes, void *stream)
{
    (void)stream;
    return failing("hipMemcpyHtoDAsync") ? INVALID_VALUE : hipMemcpyHtoD(dst, src, bytes);
}

int hipMemcpyDtoHAsync(void *dst, void *src, size_t bytes, void *stream)
{
    (void)stream;
    return failing("hipMemcpyDtoHAsync") ? INVALID_VALUE : hipMemcpyDtoH(dst, src, bytes);
}

int hipMemcpyDtoDAsync(void *dst, void *src, size_t bytes, void *stream)
{
    (void)stream;
    return failing("hipMemcpyDtoDAsync") ? INVALID_VALUE : hipMemcpyDtoD(dst, src, bytes);
}

/* Streams and events are live tokens; work on them runs at once. */
static int make_token(void **out, const char *fn)
{
    if (failing(fn))
        return INVALID_VALUE;
    *out = malloc(16);
    if (!*out)
        return OUT_OF_MEMORY;
    atomic_fetch_add(&live, 1);
    return OK;
}

static int drop_token(void *token)
{
    if (!token)
        return INVALID_VALUE;
    atomic_fetch_sub(&live, 1);
    free(token);
    return OK;
}

int hipStreamCreate(void **stream)
{
    return make_token(stream, "hipStreamCreate");
}

int hipStreamDestroy(void *stream)
{
    return drop_token(stream);
}

int hipStreamCreateWithFlags(void **stream, unsigned int flags)
{
    if (flags > 1) /* hipStreamDefault, hipStreamNonBlocking */
        return INVALID_VALUE;
    return make_token(stream, "hipStreamCreateWithFlags");
}

/* Work runs at once, so the event has passed: only counted. */
int hipStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    (void)stream;
    if (!event || flags != 0 || failing("hipStreamWaitEvent"))
        return INVALID_VALUE;
    atomic_fetch_add(&count_stream_wait, 1);
    return OK;
}

int hipStreamSynchronize(void *stream)
{
    (void)stream;
    return failing("hipStreamSynchronize") ? INVALID_VALUE : OK;
}

int hipEventCreateWithFlags(void **event, unsigned int flags)
{
    (void)flags;
    return make_token(event, "hipEventCreateWithFlags");
}

int hipEventDestroy(void *event)
{
    return drop_token(event);
}

int hipEventRecord(void *event, void *stream)
{
    (void)stream;
    return event && !failing("hipEventRecord") ? OK : INVALID_VALUE;
}

int hipEventQuery(void *event)
{
    return event ? OK : INVALID_VALUE;
}

int hipEventSynchronize(void *event)
{
    return event ? OK : INVALID_VALUE;
}

typedef struct fake_module {
    const unsigned char *image;
    size_t size;
    int device;
    struct fake_module *next; /* the live modules, for a launch to find its own */
} fake_module;

static fake_module *modules;

/* One ELF code object for the current device's processor, sized by its
 * section header table (which clang puts last). */
int hipModuleLoadData(void **module, const void *image)
{
    atomic_fetch_add(&count_module_load, 1);
    const unsigned char *p = image;
    if (failing("hipModuleLoadData") || current < 0)
        return INVALID_VALUE;
    if (memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || rd(p + 18, 2) != EM_AMDGPU)
        return INVALID_IMAGE; /* a bundle, or not code at all */
    size_t size = (size_t)(rd(p + 0x28, 8) + rd(p + 0x3a, 2) * rd(p + 0x3c, 2));
    unsigned mach = (unsigned)rd(p + 0x30, 4) & 0xff;
    if (mach != mach_of(arch()))
        return NO_BINARY_FOR_GPU;
    fake_module *m = malloc(sizeof *m);
    if (!m)
        return OUT_OF_MEMORY;
    m->image = p;
    m->size = size;
    m->device = thread_device();
    pthread_mutex_lock(&allocs_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&allocs_lock);
    loaded_size = size;
    loaded_mach = mach;
    loaded_hash = fnv1a(p, size);
    atomic_fetch_add(&live, 1);
    *module = m;
    return OK;
}

int hipModuleUnload(void *module)
{
    fake_module *m = module;
    if (!on_this_device(m->device))
        return INVALID_DEVICE;
    pthread_mutex_lock(&allocs_lock);
    for (fake_module **at = &modules; *at; at = &(*at)->next)
        if (*at == m) {
            *at = m->next;
            break;
        }
    pthread_mutex_unlock(&allocs_lock);
    atomic_fetch_sub(&live, 1);
    free(module);
    return OK;
}

/* The live module whose image holds `fn` (a name in its string table). */
static const fake_module *module_of(const void *fn)
{
    const unsigned char *p = fn;
    const fake_module *found = NULL;
    pthread_mutex_lock(&allocs_lock);
    for (const fake_module *m = modules; m && !found; m = m->next)
        if (p >= m->image && p < m->image + m->size)
            found = m;
    pthread_mutex_unlock(&allocs_lock);
    return found;
}

/* The function handle points at the name in the image's string table, so
 * a launch can say which kernel it ran. */
int hipModuleGetFunction(void **fn, void *module, const char *name)
{
    const fake_module *m = module;
    if (failing("hipModuleGetFunction"))
        return NOT_FOUND;
    if (!on_this_device(m->device))
        return INVALID_DEVICE;
    size_t n = strlen(name) + 1; /* with its NUL, as a symbol name */
    for (size_t i = 0; i + n <= m->size; i++)
        if (memcmp(m->image + i, name, n) == 0 && (i == 0 || m->image[i - 1] == '\0')) {
            *fn = (void *)(m->image + i);
            return OK;
        }
    return NOT_FOUND;
}

int hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                          void **extra)
{
    (void)shared;
    (void)params;
    (void)extra;
    if (failing("hipModuleLaunchKernel") || by != 1 || bz != 1)
        return INVALID_VALUE;
    const fake_module *m = module_of(fn);
    if (!m)
        return INVALID_VALUE;
    if (!on_this_device(m->device))
        return INVALID_DEVICE;
    atomic_fetch_add(&count_launch, 1);
    last_kernel = fn;
    last_grid[0] = gx;
    last_grid[1] = gy;
    last_grid[2] = gz;
    last_block = bx;
    last_stream = stream;
    return OK;
}

int hipDeviceSynchronize(void)
{
    return OK;
}

const char *hipGetErrorName(int e)
{
    switch (e) {
    case OK: return "hipSuccess";
    case INVALID_VALUE: return "hipErrorInvalidValue";
    case OUT_OF_MEMORY: return "hipErrorOutOfMemory";
    case NO_DEVICE: return "hipErrorNoDevice";
    case INVALID_DEVICE: return "hipErrorInvalidDevice";
    case INVALID_IMAGE: return "hipErrorInvalidImage";
    case NO_BINARY_FOR_GPU: return "hipErrorNoBinaryForGpu";
    case NOT_FOUND: return "hipErrorNotFound";
    }
    return "hipErrorUnknown";
}

const char *hipGetErrorString(int e)
{
    return e == OK ? "no error" : "fake failure";
}

#if FAKE_HIP_ROCM == 5
/* hiprtc as ROCm 5 ships it, inside libamdhip64. The "code object" is an
 * ELF header for the requested processor followed by the source's kernel
 * names, which is all the fake module loader looks at. */
typedef struct fake_program {
    char *source;
    char log[256];
    unsigned char *code;
    size_t size;
} fake_program;

int hiprtcCreateProgram(void **prog, const char *src, const char *name, int num_headers,
                        const char **headers, const char **include_names)
{
    (void)name;
    (void)headers;
    (void)include_names;
    if (num_headers != 0)
        return 3; /* HIPRTC_ERROR_INVALID_INPUT */
    fake_program *p = calloc(1, sizeof *p);
    if (!p || !(p->source = strdup(src))) {
        free(p);
        return 1;
    }
    atomic_fetch_add(&live, 1);
    *prog = p;
    return 0;
}

static void put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int build(fake_program *p, unsigned mach)
{
    size_t cap = 64 + strlen(p->source) + 1;
    p->code = calloc(1, cap);
    if (!p->code)
        return 1;
    memcpy(p->code, "\x7f" "ELF", 4);
    p->code[4] = 2; /* 64-bit */
    p->code[5] = 1; /* little-endian */
    put(p->code + 18, EM_AMDGPU, 2);
    put(p->code + 0x30, mach, 4);
    size_t at = 64;
    /* Every first argument of a ...KERNEL(...) or ...KERNEL_RESIDENT(...)
     * macro: LKV_KERNEL(name) and the macros that define kernels through it
     * (LKV_KERNEL_RESIDENT, LKV_STORE_KERNEL, ...), their own definitions'
     * parameter included, which names nothing the loader asks for. */
    for (const char *k = strstr(p->source, "KERNEL"); k; k = strstr(k, "KERNEL")) {
        k += strlen("KERNEL");
        if (strncmp(k, "_RESIDENT", 9) == 0)
            k += 9;
        if (*k++ != '(')
            continue;
        size_t n = strcspn(k, ",)");
        memcpy(p->code + at, k, n);
        at += n + 1;
    }
    put(p->code + 0x28, at, 8); /* e_shoff: the "section headers" end it */
    p->size = at;
    return 0;
}

int hiprtcCompileProgram(void *prog, int num_options, const char **options)
{
    fake_program *p = prog;
    atomic_fetch_add(&count_rtc_compile, 1);
    char want[300];
    snprintf(want, sizeof want, "--gpu-architecture=%s", arch());
    int arch_given = 0;
    for (int i = 0; i < num_options; i++)
        arch_given |= strcmp(options[i], want) == 0;
    if (!arch_given) {
        snprintf(p->log, sizeof p->log, "fake hiprtc: no option %.200s", want);
        return 5; /* HIPRTC_ERROR_INVALID_OPTION */
    }
    if (getenv("FAKE_HIPRTC_FAIL")) {
        snprintf(p->log, sizeof p->log, "lazykv.hip:1:1: error: fake compile failure");
        return 6; /* HIPRTC_ERROR_COMPILATION */
    }
    return build(p, mach_of(arch()));
}

int hiprtcGetProgramLogSize(void *prog, size_t *size)
{
    *size = strlen(((fake_program *)prog)->log) + 1;
    return 0;
}

int hiprtcGetProgramLog(void *prog, char *log)
{
    strcpy(log, ((fake_program *)prog)->log);
    return 0;
}

int hiprtcGetCodeSize(void *prog, size_t *size)
{
    *size = ((fake_program *)prog)->size;
    return 0;
}

int hiprtcGetCode(void *prog, char *code)
{
    const fake_program *p = prog;
    memcpy(code, p->code, p->size);
    return 0;
}

int hiprtcDestroyProgram(void **prog)
{
    fake_program *p = *prog;
    free(p->source);
    free(p->code);
    free(p);
    *prog = NULL;
    atomic_fetch_sub(&live, 1);
    return 0;
}

const char *hiprtcGetErrorString(int r)
{
    return r == 0 ? "HIPRTC_SUCCESS" : "HIPRTC_ERROR (fake)";
}
#endif

/* Test hooks. */
int fake_hip_live(void)
{
    return live;
}

size_t fake_hip_loaded_size(void)
{
    return loaded_size;
}

uint64_t fake_hip_loaded_hash(void)
{
    return loaded_hash;
}

unsigned fake_hip_loaded_mach(void)
{
    return loaded_mach;
}

/* The device the live allocation holding `p` was made on, -1 if none. */
int fake_hip_device_of(const void *p)
{
    int device = -1;
    pthread_mutex_lock(&allocs_lock);
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && (const unsigned char *)p >= allocs[i].base &&
            (const unsigned char *)p < allocs[i].base + (allocs[i].size ? allocs[i].size : 1))
            device = allocs[i].device;
    pthread_mutex_unlock(&allocs_lock);
    return device;
}

const void *fake_hip_last_stream(void)
{
    return last_stream;
}

const char *fake_hip_last_kernel(void)
{
    return last_kernel;
}

void fake_hip_last_launch(unsigned grid[3], unsigned *block)
{
    memcpy(grid, last_grid, sizeof last_grid);
    *block = last_block;
}

int fake_hip_count(const char *what)
{
#define COUNT(name)                                                                          \
    if (strcmp(what, #name) == 0)                                                            \
        return count_##name;
    COUNTED(COUNT)
    return -1;
}
