// The device environment of the CPU SIMT emulator: what kernels/lkv_gpu.h
// promises kernels, for g++ with -DLKV_GPU_EMU. The scheduler
// (gpu_emu.cpp) runs the blocks of a launch one at a time on one OS thread,
// each thread of a block a fiber that runs until it reaches a sync point
// (__syncthreads or a shuffle); so plain memory operations need no atomicity
// and a `static` variable is memory every thread of the block shares.
//
// Where the emulator is stricter than a GPU on purpose:
//   - shared memory is filled with 0xff bytes (NaN, -1) before every block,
//     so a kernel that reads it before writing sees garbage, not the previous
//     block's values or zeros;
//   - between two barriers the warps of a block run one at a time, each as
//     far as it goes, first to last or last to first (alternating with the
//     block and the barrier), and a warp's lanes run one after the other to
//     their next sync point, in alternating order: so a race a missing
//     __syncthreads leaves shows in some block;
//   - every thread must reach the same __syncthreads (file and line), every
//     lane of a warp the same shuffle; anything else fails the launch.
#ifndef LKV_GPU_EMU_H
#define LKV_GPU_EMU_H

#ifndef __cplusplus
#error "gpu_emu.h is the kernels' environment: compile them as C++ (g++ -x c++ -DLKV_GPU_EMU)"
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// CUDA qualifiers with no meaning on the CPU. __restrict__ is g++'s own.
#define __device__
#define __global__
#define __host__
#define __forceinline__
#define __launch_bounds__(...)
// Shared memory is static storage in one section, which the scheduler
// poisons before each block (gpu_emu.cpp, poison_shared).
#define __shared__ static __attribute__((section("lkv_emu_shared")))

// ---- thread geometry -----------------------------------------------------

struct uint3 {
    unsigned int x, y, z;
};

// Written by the scheduler only: threadIdx changes at each fiber switch,
// which happens inside an out-of-line call (a sync point), so a kernel never
// holds a stale copy.
extern uint3 lkv_emu_thread_idx, lkv_emu_block_idx, lkv_emu_block_dim, lkv_emu_grid_dim;
extern int lkv_emu_warp_size;

static const uint3 &threadIdx = lkv_emu_thread_idx;
static const uint3 &blockIdx = lkv_emu_block_idx;
static const uint3 &blockDim = lkv_emu_block_dim;
static const uint3 &gridDim = lkv_emu_grid_dim;

static inline int lkv_warp(void) { return lkv_emu_warp_size; }

// ---- sync points (gpu_emu.cpp) ---------------------------------------------

enum { LKV_EMU_SHFL_XOR = 0, LKV_EMU_SHFL_IDX = 1 };

void lkv_emu_barrier(const char *file, int line);
std::uint32_t lkv_emu_shuffle(std::uint32_t bits, int kind, int arg, const char *file, int line);

// The call site (file and line) names the barrier: threads waiting at two
// different __syncthreads are divergent even though a GPU might let them
// pass. The memory clobbers keep values in memory across it, as the GPU
// barrier does.
static inline void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE())
{
    __asm__ __volatile__("" ::: "memory");
    lkv_emu_barrier(file, line);
    __asm__ __volatile__("" ::: "memory");
}

template <typename T> struct lkv_emu_shuffled {
    static_assert(std::is_same<T, int>::value || std::is_same<T, unsigned int>::value ||
                      std::is_same<T, float>::value,
                  "lkv_shfl and lkv_shfl_xor exchange int, unsigned or float");
    static T exchange(T v, int kind, int arg, const char *file, int line)
    {
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        bits = lkv_emu_shuffle(bits, kind, arg, file, line);
        std::memcpy(&v, &bits, sizeof bits);
        return v;
    }
};

// Lane ^ mask; a source lane outside the warp gives the caller its own value
// (as __shfl_xor_sync and HIP's __shfl_xor do).
template <typename T>
static inline T lkv_shfl_xor(T v, int mask, const char *file = __builtin_FILE(),
                             int line = __builtin_LINE())
{
    return lkv_emu_shuffled<T>::exchange(v, LKV_EMU_SHFL_XOR, mask, file, line);
}

// The value of lane `lane` modulo the warp width.
template <typename T>
static inline T lkv_shfl(T v, int lane, const char *file = __builtin_FILE(),
                         int line = __builtin_LINE())
{
    return lkv_emu_shuffled<T>::exchange(v, LKV_EMU_SHFL_IDX, lane, file, line);
}

// ---- numbers ---------------------------------------------------------------

static inline unsigned int __float_as_uint(float f)
{
    unsigned int u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned int u)
{
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
static inline int __float_as_int(float f)
{
    int i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}
static inline float __int_as_float(int i)
{
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

// binary16 to binary32 in integer arithmetic: exact for every input,
// subnormals normalised, infinities kept, NaN payloads kept.
static inline float lkv_half_to_float(unsigned short h)
{
    unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
    unsigned int exp = (h >> 10) & 0x1fu;
    unsigned int mant = h & 0x3ffu;
    unsigned int bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        // 0.mant x 2^-14: shift the leading 1 into the implicit position
        int e = -14;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            e--;
        }
        bits = sign | ((unsigned int)(e + 127) << 23) | ((mant & 0x3ffu) << 13);
    }
    return __uint_as_float(bits);
}

// min and max as CUDA device code overloads them for integers.
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }

// Kernels call these unqualified, as CUDA's math headers allow.
using std::isfinite;
using std::isinf;
using std::isnan;

// ---- vectors -----------------------------------------------------------------

// Aligned like CUDA's, and may_alias: kernels load 16-byte units of float or
// half data through them.
struct __attribute__((aligned(16), may_alias)) uint4 {
    unsigned int x, y, z, w;
};
struct __attribute__((aligned(16), may_alias)) int4 {
    int x, y, z, w;
};
struct __attribute__((aligned(16), may_alias)) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(8), may_alias)) uint2 {
    unsigned int x, y;
};
struct __attribute__((aligned(8), may_alias)) int2 {
    int x, y;
};
struct __attribute__((aligned(8), may_alias)) float2 {
    float x, y;
};

static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
    uint4 r = {x, y, z, w};
    return r;
}
static inline int4 make_int4(int x, int y, int z, int w)
{
    int4 r = {x, y, z, w};
    return r;
}
static inline float4 make_float4(float x, float y, float z, float w)
{
    float4 r = {x, y, z, w};
    return r;
}
static inline uint2 make_uint2(unsigned int x, unsigned int y)
{
    uint2 r = {x, y};
    return r;
}
static inline int2 make_int2(int x, int y)
{
    int2 r = {x, y};
    return r;
}
static inline float2 make_float2(float x, float y)
{
    float2 r = {x, y};
    return r;
}

// ---- atomics -------------------------------------------------------------------

// Nothing runs between a fiber's read and write (switches happen only at sync
// points), so a plain read-modify-write is atomic. Returns the old value;
// int addition wraps as on the GPU.
static inline int atomicAdd(int *p, int v)
{
    int old = *p;
    *p = (int)((unsigned int)old + (unsigned int)v);
    return old;
}
static inline unsigned int atomicAdd(unsigned int *p, unsigned int v)
{
    unsigned int old = *p;
    *p = old + v;
    return old;
}
static inline int atomicMax(int *p, int v)
{
    int old = *p;
    *p = max(old, v);
    return old;
}
static inline unsigned int atomicMax(unsigned int *p, unsigned int v)
{
    unsigned int old = *p;
    *p = max(old, v);
    return old;
}
static inline int atomicMin(int *p, int v)
{
    int old = *p;
    *p = min(old, v);
    return old;
}
static inline unsigned int atomicMin(unsigned int *p, unsigned int v)
{
    unsigned int old = *p;
    *p = min(old, v);
    return old;
}
static inline int atomicOr(int *p, int v)
{
    int old = *p;
    *p = old | v;
    return old;
}
static inline unsigned int atomicOr(unsigned int *p, unsigned int v)
{
    unsigned int old = *p;
    *p = old | v;
    return old;
}

#endif // LKV_GPU_EMU_H
