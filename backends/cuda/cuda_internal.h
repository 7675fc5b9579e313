/* The CUDA backend: libcuda.so.1 loaded at run time (cuda_loader.c), devices
 * listed and checked against the embedded kernels (cuda_probe.c), a device
 * opened with the kernels loaded (cuda_device.c) and driven through the
 * shared GPU host code by the driver table of cuda_driver.c. */
#ifndef LKV_CUDA_INTERNAL_H
#define LKV_CUDA_INTERNAL_H

#include <stddef.h>

#include "cuda_api.h"
#include "cuda_fatbin.h"
#include "gpu/gpu_internal.h"
#include "host/host_symbols.h"

typedef struct lkv_cu_fns {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SLOT(ret, name, params)
#include "cuda_symbols.h"
#undef LKV_SYM
} lkv_cu_fns;

typedef struct lkv_cu_lib {
    void *handle;
    lkv_cu_fns fn;
    int driver_version; /* cuDriverGetVersion: 12040 for CUDA 12.4 */
} lkv_cu_lib;

/* The kernels, embedded by backends/cuda/backend.cmake: the fatbin and the CUDA
 * version of the nvcc that built it (13000 for 13.0). */
extern const unsigned char lkv_cuda_fatbin[];
extern const size_t lkv_cuda_fatbin_size;
extern const int lkv_cuda_fatbin_toolkit;

/* cuda_loader.c: libcuda.so.1 (or $LAZYKV_CUDA_LIBRARY) found and resolved
 * by the shared loader (host/host_library.h), the entry points of
 * cuda_symbols.h, cuInit(0) and the driver version. On failure nothing stays
 * loaded and the status is UNAVAILABLE. */
lkv_status lkv_cu_load(lkv_cu_lib *out_lib);
void lkv_cu_unload(lkv_cu_lib *lib);

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", or "error 7"
 * when the driver cannot name it (lkv_host_error_text). */
void lkv_cu_error_text(const lkv_cu_lib *lib, CUresult r, char *buf, size_t len);

/* OK for CUDA_SUCCESS; else OUT_OF_MEMORY or DEVICE_ERROR with the message
 * every GPU backend gives a failed call (lkv_host_call_failed):
 * "cuda: <what>: CUDA_ERROR_NAME (text)". */
lkv_status lkv_cu_check(const lkv_cu_lib *lib, CUresult r, const char *what);

/* "CUDA 12.4" from a cuDriverGetVersion number. */
void lkv_cu_version_text(int version, char *buf, size_t len);

/* cuda_probe.c */
lkv_status lkv_cu_probe(lkv_device_report *out, int cap, int *out_count);

/* What the probe and open need to know of a device before using it. */
typedef struct lkv_cu_identity {
    char name[128];
    int cc_major, cc_minor; /* compute capability */
    int multiprocessors;
} lkv_cu_identity;

lkv_status lkv_cu_identify(const lkv_cu_lib *lib, CUdevice dev, lkv_cu_identity *out);

/* cuDeviceGetAttribute, failing with a message that names `name`. */
lkv_status lkv_cu_attribute(const lkv_cu_lib *lib, CUdevice dev, CUdevice_attribute attr,
                            const char *name, int *out);

/* The embedded fatbin's entries; INTERNAL if it does not parse. */
lkv_status lkv_cu_embedded_fatbin(lkv_fatbin_info *out);

/* Whether the embedded kernels (`fb`, built by CUDA `toolkit`) can run on a
 * device of compute capability cc_major.cc_minor under a driver of
 * `driver_version`. Yes: 1, and `how` says with what ("sm_90 machine code").
 * No: 0, and `why` says what the user can do about it. */
int lkv_cu_can_run(const lkv_fatbin_info *fb, int toolkit, int driver_version, int cc_major,
                   int cc_minor, char *how, size_t how_len, char *why, size_t why_len);

/* What to do when the driver is too old for kernels built by CUDA `toolkit`
 * that need a driver for CUDA `needed` (machine code: the toolkit's major
 * version; PTX: the toolkit's own version): "driver supports CUDA 12.2 but
 * the kernels were built by CUDA 13.0: update the NVIDIA driver to 580 or
 * newer". */
void lkv_cu_driver_advice(int toolkit, int needed, int driver_version, char *buf, size_t len);

/* cuda_driver.c: the driver's state for one open device and its table.
 * A lane's (cu_lane_open) is a copy of its parent's that holds only its own
 * stream: lib.handle, module and retained are unset, so close leaves the
 * library, the module and the context to the parent. */
typedef struct lkv_cu_api {
    lkv_cu_lib lib;
    CUdevice dev;
    CUcontext ctx;   /* the retained primary context or the engine's; NULL until set */
    int retained;    /* ctx is the primary context, retained by open: release it */
    CUstream stream; /* every copy and launch goes here (NULL: legacy default stream) */
    int own_stream;  /* created by open: destroyed by close; else the engine's */
    CUmodule module; /* NULL until loaded */
    CUfunction kernels[LKV_GPU_KERNEL_COUNT + 1];
} lkv_cu_api;

extern const lkv_gpu_driver lkv_cu_driver;

/* cuda_device.c: open creates its own stream on the primary context;
 * open_external borrows the engine's context (or retains the primary one)
 * and stream (lkv_external_device of lazykv.h). */
lkv_status lkv_cu_open(int device, lkv_device **out_dev);
lkv_status lkv_cu_open_external(const lkv_external_device *ext, lkv_device **out_dev);

/* The backend's ops table; the registry (cmake/backends.cmake) names it. */
extern const lkv_backend_ops lkv_backend_cuda;

#endif /* LKV_CUDA_INTERNAL_H */
