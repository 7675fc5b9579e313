/* Checks backends/cuda/cuda_api.h and cuda_symbols.h against the CUDA
 * toolkit's own cuda.h, where the toolkit has one: every constant the
 * backend declares must equal cuda.h's, and every entry point must exist in
 * cuda.h under that symbol name with those parameter types. A mismatch is a
 * compile error; nothing here runs. (The plain cuDeviceGetUuid is declared
 * by cuda.h only as cuDeviceGetUuid_v2, whose parameters are the same, so
 * that is what its line checks.) */
#include <cuda.h>

#define LKV_CUDA_API_CHECK 1
#include "cuda_api.h"

#define SAME(ours, theirs)                                                                   \
    _Static_assert((long long)(ours) == (long long)(theirs),                                 \
                   #ours " differs from cuda.h's " #theirs)

SAME(LKV_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(LKV_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(LKV_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(LKV_CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE);
SAME(LKV_CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(LKV_CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
SAME(LKV_CUDA_ERROR_JIT_COMPILER_NOT_FOUND, CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
SAME(LKV_CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
SAME(LKV_CUDA_ERROR_JIT_COMPILATION_DISABLED, CUDA_ERROR_JIT_COMPILATION_DISABLED);
SAME(LKV_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME(LKV_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME(LKV_CU_STREAM_DEFAULT, CU_STREAM_DEFAULT);
SAME(LKV_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME(LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
SAME(LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
SAME(LKV_CU_DEVICE_ATTRIBUTE_WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
SAME(LKV_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(LKV_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(LKV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);

/* The backend's typedefs stand in for these, so they must match in size. */
SAME(sizeof(CUresult), sizeof(int));
SAME(sizeof(CUdevice), sizeof(int));
SAME(sizeof(CUdevice_attribute), sizeof(int));
SAME(sizeof(CUjit_option), sizeof(int));
SAME(sizeof(CUdeviceptr), sizeof(unsigned long long));
SAME(sizeof(CUuuid), 16);

/* Here the type names in cuda_symbols.h resolve to cuda.h's own types. */
#define LKV_SYM(group, need, ret, name, params)                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),            \
                   #name ": cuda_symbols.h and cuda.h disagree");
#include "cuda_symbols.h"
#undef LKV_SYM
