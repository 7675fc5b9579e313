// Where an engine's slot is (core/backend.h, lkv_engine_slots): the first
// word of row i's slot j, dense (block_size 0) or through the block table.
// The kernels that read or move an engine's K/V in place share it
// (move_kept.cu, qk_probs.cu).
#ifndef LKV_ENGINE_SLOT_H
#define LKV_ENGINE_SLOT_H
#include "lkv_gpu.h"

LKV_DEV unsigned long long lkv_engine_slot(const unsigned *base, const int *tab_row,
                                           const int *table, int i, int j, unsigned slot_stride,
                                           unsigned block_stride, int block_size, int max_blocks)
{
    unsigned long long w = base[i];
    if (block_size == 0)
        return w + (unsigned long long)j * slot_stride;
    int b = table[(unsigned long long)tab_row[i] * (unsigned long long)max_blocks +
                  (unsigned long long)(j / block_size)];
    return w + (unsigned long long)b * block_stride +
           (unsigned long long)(j % block_size) * slot_stride;
}
#endif
