/* Every CUDA driver entry point the backend calls, one line each in the
 * shape of backends/host/host_symbols.h: LKV_SYM(cuda, REQ or OPT, return
 * type, name, (parameter types)). REQ fails the load when libcuda lacks it,
 * OPT may be absent (its pointer is then NULL); every entry returns
 * CUresult.
 *
 * Names are the symbols libcuda exports, which for several calls are the
 * `_v2` versions cuda.h maps the plain names to (64-bit sizes and device
 * pointers). Every copy, memset and launch names its stream: the one the
 * device created, or the engine's (open_external), so a handle's work is
 * ordered on one stream (a lane's on its own); the plain (not `_ptsz`)
 * exports take the stream as given, NULL being the legacy default stream. */

LKV_SYM(cuda, REQ, CUresult, cuInit, (unsigned int))
LKV_SYM(cuda, REQ, CUresult, cuDriverGetVersion, (int *))
LKV_SYM(cuda, REQ, CUresult, cuDeviceGetCount, (int *))
LKV_SYM(cuda, REQ, CUresult, cuDeviceGet, (CUdevice *, int))
LKV_SYM(cuda, REQ, CUresult, cuDeviceGetName, (char *, int, CUdevice))
LKV_SYM(cuda, REQ, CUresult, cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))
LKV_SYM(cuda, REQ, CUresult, cuDeviceTotalMem_v2, (size_t *, CUdevice))
LKV_SYM(cuda, REQ, CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))
LKV_SYM(cuda, REQ, CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice))
LKV_SYM(cuda, REQ, CUresult, cuCtxPushCurrent_v2, (CUcontext))
LKV_SYM(cuda, REQ, CUresult, cuCtxPopCurrent_v2, (CUcontext *))
LKV_SYM(cuda, REQ, CUresult, cuCtxGetDevice, (CUdevice *))
LKV_SYM(cuda, REQ, CUresult, cuStreamCreate, (CUstream *, unsigned int))
LKV_SYM(cuda, REQ, CUresult, cuStreamDestroy_v2, (CUstream))
LKV_SYM(cuda, REQ, CUresult, cuStreamSynchronize, (CUstream))
/* A lane's stream waits for the other stream's event (cuda_driver.c). */
LKV_SYM(cuda, REQ, CUresult, cuStreamWaitEvent, (CUstream, CUevent, unsigned int))
LKV_SYM(cuda, REQ, CUresult, cuEventCreate, (CUevent *, unsigned int))
LKV_SYM(cuda, REQ, CUresult, cuEventRecord, (CUevent, CUstream))
LKV_SYM(cuda, REQ, CUresult, cuEventQuery, (CUevent))
LKV_SYM(cuda, REQ, CUresult, cuEventSynchronize, (CUevent))
LKV_SYM(cuda, REQ, CUresult, cuEventDestroy_v2, (CUevent))
LKV_SYM(cuda, REQ, CUresult, cuModuleLoadDataEx, (CUmodule *, const void *, unsigned int,
        CUjit_option *, void **))
LKV_SYM(cuda, REQ, CUresult, cuModuleUnload, (CUmodule))
LKV_SYM(cuda, REQ, CUresult, cuModuleGetFunction, (CUfunction *, CUmodule, const char *))
LKV_SYM(cuda, REQ, CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
LKV_SYM(cuda, REQ, CUresult, cuMemFree_v2, (CUdeviceptr))
LKV_SYM(cuda, REQ, CUresult, cuMemHostAlloc, (void **, size_t, unsigned int))
LKV_SYM(cuda, REQ, CUresult, cuMemFreeHost, (void *))
LKV_SYM(cuda, REQ, CUresult, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))
LKV_SYM(cuda, REQ, CUresult, cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream))
LKV_SYM(cuda, REQ, CUresult, cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream))
LKV_SYM(cuda, REQ, CUresult, cuMemcpyDtoDAsync_v2, (CUdeviceptr, CUdeviceptr, size_t, CUstream))
LKV_SYM(cuda, REQ, CUresult, cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int,
        unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **))
/* Every block resident at once (attend's shared combine; absent: the
 * launch that combines in the last block). */
LKV_SYM(cuda, OPT, CUresult, cuLaunchCooperativeKernel, (CUfunction, unsigned int, unsigned int,
        unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **))
/* UUIDs: _v2 (CUDA 11.4+) gives a MIG instance's own UUID; older drivers
 * have only the first. */
LKV_SYM(cuda, OPT, CUresult, cuDeviceGetUuid_v2, (CUuuid *, CUdevice))
LKV_SYM(cuda, OPT, CUresult, cuDeviceGetUuid, (CUuuid *, CUdevice))
LKV_SYM(cuda, OPT, CUresult, cuDeviceGetPCIBusId, (char *, int, CUdevice))
/* Resident blocks a multiprocessor: the attention's split planning (absent:
 * the planner's default). */
LKV_SYM(cuda, OPT, CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor,
        (int *, CUfunction, int, size_t))
LKV_SYM(cuda, OPT, CUresult, cuGetErrorName, (CUresult, const char **))
LKV_SYM(cuda, OPT, CUresult, cuGetErrorString, (CUresult, const char **))
