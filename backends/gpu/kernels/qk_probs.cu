// qk_probs: an engine's attention probabilities from its queries, its K in
// place and its log-sum-exp (backends/ref/ref_qk_probs.c): per slot a double
// dot product over d ascending, times the scale, exp of its distance to the
// lse in double, clamped to 1, rounded once, so each value is the oracle's
// but where CUDA's or HIP's double exp rounds otherwise than glibc's (an
// ulp of double, seen in f32 only at a rounding boundary). One thread per
// slot reading its head's dim elements, the K dtype an argument.
// Launch: block LKV_QK_BLOCK, x = blocks over the longest row, y = rows
// (both capped, grid-stride).
#include "engine_slot.h"

// Element d of the head whose first word is `w`: kind 0 f32, 1 f16, 2 bf16
// (uniform over the launch, so the branch costs no divergence).
LKV_DEV float lkv_qk_elem(const unsigned *k, unsigned long long w, int d, int kind)
{
    if (kind == 0)
        return __uint_as_float(k[w + (unsigned long long)d]);
    unsigned short h = ((const unsigned short *)k)[2 * w + (unsigned long long)d];
    return kind == 1 ? lkv_half_to_float(h) : lkv_bf16_to_float(h);
}

LKV_KERNEL(lkv_qk_probs)(const int *q_row, const int *lse_at, const int *len, const unsigned *base,
                         const int *tab_row, const int *out_row, const int *table, const float *q,
                         const float *lse, const unsigned *k, float *probs, int n, int dim,
                         int stride, float scale, unsigned slot_stride, unsigned block_stride,
                         int block_size, int max_blocks, int kind)
{
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        const float *x = q + (unsigned long long)q_row[i] * (unsigned long long)dim;
        double l = (double)lse[lse_at[i]];
        float *p = probs + (unsigned long long)out_row[i] * (unsigned long long)stride;
        for (int j = (int)(blockIdx.x * blockDim.x + threadIdx.x); j < len[i];
             j += (int)(gridDim.x * blockDim.x)) {
            unsigned long long w = lkv_engine_slot(base, tab_row, table, i, j, slot_stride,
                                                   block_stride, block_size, max_blocks);
            double dot = 0.0;
            for (int d = 0; d < dim; d++)
                dot += (double)x[d] * (double)lkv_qk_elem(k, w, d, kind);
            double e = exp(dot * (double)scale - l);
            p[j] = e > 1.0 ? 1.0f : (float)e;
        }
    }
}
