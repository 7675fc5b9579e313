/* An engine's K/V as lkv_kv_layout describes it: the checks and the slot
 * arithmetic that every call reading or moving the engine's buffers shares
 * (lkv_plan_apply moves slots, lkv_cache_observe_batch_qk reads K). */
#ifndef LAZYKV_CORE_KV_LAYOUT_H
#define LAZYKV_CORE_KV_LAYOUT_H

#include <stddef.h>

#include "lazykv.h"

/* The layout's fields on their own: sizes, buffers (V only when need_v),
 * block size and table. Errors start with `call`. */
lkv_status lkv_kv_layout_check(const lkv_kv_layout *kv, int need_v, const char *call);

/* Byte offset within a layer of physical slot j of sequence s, or
 * (size_t)-1 when its block-table entry is missing or outside the pool.
 * `table` replaces the layout's row of sequence s when not NULL (n_table
 * entries): a slot map's table. */
size_t lkv_kv_layout_slot(const lkv_kv_layout *kv, int32_t s, int32_t j, const int32_t *table,
                          int32_t n_table);

#endif
