// The device environment of the CPU SIMT emulator: what backends/gpu/kernels/lkv_gpu.h
// promises kernels, for g++ with -DLKV_GPU_EMU, and nothing more. It
// includes no standard header, so a kernel that calls anything the contract
// does not list (sqrt, min, make_uint4, uint32_t, std::...) fails to build
// here rather than on one GPU toolchain only. The scheduler
// (gpu_emu.cpp) runs the blocks of a launch one at a time on one OS thread,
// each thread of a block a fiber that runs until it reaches a sync point
// (__syncthreads, lkv_grid_wait or a shuffle); so plain memory operations
// need no atomicity and a `static` variable is memory every thread of the
// block shares. A block waiting at an lkv_grid_wait in a cooperative launch
// is parked while other blocks run (gpu_emu.cpp).
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
//   - every thread must reach the same __syncthreads or lkv_grid_wait (file
//     and line; the same arguments for lkv_grid_wait), every lane of a warp
//     the same shuffle; anything else fails the launch;
//   - an lkv_grid_wait that would have to wait fails a launch that is not
//     cooperative, and one that could never return fails a cooperative one.
#ifndef LKV_GPU_EMU_H
#define LKV_GPU_EMU_H

#ifndef __cplusplus
#error "gpu_emu.h is the kernels' environment: compile them as C++ (g++ -x c++ -DLKV_GPU_EMU)"
#endif

static_assert(sizeof(unsigned int) == 4 && sizeof(float) == 4,
              "the emulator exchanges 32-bit lanes");

// Shared memory is static storage in one section, which the scheduler
// poisons before each block (gpu_emu.cpp, poison_shared).
#define __shared__ static __attribute__((section("lkv_emu_shared")))

// ---- thread geometry -----------------------------------------------------

// Not CUDA's uint3/dim3: HIP's threadIdx has another type, so kernels read
// the members and never name the type.
struct lkv_emu_dim3 {
    unsigned int x, y, z;
};

// Written by the scheduler only: threadIdx changes at each fiber switch,
// which happens inside an out-of-line call (a sync point), so a kernel never
// holds a stale copy.
extern lkv_emu_dim3 lkv_emu_thread_idx, lkv_emu_block_idx, lkv_emu_block_dim, lkv_emu_grid_dim;
extern int lkv_emu_warp_size;

static const lkv_emu_dim3 &threadIdx = lkv_emu_thread_idx;
static const lkv_emu_dim3 &blockIdx = lkv_emu_block_idx;
static const lkv_emu_dim3 &blockDim = lkv_emu_block_dim;
static const lkv_emu_dim3 &gridDim = lkv_emu_grid_dim;

static inline int lkv_warp(void) { return lkv_emu_warp_size; }

// ---- sync points (gpu_emu.cpp) ---------------------------------------------

enum { LKV_EMU_SHFL_XOR = 0, LKV_EMU_SHFL_IDX = 1 };

void lkv_emu_barrier(const char *file, int line);
unsigned int lkv_emu_shuffle(unsigned int bits, int kind, int arg, const char *file, int line);

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

// A barrier that also waits until *count >= target, count being a global
// counter the grid's blocks raise (lkv_gpu.h). Every thread of the block
// reaches it with the same arguments, as a __syncthreads. When the
// condition holds the block goes on at once; when not, in a cooperative
// launch the scheduler parks the block (its fibers and shared memory kept)
// and runs others until it holds, and in any other launch the launch fails:
// on a GPU the block could wait for blocks that never become resident.
void lkv_emu_grid_wait(const unsigned int *count, unsigned int target, const char *file,
                       int line);

static inline void lkv_grid_wait(const unsigned int *count, unsigned int target,
                                 const char *file = __builtin_FILE(),
                                 int line = __builtin_LINE())
{
    __asm__ __volatile__("" ::: "memory");
    lkv_emu_grid_wait(count, target, file, line);
    __asm__ __volatile__("" ::: "memory");
}

// Only the three types the contract lets a shuffle carry.
template <typename T> struct lkv_emu_lane_type {
    static constexpr bool ok = false;
};
template <> struct lkv_emu_lane_type<int> {
    static constexpr bool ok = true;
};
template <> struct lkv_emu_lane_type<unsigned int> {
    static constexpr bool ok = true;
};
template <> struct lkv_emu_lane_type<float> {
    static constexpr bool ok = true;
};

template <typename T> struct lkv_emu_shuffled {
    static_assert(lkv_emu_lane_type<T>::ok,
                  "lkv_shfl and lkv_shfl_xor exchange int, unsigned or float");
    static T exchange(T v, int kind, int arg, const char *file, int line)
    {
        unsigned int bits;
        __builtin_memcpy(&bits, &v, sizeof bits);
        bits = lkv_emu_shuffle(bits, kind, arg, file, line);
        __builtin_memcpy(&v, &bits, sizeof bits);
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
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned int u)
{
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
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

// The math the contract lists, called unqualified as on the GPU; the host's
// libm computes them (error bounds differ from the device libraries: the
// README says so). INFINITY is spelt as glibc spells it, so a later
// <math.h> redefines it identically.
#define INFINITY (__builtin_inff ())
static inline float expf(float x) { return __builtin_expf(x); }
static inline float logf(float x) { return __builtin_logf(x); }
static inline float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static inline float fminf(float a, float b) { return __builtin_fminf(a, b); }
static inline float sqrtf(float x) { return __builtin_sqrtf(x); }
static inline double exp(double x) { return __builtin_exp(x); }
static inline double log(double x) { return __builtin_log(x); }
// CUDA and HIP overload exp and log for float (in float precision) where a
// C compiler would promote to double; refused, so a kernel writes expf/logf
// or a (double) cast and every platform computes the same thing.
float exp(float) = delete;
float log(float) = delete;
static inline bool isnan(float x) { return __builtin_isnan(x); }
static inline bool isnan(double x) { return __builtin_isnan(x); }

// ---- vectors -----------------------------------------------------------------

// Aligned like CUDA's, and may_alias: kernels load 16-byte units of float or
// half data through them.
struct __attribute__((aligned(16), may_alias)) uint4 {
    unsigned int x, y, z, w;
};
struct __attribute__((aligned(16), may_alias)) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(8), may_alias)) uint2 {
    unsigned int x, y;
};
struct __attribute__((aligned(8), may_alias)) float2 {
    float x, y;
};

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

#endif // LKV_GPU_EMU_H
