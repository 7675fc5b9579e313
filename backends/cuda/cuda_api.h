/* The few CUDA driver API types and constants the backend uses, declared
 * here so lazykv builds without a CUDA toolkit (no cuda.h): libcuda.so.1 is
 * dlopen'ed at run time. Values are those of the CUDA Driver API reference
 * (cuda.h of CUDA 12 and 13: CUresult, CUdevice_attribute, CUjit_option);
 * they are part of the driver's stable ABI and never renumbered. */
#ifndef LKV_CUDA_API_H
#define LKV_CUDA_API_H

#include <stddef.h>

/* tests/cuda/cuda_api_check.c includes the real cuda.h first and compares
 * every value and entry point below with it; it skips these typedefs. */
#ifndef LKV_CUDA_API_CHECK
typedef int CUresult;                    /* enum cudaError_enum */
typedef int CUdevice;                    /* a device ordinal */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;    /* NULL: the legacy default stream */
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2: 64-bit on every platform */
typedef int CUdevice_attribute;
typedef int CUjit_option;

typedef struct CUuuid {
    char bytes[16];
} CUuuid;
#endif

/* CUresult values the backend tells apart */
enum {
    LKV_CUDA_SUCCESS = 0,
    LKV_CUDA_ERROR_OUT_OF_MEMORY = 2,
    LKV_CUDA_ERROR_NO_DEVICE = 100,
    LKV_CUDA_ERROR_INVALID_IMAGE = 200,
    LKV_CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    LKV_CUDA_ERROR_INVALID_PTX = 218,
    LKV_CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    LKV_CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    LKV_CUDA_ERROR_JIT_COMPILATION_DISABLED = 223,
    LKV_CUDA_ERROR_NOT_READY = 600,
    LKV_CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    LKV_CUDA_ERROR_NOT_SUPPORTED = 801
};

/* CUevent_flags, CUstream_flags */
enum {
    LKV_CU_EVENT_DISABLE_TIMING = 2,
    LKV_CU_STREAM_DEFAULT = 0,
    LKV_CU_STREAM_NON_BLOCKING = 1
};

/* CUdevice_attribute values */
enum {
    LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    LKV_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    LKV_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    LKV_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
};

/* CUjit_option values */
enum {
    LKV_CU_JIT_ERROR_LOG_BUFFER = 5,           /* value: char * */
    LKV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 /* value: unsigned int, in and out */
};

#endif /* LKV_CUDA_API_H */
