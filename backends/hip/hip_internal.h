/* The HIP backend (AMD GPUs through ROCm): libamdhip64 dlopen'ed, the
 * kernels (backends/gpu/kernels/lazykv.cu) as an embedded code object per gfx target (or
 * compiled at open by hiprtc for other targets), launched by the host code
 * shared with CUDA (backends/gpu/) through the driver table of hip_driver.c.
 *
 *   hip_loader.c   finding libamdhip64, its entry points, hipInit
 *   hip_device.c   a device's architecture (gcnArchName), name, limits
 *   hip_bundle.c   the offload bundle and the code object for a device
 *   hip_rtc.c      hiprtc: finding it, compiling the embedded source
 *   hip_driver.c   the lkv_gpu_driver table, and the module
 *   hip_backend.c  probe, open, the ops table */
#ifndef LKV_HIP_INTERNAL_H
#define LKV_HIP_INTERNAL_H

#include <stddef.h>

#include "gpu/gpu_internal.h"
#include "hip_api.h"
#include "hip_bundle.h"
#include "host/host_symbols.h"
#include "lkv_kernel_abi.h" /* LKV_BLOCK_MAX: the most threads a launch uses */

/* Environment knobs (tests, unusual installs): the one library to load
 * instead of the search. */
#define LKV_HIP_LIBRARY_ENV "LAZYKV_HIP_LIBRARY"
#define LKV_HIPRTC_LIBRARY_ENV "LAZYKV_HIPRTC_LIBRARY"


/* The two groups of hip_symbols.h, each its own struct (hiprtc may be
 * another library): a line lands only in its group's struct. */
#define LKV_SYM(group, need, ret, name, params) LKV_HIP_IN_##group(LKV_HOST_SLOT(ret, name, params))
#define LKV_HIP_IN_hip(slot) slot
#define LKV_HIP_IN_hiprtc(slot)
typedef struct lkv_hip_fns {
#include "hip_symbols.h"
} lkv_hip_fns;
#undef LKV_HIP_IN_hip
#undef LKV_HIP_IN_hiprtc

#define LKV_HIP_IN_hip(slot)
#define LKV_HIP_IN_hiprtc(slot) slot
typedef struct lkv_hiprtc_fns {
#include "hip_symbols.h"
} lkv_hiprtc_fns;
#undef LKV_HIP_IN_hip
#undef LKV_HIP_IN_hiprtc
#undef LKV_SYM

/* hip_loader.c: every line of hip_symbols.h, both groups, for
 * lkv_host_resolve (each group's offsets are into its own struct). */
extern const lkv_host_symbol lkv_hip_symbols[];
extern const size_t lkv_hip_symbol_count;

typedef struct lkv_hip_lib {
    void *handle;
    char path[256]; /* the name it was loaded by, for messages */
    lkv_hip_fns fn;
} lkv_hip_lib;

/* hip_loader.c: loads the runtime and initializes it. UNAVAILABLE when the
 * library is missing or not a HIP runtime, or it finds no device; on success
 * *out_count >= 1. Nothing stays loaded on failure. */
lkv_status lkv_hip_load(lkv_hip_lib *out, int *out_count);
void lkv_hip_unload(lkv_hip_lib *lib);

/* A failed HIP call as a status (OUT_OF_MEMORY, INCOMPATIBLE for an image
 * the device cannot run, else DEVICE_ERROR) with the message every GPU
 * backend gives a failed call (lkv_host_call_failed):
 * "hip: <what>: hipErrorName (text)". */
lkv_status lkv_hip_check(const lkv_hip_lib *lib, hipError_t err, const char *what);

/* hip_device.c */
typedef struct lkv_hip_device_info {
    char arch[LKV_HIP_PROPS_ARCH_LEN]; /* gcnArchName: "gfx90a:sramecc+:xnack-" */
    char name[128];
    size_t memory;
    char uuid[40];   /* 8-4-4-4-12 hex, "" when the runtime has none */
    char pci[16];    /* dddd:bb:dd.f, "" when the runtime does not say */
    char driver[128]; /* "HIP runtime 6.2.41133, driver 60241133" */
    int max_block;   /* threads per block */
    lkv_gpu_limits lim;
} lkv_hip_device_info;

/* The device's gcnArchName, read from its properties (hip_device.c says
 * how the two layouts are told apart). */
lkv_status lkv_hip_device_arch(const lkv_hip_lib *lib, int ordinal, char *out, size_t cap);
/* Architecture first, then the rest; limits a kernel launch cannot meet are
 * INCOMPATIBLE. */
lkv_status lkv_hip_device_query(const lkv_hip_lib *lib, int ordinal, lkv_hip_device_info *out);

/* hip_rtc.c */
typedef struct lkv_hip_rtc {
    void *handle;   /* a libhiprtc we opened, or NULL when libamdhip64 has hiprtc */
    char from[256]; /* where the functions came from, for messages */
    lkv_hiprtc_fns fn;
} lkv_hip_rtc;

/* hiprtc inside libamdhip64 (ROCm 5), else libhiprtc (ROCm 6 and 7).
 * UNAVAILABLE with what was tried when there is none. */
lkv_status lkv_hip_rtc_find(const lkv_hip_lib *lib, lkv_hip_rtc *out);
void lkv_hip_rtc_close(lkv_hip_rtc *rtc);
/* Compiles `source` for `arch` (a gcnArchName) into a code object, malloc'd
 * into *out_code. A compile error is INCOMPATIBLE with the compiler's log. */
lkv_status lkv_hip_rtc_compile(const lkv_hip_rtc *rtc, const char *source, const char *arch,
                               void **out_code, size_t *out_size);

/* Embedded by backends/hip/backend.cmake: the offload bundle of backends/gpu/kernels/lazykv.cu
 * and, for hiprtc, the same kernels as one self-contained source. */
extern const unsigned char lkv_hip_bundle[];
extern const size_t lkv_hip_bundle_size;
extern const unsigned char lkv_hip_source[]; /* NUL-terminated */
extern const size_t lkv_hip_source_size;

/* hip_driver.c: what an open device holds. A lane's (hip_lane_open) is a
 * copy of its parent's that holds only its own stream: lib.handle, module
 * and rtc_code are unset, so close leaves them to the parent. */
typedef struct lkv_hip_api {
    lkv_hip_lib lib;
    int ordinal;
    /* The calling thread's current device before enter, put back by leave;
     * -1 when there is none to put back. One slot is enough: entries run one
     * at a time under the device lock, and never nest. */
    int saved_device;
    hipStream_t stream;  /* every copy and launch goes here (NULL: the null stream) */
    int own_stream;      /* created at open: destroyed by close */
    int borrowed_stream; /* open_external: `stream` is the engine's, never destroyed */
    hipModule_t module;
    void *rtc_code; /* hiprtc's code object, kept while the module lives */
    hipFunction_t fn[LKV_GPU_KERNEL_COUNT + 1];
} lkv_hip_api;

extern const lkv_gpu_driver lkv_hip_driver;

/* Loads the module for a device of architecture `arch`: the bundle's code
 * object for it, else hiprtc's build of the source, else INCOMPATIBLE naming
 * the targets this lazykv carries; then resolves every kernel, and creates
 * the device's stream unless it borrowed the engine's. */
lkv_status lkv_hip_module_load(lkv_hip_api *a, const char *arch);

/* What a device of architecture `arch` would load, for probe: *out_how says
 * it in words; INCOMPATIBLE (the message says why) when it cannot. */
lkv_status lkv_hip_code_source(const lkv_hip_lib *lib, const char *arch, char *out_how,
                               size_t cap);

/* The backend's ops table; the registry (cmake/backends.cmake) names it. */
extern const lkv_backend_ops lkv_backend_hip;

#endif /* LKV_HIP_INTERNAL_H */
