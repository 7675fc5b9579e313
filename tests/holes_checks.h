/* Checks of hole filling (placement = holes) that every backend's test
 * runs alike: twin caches, one compacting and one filling holes, fed the
 * same tokens (outputs bit for bit, the same slots, state and counters),
 * and what the buffers hold (each row's map a permutation whose places hold
 * the compacting cache's K/V; an evicting step writes one place a row).
 * tests/test_holes.c runs them on ref, cpu, Vulkan and OpenCL,
 * tests/gpu_emu/test_gpu_emu_holes.c on the CUDA/HIP kernels. */
#ifndef LKV_HOLES_CHECKS_H
#define LKV_HOLES_CHECKS_H

#include "test_util.h"

/* A cache of cfg with the placement given. */
lkv_cache *hc_make(lkv_runtime *rt, lkv_cache_config cfg, lkv_placement placement);

/* A compacting cache and one that fills holes, lazy at budget B, window W. */
void hc_lazy_twins(lkv_runtime *rt, lkv_cache_config cfg, lkv_dtype dtype, int32_t budget,
                   int32_t window, lkv_cache **out_compact, lkv_cache **out_holes);

/* Every policy, compacting against filling holes (twin_caches.h's run). */
void hc_run_twins(lkv_runtime *rt, lkv_dtype dtype, lkv_gqa_mode gqa, lkv_eviction_timing when);

/* 200 steps on rows of 97 slots (f32, head_dim 64): off every alignment,
 * and under small bindings (LAZYKV_OPENCL_MAX_RANGE) windows with a skew. */
void hc_long_rows(lkv_runtime *rt, const char *what);

/* Every row's map is a permutation of the places; slot j's K through it is
 * the compacting cache's slot j. */
void hc_expect_same_k(const lkv_cache *compact, const lkv_cache *holes, int32_t step);

/* One sequence and layer, lazy: every decode step writes exactly one place
 * a row in the cache that fills holes, more in the compacting one at an
 * evicting step; K through the map stays the compacting cache's. */
void hc_eviction_moves_no_kv(lkv_runtime *rt, int32_t dim, lkv_dtype dtype);

#endif
