/* Checks of paged caches (placement = paged) that every backend's test
 * runs alike: a paged cache and a compacting one fed the same tokens
 * (twin_caches.h), and what the paged one's pool holds. tests/test_paged.c
 * runs them on ref and cpu, tests/gpu_emu/test_gpu_emu_paged.c on the
 * CUDA/HIP kernels. */
#ifndef LKV_PAGED_CHECKS_H
#define LKV_PAGED_CHECKS_H

#include "test_util.h"

/* A cache of cfg with the placement, block size and pool given. */
lkv_cache *pc_make(lkv_runtime *rt, lkv_cache_config cfg, lkv_placement placement,
                   int32_t block, int32_t pool);

/* Reads back both caches' K and the paged cache's map: every slot's place
 * is in the pool and holds the compacting cache's K of that slot; unless
 * `forked`, no place serves two slots; the blocks the slots use are at most
 * blocks_in_use. */
void pc_expect_pool_holds_twin(const lkv_cache *compact, const lkv_cache *paged, int forked,
                               const char *what);

/* Every policy, compacting against paged with blocks of `block` slots
 * (twin_caches.h's run), then the pool read back. */
void pc_run_twins(lkv_runtime *rt, lkv_dtype dtype, lkv_gqa_mode gqa, lkv_eviction_timing when,
                  int32_t block);

/* Streaming keeps its sinks and the newest tokens: a prompt of 80 evicted
 * to 20 (at the first decode step) leaves the middle's blocks empty, and
 * they go back to the pool. The pool holds one such prompt and 7 blocks a
 * row besides (108 blocks of 4, short of the 8 rows x 96 slots the cache's
 * rows would take at capacity), so a second sequence's prompt fits only
 * once the first one's eviction has given its blocks back. Outputs equal a
 * compacting twin's at every step, on rt. */
void pc_expect_blocks_come_back(lkv_runtime *rt);

#endif
