// The portability header: the one place where CUDA, HIP and the CPU SIMT
// emulator (tests/gpu_emu/, which runs these kernels in the test suite)
// differ. Kernels include only this and use only what it lists:
//
//   LKV_KERNEL(name)          an entry point, launched by name from the host
//                             (extern "C", so the module has the plain name)
//   LKV_KERNEL_RESIDENT(name, blocks)  the same, asking nvcc for registers
//                             that let `blocks` blocks of LKV_BLOCK_MAX share a
//                             multiprocessor (on NVIDIA: __launch_bounds__'s
//                             second argument; HIP's means waves per EU, so
//                             there and on the emulator it is LKV_KERNEL)
//   LKV_DEV                   a device helper function
//   __shared__, __syncthreads(), threadIdx/blockIdx/blockDim/gridDim (.x .y .z)
//   lkv_warp()                threads per warp: 32 on NVIDIA and RDNA, 64 on
//                             GCN/CDNA; never assume either
//   lkv_shfl_xor(v, mask)     butterfly exchange within a warp (int, unsigned,
//                             float); every lane of the warp must call it
//   lkv_shfl(v, lane)         read lane's value; every lane must call it
//   lkv_half_to_float(h)      binary16 bits (unsigned short) to float, exact
//   lkv_bf16_to_float(b)      bfloat16 bits (unsigned short) to float, exact
//                             (one definition below, for all three)
//   atomicAdd on int/unsigned (shared or global memory)
//   lkv_threadfence()         this thread's global writes are seen by every
//                             block before its later ones (__threadfence)
//   lkv_grid_wait(count, target)  called by every thread of the block at the
//                             same point, like __syncthreads, with block-uniform
//                             arguments: returns once *count >= target, where
//                             `count` (global memory) is a counter blocks of the
//                             same launch raise with atomicAdd after
//                             lkv_threadfence(); then what those blocks wrote
//                             before their atomicAdd is visible to every thread
//                             of this block. Only in a kernel launched
//                             cooperatively (lkv_gpu_driver.launch_cooperative:
//                             every block resident at once); anywhere else it
//                             may hang on a GPU (the emulator fails the launch)
//   uint4, float4, uint2, float2 and 16-byte loads through them
//   float math: expf, logf, fmaxf, fminf, sqrtf, isnan; double math: exp, log,
//   isnan (exp/log of a float is refused by the emulator: CUDA and HIP
//   would compute it in float); __float_as_uint, __uint_as_float, INFINITY
//   Nothing from the C or C++ standard headers: hiprtc has none.
//
// Blocks are one-dimensional and at most LKV_BLOCK_MAX threads, a multiple of
// 64 so a block is whole warps at either width. Shared memory is static.
// Numbers the host must agree with come from lkv_kernel_abi.h.
#ifndef LKV_GPU_H
#define LKV_GPU_H

#include "lkv_kernel_abi.h"

#if defined(LKV_GPU_EMU)
#include "gpu_emu.h"
#define LKV_KERNEL(name) extern "C" void name
#define LKV_KERNEL_RESIDENT(name, blocks) LKV_KERNEL(name)
#define LKV_DEV static inline
// blocks run one after another (gpu_emu.h): every write is seen already
LKV_DEV void lkv_threadfence(void) {}

#elif defined(__HIPCC__) || defined(__HIPCC_RTC__)
#ifndef __HIPCC_RTC__
#include <hip/hip_runtime.h>
#endif
#ifndef INFINITY /* hiprtc compiles without the C headers that define it */
#define INFINITY __builtin_huge_valf()
#endif
#define LKV_KERNEL(name) extern "C" __global__ void __launch_bounds__(LKV_BLOCK_MAX) name
#define LKV_KERNEL_RESIDENT(name, blocks) LKV_KERNEL(name)
#define LKV_DEV static __device__ __forceinline__
LKV_DEV int lkv_warp(void) { return warpSize; }
template <typename T> LKV_DEV T lkv_shfl_xor(T v, int mask) { return __shfl_xor(v, mask); }
template <typename T> LKV_DEV T lkv_shfl(T v, int lane) { return __shfl(v, lane); }
LKV_DEV void lkv_threadfence(void) { __threadfence(); }
LKV_DEV float lkv_half_to_float(unsigned short h)
{
    // clang's _Float16 converts exactly (subnormals included) on every AMD target
    union { unsigned short u; _Float16 f; } x;
    x.u = h;
    return (float)x.f;
}

#elif defined(__CUDACC__)
#include <cuda_fp16.h>
#define LKV_KERNEL(name) extern "C" __global__ void __launch_bounds__(LKV_BLOCK_MAX) name
#define LKV_KERNEL_RESIDENT(name, blocks)                                                        \
    extern "C" __global__ void __launch_bounds__(LKV_BLOCK_MAX, blocks) name
#define LKV_DEV static __device__ __forceinline__
LKV_DEV int lkv_warp(void) { return warpSize; }
template <typename T> LKV_DEV T lkv_shfl_xor(T v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
template <typename T> LKV_DEV T lkv_shfl(T v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
LKV_DEV void lkv_threadfence(void) { __threadfence(); }
LKV_DEV float lkv_half_to_float(unsigned short h) { return __half2float(__ushort_as_half(h)); }

#else
#error "backends/gpu/kernels/lkv_gpu.h: compile with nvcc, hipcc/hiprtc, or -DLKV_GPU_EMU"
#endif

#if !defined(LKV_GPU_EMU)
// Thread 0 spins on a volatile read (not cached in L1 on either vendor)
// until the counter is reached, then fences so the writes the counting
// blocks fenced before their atomicAdd are seen; the barrier hands that on
// to the block (as cooperative groups' grid sync does). The emulator's is
// in gpu_emu.h.
LKV_DEV void lkv_grid_wait(const unsigned int *count, unsigned int target)
{
    if (threadIdx.x == 0) {
        while (*(const volatile unsigned int *)count < target) {
        }
        lkv_threadfence();
    }
    __syncthreads();
}
#endif

// bfloat16 is the upper half of a binary32, so widening is a shift on every
// target (base/bf16.h's lkv_bf16_to_float on the host): NaN payloads and
// subnormals come through unchanged, with no conversion instruction.
LKV_DEV float lkv_bf16_to_float(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

#endif // LKV_GPU_H
