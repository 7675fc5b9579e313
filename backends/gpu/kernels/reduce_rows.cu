// reduce_rows: row i of dst, over its first len[i] words, from `group`
// consecutive rows of src starting at row src_row[i]
// (backends/ref/ref_reduce_rows.c): max keeps v > m ? v : m in row order,
// mean is the double sum in row order over the group, rounded once, so
// both give the oracle's bits; a group of one is a copy. One thread per
// word, a warp on consecutive words of a row (coalesced); the group's rows
// are read one after the other, so a word costs `group` loads and a store.
// Launch: block LKV_REDUCE_BLOCK, x = blocks over the longest row, y = rows
// (both capped, grid-stride).
#include "lkv_gpu.h"

LKV_DEV float lkv_reduce_word(const float *first, unsigned long long stride, int group, int mean)
{
    if (mean) {
        double sum = 0.0;
        for (int j = 0; j < group; j++)
            sum += (double)first[(unsigned long long)j * stride];
        return (float)(sum / (double)group);
    }
    float m = first[0];
    for (int j = 1; j < group; j++) {
        float v = first[(unsigned long long)j * stride];
        m = v > m ? v : m;
    }
    return m;
}

LKV_KERNEL(lkv_reduce_rows)(const int *src_row, const int *dst_row, const int *len,
                            const float *src, float *dst, int n, int group, int mean,
                            int src_stride, int dst_stride)
{
    unsigned long long ss = (unsigned long long)src_stride;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        const float *first = src + (unsigned long long)src_row[i] * ss;
        float *out = dst + (unsigned long long)dst_row[i] * (unsigned long long)dst_stride;
        for (int e = (int)(blockIdx.x * blockDim.x + threadIdx.x); e < len[i];
             e += (int)(gridDim.x * blockDim.x))
            out[e] = lkv_reduce_word(first + e, ss, group, mean);
    }
}
