// gather: span i of `words` 32-bit words from src[src_word[i]] to
// dst[dst_word[i]] (backends/ref/ref_gather.c). No destination overlaps a
// source or another destination, so every word moves independently: one
// thread per word over all spans, grid-stride, 64-bit indices (n * words may
// pass 2^32). A warp's lanes read consecutive words of a span, so a span of
// a K/V head (64 words for d128 f16) is one coalesced 256-byte access.
// Launch: block LKV_GATHER_BLOCK, x = blocks over n * words (capped).
#include "lkv_gpu.h"

LKV_KERNEL(lkv_gather_spans)(const unsigned *src_word, const unsigned *dst_word,
                             const unsigned *src, unsigned *dst, int n, int words)
{
    unsigned long long total = (unsigned long long)n * (unsigned long long)words;
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long x = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         x < total; x += step) {
        unsigned long long i = x / (unsigned long long)words;
        unsigned long long e = x - i * (unsigned long long)words;
        dst[(unsigned long long)dst_word[i] + e] = src[(unsigned long long)src_word[i] + e];
    }
}
