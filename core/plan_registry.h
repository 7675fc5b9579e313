/* The engine-owned caches alive in the process and the serial of each
 * one's last call. A plan (lkv_cache_get_plan) carries its cache's id and
 * the serial of the call it belongs to; the calls that apply plans look
 * both up here, so a stale plan, or one whose cache was destroyed, is
 * refused without reading the cache or the plan's rows. Process-wide,
 * behind one mutex. */
#ifndef LAZYKV_CORE_PLAN_REGISTRY_H
#define LAZYKV_CORE_PLAN_REGISTRY_H

#include <stdint.h>

#include "lazykv.h"

/* A new live cache: its id (never 0, never reused) and its registry slot,
 * at serial 0. */
lkv_status lkv_plan_registry_add(uint64_t *out_id, int32_t *out_slot);

/* The cache of `slot` is destroyed: a plan of it is refused from now on. */
void lkv_plan_registry_remove(int32_t slot);

/* The cache of `slot` makes a call that replaces its plan: its serial
 * advances, and the new serial is returned. */
uint64_t lkv_plan_registry_advance(int32_t slot);

/* A plan of a cache (plan->cache != 0) must be of that cache's last call,
 * and the K/V it is applied to of that cache's layers and heads, and of its
 * head_dim unless head_dim is -1 (a slot map has none). `what` names the
 * K/V ("layout", "map"). A hand-built plan (plan->cache 0) passes. */
lkv_status lkv_plan_check_identity(const lkv_eviction_plan *plan, int32_t layers, int32_t heads,
                                   int32_t head_dim, const char *what, const char *call);

#endif
