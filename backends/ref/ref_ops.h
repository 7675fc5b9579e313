/* The ref backend's ops (the oracle) and its fork-join split. cpu runs the
 * ops it has not made fast through these same functions (cpu_backend.c
 * says which), so each op keeps one reference implementation. */
#ifndef LKV_REF_OPS_H
#define LKV_REF_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "hostmem/hostmem.h"

/* Runs fn(ctx, begin, end) over [0, n_items) split across the device's
 * threads when `work` (a rough count of multiply-adds) makes threads pay.
 * Items must be independent; results then do not depend on the split. */
void lkv_ref_parallel(const lkv_device *dev, int n_items, double work,
                      void (*fn)(void *ctx, int begin, int end), void *ctx);

/* The first word of row i's slot j in an engine's layer (core/backend.h). */
static inline size_t lkv_ref_slot_word(const lkv_engine_slots *s, int32_t i, int32_t j)
{
    size_t w = s->base[i];
    if (s->block_size == 0)
        return w + (size_t)j * s->slot_stride;
    int32_t b = s->table[(size_t)s->tab_row[i] * (size_t)s->max_blocks +
                         (size_t)(j / s->block_size)];
    return w + (size_t)b * s->block_stride + (size_t)(j % s->block_size) * s->slot_stride;
}

lkv_status lkv_ref_attend(lkv_device *dev, const lkv_attend_args *args);
lkv_status lkv_ref_observe(lkv_device *dev, const lkv_observe_args *args);
lkv_status lkv_ref_score(lkv_device *dev, const lkv_score_args *args);
/* The last step of a score row: the prior_k slots a previous select kept
 * (args->prior_kept, when set) score +infinity. scores is listed row r's. */
void lkv_ref_score_prior(const lkv_score_args *args, int32_t r, float *scores);
lkv_status lkv_ref_select(lkv_device *dev, const lkv_select_args *args);
lkv_status lkv_ref_compact(lkv_device *dev, const lkv_compact_args *args);
lkv_status lkv_ref_store(lkv_device *dev, const lkv_store_args *args);
lkv_status lkv_ref_gather(lkv_device *dev, const lkv_gather_args *args);
lkv_status lkv_ref_reduce_rows(lkv_device *dev, const lkv_reduce_rows_args *args);
lkv_status lkv_ref_move_kept(lkv_device *dev, const lkv_move_kept_args *args);
lkv_status lkv_ref_qk_probs(lkv_device *dev, const lkv_qk_probs_args *args);
lkv_status lkv_ref_redundancy(lkv_device *dev, const lkv_redundancy_args *args);

#endif
