/* Every HIP module-API entry point lazykv calls, one line each in the shape
 * of backends/host/host_symbols.h: LKV_SYM(group, REQ or OPT, return type,
 * name, (parameter list)), where the group is
 *   hip     from libamdhip64
 *   hiprtc  from hiprtc (inside libamdhip64 on ROCm 5, libhiprtc on ROCm 6
 *           and 7)
 * Signatures follow hip/hip_runtime_api.h and hip/hiprtc.h; the types are
 * in hip_api.h. */

LKV_SYM(hip, REQ, hipError_t, hipInit, (unsigned int flags))
LKV_SYM(hip, REQ, hipError_t, hipGetDeviceCount, (int *count))
LKV_SYM(hip, REQ, hipError_t, hipDeviceGet, (hipDevice_t *device, int ordinal))
LKV_SYM(hip, REQ, hipError_t, hipDeviceGetName, (char *name, int len, hipDevice_t device))
LKV_SYM(hip, REQ, hipError_t, hipDeviceGetAttribute,
        (int *value, hipDeviceAttribute_t attr, int device))
LKV_SYM(hip, REQ, hipError_t, hipDeviceTotalMem, (size_t *bytes, hipDevice_t device))
LKV_SYM(hip, REQ, hipError_t, hipDriverGetVersion, (int *version))
LKV_SYM(hip, REQ, hipError_t, hipRuntimeGetVersion, (int *version))
LKV_SYM(hip, REQ, hipError_t, hipGetDevice, (int *device))
LKV_SYM(hip, REQ, hipError_t, hipSetDevice, (int device))
LKV_SYM(hip, REQ, hipError_t, hipMalloc, (void **ptr, size_t bytes))
LKV_SYM(hip, REQ, hipError_t, hipFree, (void *ptr))
LKV_SYM(hip, REQ, hipError_t, hipHostMalloc, (void **ptr, size_t bytes, unsigned int flags))
LKV_SYM(hip, REQ, hipError_t, hipHostFree, (void *ptr))
/* Every copy, memset, launch and event names the handle's one stream. */
LKV_SYM(hip, REQ, hipError_t, hipMemsetAsync,
        (void *dst, int value, size_t bytes, hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipMemcpyHtoDAsync,
        (hipDeviceptr_t dst, void *src, size_t bytes, hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipMemcpyDtoHAsync,
        (void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipMemcpyDtoDAsync,
        (hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipStreamCreate, (hipStream_t *stream))
LKV_SYM(hip, REQ, hipError_t, hipStreamDestroy, (hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipStreamSynchronize, (hipStream_t stream))
/* A lane: a stream of its own, ordered with the device's by events. */
LKV_SYM(hip, REQ, hipError_t, hipStreamCreateWithFlags, (hipStream_t *stream, unsigned int flags))
LKV_SYM(hip, REQ, hipError_t, hipStreamWaitEvent,
        (hipStream_t stream, hipEvent_t event, unsigned int flags))
LKV_SYM(hip, REQ, hipError_t, hipEventCreateWithFlags, (hipEvent_t *event, unsigned int flags))
LKV_SYM(hip, REQ, hipError_t, hipEventRecord, (hipEvent_t event, hipStream_t stream))
LKV_SYM(hip, REQ, hipError_t, hipEventQuery, (hipEvent_t event))
LKV_SYM(hip, REQ, hipError_t, hipEventSynchronize, (hipEvent_t event))
LKV_SYM(hip, REQ, hipError_t, hipEventDestroy, (hipEvent_t event))
LKV_SYM(hip, REQ, hipError_t, hipModuleLoadData, (hipModule_t *module, const void *image))
LKV_SYM(hip, REQ, hipError_t, hipModuleUnload, (hipModule_t module))
LKV_SYM(hip, REQ, hipError_t, hipModuleGetFunction,
        (hipFunction_t *fn, hipModule_t module, const char *name))
LKV_SYM(hip, REQ, hipError_t, hipModuleLaunchKernel,
        (hipFunction_t fn, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
         unsigned int block_x, unsigned int block_y, unsigned int block_z,
         unsigned int shared_bytes, hipStream_t stream, void **params, void **extra))
/* Every block resident at once (attend's shared combine; absent: the
 * launch that combines in the last block). */
LKV_SYM(hip, OPT, hipError_t, hipModuleLaunchCooperativeKernel, (hipFunction_t, unsigned int,
        unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
        hipStream_t, void **))
/* Device properties, for gcnArchName only: ROCm 6 has both (the plain name
 * keeps the ROCm 5 layout), ROCm 5 only the plain one; one must exist. The
 * argument is a hipDeviceProp_t of the matching layout (hip_api.h). */
LKV_SYM(hip, OPT, hipError_t, hipGetDevicePropertiesR0600, (void *props, int device))
LKV_SYM(hip, OPT, hipError_t, hipDeviceGetPCIBusId, (char *pci_bus_id, int len, int device))
LKV_SYM(hip, OPT, hipError_t, hipGetDeviceProperties, (void *props, int device))
LKV_SYM(hip, OPT, hipError_t, hipDeviceGetUuid, (hipUUID *uuid, hipDevice_t device)) /* ROCm 5.1+ */
/* Resident blocks a CU: the attention's split planning (absent: the
 * planner's default). */
LKV_SYM(hip, OPT, hipError_t, hipModuleOccupancyMaxActiveBlocksPerMultiprocessor,
        (int *num_blocks, hipFunction_t fn, int block_size, size_t shared_bytes))
LKV_SYM(hip, OPT, const char *, hipGetErrorName, (hipError_t error))
LKV_SYM(hip, OPT, const char *, hipGetErrorString, (hipError_t error))

LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcCreateProgram,
        (hiprtcProgram *prog, const char *src, const char *name, int num_headers,
         const char **headers, const char **include_names))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcCompileProgram,
        (hiprtcProgram prog, int num_options, const char **options))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcGetProgramLogSize, (hiprtcProgram prog, size_t *size))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcGetProgramLog, (hiprtcProgram prog, char *log))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcGetCodeSize, (hiprtcProgram prog, size_t *size))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcGetCode, (hiprtcProgram prog, char *code))
LKV_SYM(hiprtc, REQ, hiprtcResult, hiprtcDestroyProgram, (hiprtcProgram *prog))
LKV_SYM(hiprtc, OPT, const char *, hiprtcGetErrorString, (hiprtcResult result))
