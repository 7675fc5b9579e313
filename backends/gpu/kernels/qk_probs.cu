// qk_probs: an engine's attention probabilities from its queries, its K in
// place and its log-sum-exp (backends/ref/ref_qk_probs.c): per slot a double
// dot product over d ascending, times the scale, exp of its distance to the
// lse in double, clamped to 1, rounded once, so each value is the oracle's
// but where CUDA's or HIP's double exp rounds otherwise than glibc's (an
// ulp of double, seen in f32 only at a rounding boundary). One thread per
// slot reading its head's dim elements; one kernel per K dtype.
// Launch: block LKV_QK_BLOCK, x = blocks over the longest row, y = rows
// (both capped, grid-stride).
#include "lkv_gpu.h"

LKV_DEV unsigned long long lkv_qk_slot(const unsigned *base, const int *tab_row, const int *table,
                                       int i, int j, unsigned slot_stride, unsigned block_stride,
                                       int block_size, int max_blocks)
{
    unsigned long long w = base[i];
    if (block_size == 0)
        return w + (unsigned long long)j * slot_stride;
    int b = table[(unsigned long long)tab_row[i] * (unsigned long long)max_blocks +
                  (unsigned long long)(j / block_size)];
    return w + (unsigned long long)b * block_stride +
           (unsigned long long)(j % block_size) * slot_stride;
}

// Element d of the head whose first word is `w`: 0 f32, 1 f16, 2 bf16.
template <int KIND> LKV_DEV float lkv_qk_elem(const unsigned *k, unsigned long long w, int d)
{
    if (KIND == 0)
        return __uint_as_float(k[w + (unsigned long long)d]);
    unsigned short h = ((const unsigned short *)k)[2 * w + (unsigned long long)d];
    return KIND == 1 ? lkv_half_to_float(h) : lkv_bf16_to_float(h);
}

template <int KIND>
LKV_DEV void lkv_qk_rows(const int *q_row, const int *lse_at, const int *len, const unsigned *base,
                         const int *tab_row, const int *out_row, const int *table, const float *q,
                         const float *lse, const unsigned *k, float *probs, int n, int dim,
                         int stride, float scale, unsigned slot_stride, unsigned block_stride,
                         int block_size, int max_blocks)
{
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        const float *x = q + (unsigned long long)q_row[i] * (unsigned long long)dim;
        double l = (double)lse[lse_at[i]];
        float *p = probs + (unsigned long long)out_row[i] * (unsigned long long)stride;
        for (int j = (int)(blockIdx.x * blockDim.x + threadIdx.x); j < len[i];
             j += (int)(gridDim.x * blockDim.x)) {
            unsigned long long w = lkv_qk_slot(base, tab_row, table, i, j, slot_stride,
                                               block_stride, block_size, max_blocks);
            double dot = 0.0;
            for (int d = 0; d < dim; d++)
                dot += (double)x[d] * (double)lkv_qk_elem<KIND>(k, w, d);
            double e = exp(dot * (double)scale - l);
            p[j] = e > 1.0 ? 1.0f : (float)e;
        }
    }
}

#define LKV_QK_KERNEL(name, kind)                                                             \
    LKV_KERNEL(name)(const int *q_row, const int *lse_at, const int *len, const unsigned *base, \
                     const int *tab_row, const int *out_row, const int *table, const float *q,  \
                     const float *lse, const unsigned *k, float *probs, int n, int dim,         \
                     int stride, float scale, unsigned slot_stride, unsigned block_stride,      \
                     int block_size, int max_blocks)                                            \
    {                                                                                           \
        lkv_qk_rows<kind>(q_row, lse_at, len, base, tab_row, out_row, table, q, lse, k, probs, \
                          n, dim, stride, scale, slot_stride, block_stride, block_size,         \
                          max_blocks);                                                          \
    }
LKV_QK_KERNEL(lkv_qk_probs_f32, 0)
LKV_QK_KERNEL(lkv_qk_probs_f16, 1)
LKV_QK_KERNEL(lkv_qk_probs_bf16, 2)
#undef LKV_QK_KERNEL
