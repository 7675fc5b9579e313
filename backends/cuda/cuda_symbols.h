/* Every CUDA driver entry point the backend calls, one line each: REQ fails
 * the load when libcuda lacks it, OPT may be absent (its pointer is then
 * NULL). Expanded by the includer with LKV_CU_REQ(name, args...) and
 * LKV_CU_OPT(name, args...); every entry returns CUresult.
 *
 * Names are the symbols libcuda exports, which for several calls are the
 * `_v2` versions cuda.h maps the plain names to (64-bit sizes and device
 * pointers). The copy, memset and launch calls are the legacy-default-stream
 * ones (not `_ptds`/`_ptsz`), so all work is ordered on one stream. */

LKV_CU_REQ(cuInit, unsigned int)
LKV_CU_REQ(cuDriverGetVersion, int *)
LKV_CU_REQ(cuDeviceGetCount, int *)
LKV_CU_REQ(cuDeviceGet, CUdevice *, int)
LKV_CU_REQ(cuDeviceGetName, char *, int, CUdevice)
LKV_CU_REQ(cuDeviceGetAttribute, int *, CUdevice_attribute, CUdevice)
LKV_CU_REQ(cuDeviceTotalMem_v2, size_t *, CUdevice)
LKV_CU_REQ(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)
LKV_CU_REQ(cuDevicePrimaryCtxRelease_v2, CUdevice)
LKV_CU_REQ(cuCtxPushCurrent_v2, CUcontext)
LKV_CU_REQ(cuCtxPopCurrent_v2, CUcontext *)
LKV_CU_REQ(cuCtxSynchronize, void)
LKV_CU_REQ(cuModuleLoadDataEx, CUmodule *, const void *, unsigned int, CUjit_option *, void **)
LKV_CU_REQ(cuModuleUnload, CUmodule)
LKV_CU_REQ(cuModuleGetFunction, CUfunction *, CUmodule, const char *)
LKV_CU_REQ(cuMemAlloc_v2, CUdeviceptr *, size_t)
LKV_CU_REQ(cuMemFree_v2, CUdeviceptr)
LKV_CU_REQ(cuMemsetD8_v2, CUdeviceptr, unsigned char, size_t)
LKV_CU_REQ(cuMemcpyHtoD_v2, CUdeviceptr, const void *, size_t)
LKV_CU_REQ(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t)
LKV_CU_REQ(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, size_t)
LKV_CU_REQ(cuLaunchKernel, CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
           unsigned int, unsigned int, unsigned int, CUstream, void **, void **)
/* UUIDs: _v2 (CUDA 11.4+) gives a MIG instance's own UUID; older drivers
 * have only the first. */
LKV_CU_OPT(cuDeviceGetUuid_v2, CUuuid *, CUdevice)
LKV_CU_OPT(cuDeviceGetUuid, CUuuid *, CUdevice)
LKV_CU_OPT(cuDeviceGetPCIBusId, char *, int, CUdevice)
LKV_CU_OPT(cuGetErrorName, CUresult, const char **)
LKV_CU_OPT(cuGetErrorString, CUresult, const char **)
