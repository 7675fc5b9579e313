/* The few HIP and hiprtc types and constants lazykv uses, declared here so
 * the runtime builds without ROCm: libamdhip64 is dlopen'ed (hip_loader.c)
 * and never included.
 *
 * Source of every value: the ROCm headers hip/hip_runtime_api.h,
 * hip/driver_types.h and hip/hiprtc.h (ROCm 5.2 as shipped by Debian, and the
 * ROCm 6 header in which hipGetDeviceProperties became
 * hipGetDevicePropertiesR0600). The device attribute values used below are in
 * the CUDA-compatible range of hipDeviceAttribute_t, identical in ROCm 5 and 6
 * (ROCm 6 renumbered only AMD-specific ones such as the old GcnArchName
 * attribute, which is gone). */
#ifndef LKV_HIP_API_H
#define LKV_HIP_API_H

#include <stddef.h>

typedef int hipError_t; /* an enum in hip_runtime_api.h; int-sized on every ABI */
typedef int hipDevice_t;
typedef void *hipDeviceptr_t;
typedef struct lkv_ihipModule *hipModule_t;   /* struct ihipModule_t * */
typedef struct lkv_ihipFunction *hipFunction_t; /* struct ihipModuleSymbol_t * */
typedef struct lkv_ihipStream *hipStream_t;   /* NULL: the null (default) stream */
typedef struct lkv_ihipEvent *hipEvent_t;     /* struct ihipEvent_t * */

/* hipEventCreateWithFlags: no timing, which events used only to order need */
#define LKV_HIP_EVENT_DISABLE_TIMING 0x2 /* hipEventDisableTiming */
/* hipStreamCreateWithFlags: a lane's stream, not ordered with the null one */
#define LKV_HIP_STREAM_NON_BLOCKING 0x1 /* hipStreamNonBlocking */

typedef struct hipUUID {
    char bytes[16];
} hipUUID;

enum {
    hipSuccess = 0,
    hipErrorOutOfMemory = 2,
    hipErrorNoDevice = 100,
    hipErrorInvalidImage = 200,
    hipErrorNoBinaryForGpu = 209,
    hipErrorNotReady = 600
};

/* hipDeviceAttribute_t: ordinals 0..87 of the CUDA-compatible block, the same
 * in ROCm 5.x and 6.x. */
typedef int hipDeviceAttribute_t;
enum {
    hipDeviceAttributeMaxGridDimY = 30,
    hipDeviceAttributeMaxGridDimZ = 31,
    hipDeviceAttributeMaxThreadsPerBlock = 56,
    hipDeviceAttributeMultiprocessorCount = 63,
    hipDeviceAttributeWarpSize = 87
};

/* hipDeviceProp_t is read only for gcnArchName (hip_device.c); its layout
 * is not declared. The offsets, computed from the two header layouts:
 *   R0000 (ROCm 4-5 hipGetDeviceProperties, and ROCm 6's plain
 *          hipGetDeviceProperties export kept for old binaries): 792 bytes,
 *          gcnArchName at 396 (after name[256], the size/limit fields, the
 *          hipDeviceArch_t bit field, the PCI ids and gcnArch);
 *   R0600 (ROCm 6 hipGetDevicePropertiesR0600, laid out like cudaDeviceProp
 *          with the HIP-only fields at the end): 1472 bytes, gcnArchName at
 *          1160 (after reserved[63] and hipReserved[32]).
 * ROCm 7 kept R0600: hipDeviceProp_t was not versioned again, and LLVM's
 * offload-arch reads gcnArchName at 1160 through hipGetDevicePropertiesR0600
 * on ROCm 7.1 (llvm-project #167695). A later renumbering would still be
 * caught, not misread: hip_device.c checks the name is a "gfx..." string
 * and falls back to the plain call. */
#define LKV_HIP_PROPS_R0000_ARCH_OFFSET 396
#define LKV_HIP_PROPS_R0600_ARCH_OFFSET 1160
#define LKV_HIP_PROPS_ARCH_LEN 256
#define LKV_HIP_PROPS_BUFFER 4096 /* larger than either layout */

/* hiprtc (hip/hiprtc.h) */
typedef int hiprtcResult;
typedef struct lkv_hiprtcProgram *hiprtcProgram; /* struct _hiprtcProgram * */
enum { HIPRTC_SUCCESS = 0 };

#endif /* LKV_HIP_API_H */
