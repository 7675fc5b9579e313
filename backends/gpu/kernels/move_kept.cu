// move_kept: a cache's plan applied to an engine's K or V from the kept
// lists select left on the device (backends/ref/ref_move_kept.c). Pass 0
// copies each moved slot's words into the scratch, pass 1 writes them to
// their slots, so a move whose destination is a later move's source cannot
// race; slots kept in place (kept[j] == j) are skipped by both. One thread
// per word, a warp on consecutive words of a slot (a d128 f16 head is one
// 256-byte access).
// Launch: block LKV_MOVE_BLOCK, x = blocks over the longest row's kept
// words, y = rows (both capped, grid-stride).
#include "engine_slot.h"

LKV_KERNEL(lkv_move_kept)(const int *kept_row, const int *n_kept, const unsigned *base,
                          const int *tab_row, const unsigned *at, const int *table,
                          const int *kept, unsigned *buf, unsigned *scratch, int n, int words,
                          int kept_stride, unsigned slot_stride, unsigned block_stride,
                          int block_size, int max_blocks, int back)
{
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        const int *row = kept + (unsigned long long)kept_row[i] * (unsigned long long)kept_stride;
        unsigned long long total = (unsigned long long)n_kept[i] * (unsigned long long)words;
        for (unsigned long long x = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             x < total; x += step) {
            int j = (int)(x / (unsigned long long)words);
            unsigned long long e = x - (unsigned long long)j * (unsigned long long)words;
            int s = row[j];
            if (s == j)
                continue;
            unsigned long long h = (unsigned long long)at[i] + x;
            if (back)
                buf[lkv_engine_slot(base, tab_row, table, i, j, slot_stride, block_stride,
                                  block_size, max_blocks) + e] = scratch[h];
            else
                scratch[h] = buf[lkv_engine_slot(base, tab_row, table, i, s, slot_stride,
                                               block_stride, block_size, max_blocks) + e];
        }
    }
}
