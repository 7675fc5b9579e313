/* An engine's K/V as lkv_kv_layout describes it: the checks and the slot
 * arithmetic that every call reading or moving the engine's buffers shares
 * (lkv_plan_apply moves slots, lkv_cache_observe_batch_qk reads K). */
#ifndef LAZYKV_CORE_KV_LAYOUT_H
#define LAZYKV_CORE_KV_LAYOUT_H

#include <stddef.h>

#include "backend.h"
#include "lazykv.h"

/* Which host buffers a call reads: the layout's k_layers, v_layers. */
#define LKV_LAYOUT_K 1
#define LKV_LAYOUT_V 2
/* lkv_plan_check only: the rows' kept lists are on the device (not read):
 * check the counts, and a block for every slot below n_before. */
#define LKV_PLAN_KEPT_ON_DEVICE 4

/* The layout's fields on their own: sizes, the host buffers named in
 * `buffers` (LKV_LAYOUT_K | LKV_LAYOUT_V; 0 for a call given device
 * arrays instead), block size and table. Errors start with `call`. */
lkv_status lkv_kv_layout_check(const lkv_kv_layout *kv, int buffers, const char *call);

/* No two elements (sequence or block, slot, head) of the layout overlap
 * when a dense sequence holds n_slots slots: sorted by stride, each stride
 * at least the bytes of everything it steps over (a head's head_dim
 * elements first). Catches a stride of 0 and a dtype wider than the
 * buffers' strides were made for. */
lkv_status lkv_kv_layout_check_disjoint(const lkv_kv_layout *kv, int32_t n_slots,
                                        const char *call);

/* What a device apply needs besides: a head's bytes and every stride
 * whole 32-bit words (the kernels move words). */
lkv_status lkv_kv_layout_check_words(const lkv_kv_layout *kv, const char *call);

/* Everything a plan's apply checks before it moves anything: the plan's
 * rows against the layout (kept ascending, below n_before, identity before
 * first_move, every slot in a block of the table), and for a paged layout
 * the blocks it frees, listed into out_freed (room for freed_cap, NULL to
 * count only) and counted in *out_n_freed. plan_apply.c. */
lkv_status lkv_plan_check(const lkv_eviction_plan *plan, const lkv_kv_layout *kv, int buffers,
                          int32_t *out_freed, int32_t freed_cap, int32_t *out_n_freed,
                          const char *call);

/* Byte offset within a layer of physical slot j of sequence s, or
 * (size_t)-1 when its block-table entry is missing or outside the pool.
 * `table` replaces the layout's row of sequence s when not NULL (n_table
 * entries): a slot map's table. */
size_t lkv_kv_layout_slot(const lkv_kv_layout *kv, int32_t s, int32_t j, const int32_t *table,
                          int32_t n_table);

/* The first n slots of row (seq, head): *out_base, the byte offset its
 * slots count from (the head's, plus the sequence's when dense), and
 * *out_reach, the end of the farthest byte they hold. -1 when every slot
 * below n has a block, else the first slot without one (nothing written
 * to *out_reach). */
int32_t lkv_kv_layout_row(const lkv_kv_layout *kv, int32_t seq, int32_t head, int32_t n,
                          uint64_t *out_base, uint64_t *out_reach);

/* The layout as the device ops take it (core/backend.h), with the rows'
 * word bases and table rows. Strides must be whole words
 * (lkv_kv_layout_check_words). */
lkv_engine_slots lkv_kv_layout_slots(const lkv_kv_layout *kv, const uint32_t *base,
                                     const int32_t *tab_row);

#endif
