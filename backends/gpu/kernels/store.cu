// store: per entry e (one sequence and layer), tokens src_token[e] ..
// src_token[e] + count[e] - 1 of the f32 inputs k, v ([tokens][kv_heads]
// [head_dim]) go into slots slot0[e] .. of rows row0[e] + h, every cache head
// h reading KV head h * kv_heads / cache_heads, rounded to the storage type;
// token j gets pos = position0[e] + j, state_a = last_init[e], state_b = 0,
// state_f = 0 (backends/cpu/cpu_store.c). In a cache that fills holes
// (phys not null: core/backend.h) a slot's K/V go to its place
// phys[row][slot] in the row (in the pool when paged: kv_cap, the K/V row
// stride in slots, is then 0); positions and states stay at the slot.
//
// Inputs may come from device memory nobody checked, so the cache is kept
// finite: NaN and infinities are stored as +0, a finite value beyond the
// type's largest as the largest with its sign. The rule and the rounding
// are integer arithmetic on the float's bits (no conversion intrinsics, no
// flush-to-zero): the bits equal base/dtype.h's lkv_dtype_store on every
// target, f16 subnormals and rounding ties included.
//
// Launch: block LKV_STORE_BLOCK (any multiple of 64), y = entries
// (grid-stride over n_entries), x = blocks striding over the entry's
// cache_heads * count * head_dim elements; the thread of column 0 of a slot
// also writes its pos and states. Offsets are 64-bit.
#include "lkv_gpu.h"

#define LKV_STORE_F32_LARGEST 0x7f7fffffu  // FLT_MAX
#define LKV_STORE_F16_LARGEST 0x477fe000u  // 65504
#define LKV_STORE_BF16_LARGEST 0x7f7f0000u // 3.38953139e38

// The value store keeps of x, as float bits: +0 for NaN and infinities,
// +-largest beyond it (bits of positive floats order like their values).
LKV_DEV unsigned int lkv_store_finite(float x, unsigned int largest)
{
    unsigned int u = __float_as_uint(x), mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u)
        return 0u;
    return mag > largest ? (u & 0x80000000u) | largest : u;
}

// binary32 bits (finite, |x| <= 65504) to binary16, nearest even: the
// integer steps of base/fp16.h's lkv_float_to_half.
LKV_DEV unsigned short lkv_store_round_half(unsigned int x)
{
    unsigned int sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
    if (mag < 0x38800000u) { // below the least normal half: subnormal or 0
        if (mag < 0x33000000u)
            return (unsigned short)sign;
        unsigned int man = (mag & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(mag >> 23); // 14..24
        unsigned int half_man = man >> shift, rem = man & ((1u << shift) - 1u);
        unsigned int mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half_man & 1u)))
            half_man++;
        return (unsigned short)(sign | half_man);
    }
    unsigned int h = (mag >> 13) - (112u << 10), rem = mag & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; // may carry into the exponent, which is the right rounding
    return (unsigned short)(sign | h);
}

// binary32 bits (finite) to bfloat16, nearest even (base/bf16.h).
LKV_DEV unsigned short lkv_store_round_bf16(unsigned int x)
{
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}

// The storage code of x: f32 bits, or f16 / bf16 bits in the low half.
#define LKV_STORE_F32 0
#define LKV_STORE_F16 1
#define LKV_STORE_BF16 2
template <int D> LKV_DEV unsigned int lkv_store_code(float x)
{
    if (D == LKV_STORE_F16)
        return lkv_store_round_half(lkv_store_finite(x, LKV_STORE_F16_LARGEST));
    if (D == LKV_STORE_BF16)
        return lkv_store_round_bf16(lkv_store_finite(x, LKV_STORE_BF16_LARGEST));
    return lkv_store_finite(x, LKV_STORE_F32_LARGEST);
}

// The entry lists, one device array each, as the host uploads them.
struct lkv_store_lists {
    const int *row0, *slot0, *count, *src_token, *position0, *last_init;
    const int *phys; // the hole map, or null
};

template <typename T, int D>
LKV_DEV void lkv_store_entry(const lkv_store_lists &l, int e, const float *k_in, const float *v_in,
                             T *k, T *v, int *pos, int *state_a,
                             int *state_b, float *state_f, int cap, int kv_cap, int dim,
                             int kv_heads, int cache_heads)
{
    long long count = l.count[e];
    long long items = (long long)cache_heads * count * (long long)dim;
    long long stride = (long long)gridDim.x * (long long)blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += stride) {
        int col = (int)(i % dim);
        long long j = i / dim % count;
        int h = (int)(i / dim / count);
        int kvh = h * kv_heads / cache_heads;
        unsigned long long row = (unsigned long long)(l.row0[e] + h);
        unsigned long long slot = row * (unsigned long long)cap + (unsigned long long)(l.slot0[e] + j);
        unsigned long long src = ((unsigned long long)(l.src_token[e] + j) * kv_heads + kvh) * dim + col;
        unsigned long long at = l.phys ? row * (unsigned long long)kv_cap +
                                              (unsigned long long)l.phys[slot]
                                       : slot;
        unsigned long long dst = at * (unsigned long long)dim + col;
        k[dst] = (T)lkv_store_code<D>(k_in[src]);
        v[dst] = (T)lkv_store_code<D>(v_in[src]);
        if (col == 0) {
            pos[slot] = l.position0[e] + (int)j;
            state_a[slot] = l.last_init[e];
            state_b[slot] = 0;
            state_f[slot] = 0.0f;
        }
    }
}

template <typename T, int D>
LKV_DEV void lkv_store_rows(const int *row0, const int *slot0, const int *count,
                            const int *src_token, const int *position0, const int *last_init,
                            const float *k_in, const float *v_in, T *k, T *v, int *pos,
                            int *state_a, int *state_b, float *state_f, const int *phys, int cap,
                            int kv_cap, int dim, int kv_heads, int cache_heads, int n_entries)
{
    lkv_store_lists l = {row0, slot0, count, src_token, position0, last_init, phys};
    for (int e = (int)blockIdx.y; e < n_entries; e += (int)gridDim.y)
        lkv_store_entry<T, D>(l, e, k_in, v_in, k, v, pos, state_a, state_b, state_f, cap,
                              kv_cap, dim, kv_heads, cache_heads);
}

// f32 elements are stored as their bits (unsigned int), so the three
// kernels differ only in the element type and code.
#define LKV_STORE_KERNEL(name, T, D)                                                           \
    LKV_KERNEL(name)(const int *row0, const int *slot0, const int *count, const int *src_token, \
                     const int *position0, const int *last_init, const float *k_in,            \
                     const float *v_in, T *k, T *v, int *pos, int *state_a, int *state_b,      \
                     float *state_f, const int *phys, int cap, int kv_cap, int dim,            \
                     int kv_heads, int cache_heads, int n_entries)                             \
    {                                                                                          \
        lkv_store_rows<T, D>(row0, slot0, count, src_token, position0, last_init, k_in, v_in,  \
                             k, v, pos, state_a, state_b, state_f, phys, cap, kv_cap, dim,     \
                             kv_heads, cache_heads, n_entries);                                \
    }

LKV_STORE_KERNEL(lkv_store_f32, unsigned int, LKV_STORE_F32)
LKV_STORE_KERNEL(lkv_store_f16, unsigned short, LKV_STORE_F16)
LKV_STORE_KERNEL(lkv_store_bf16, unsigned short, LKV_STORE_BF16)
