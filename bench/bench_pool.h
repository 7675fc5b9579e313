/* Sequences of mixed lengths under one cache: the K/V memory a compacting
 * cache reserves (every row at capacity) against what a paged one takes
 * (blocks of the pool in use), and the decode step of each. */
#ifndef LKV_BENCH_POOL_H
#define LKV_BENCH_POOL_H

#include "bench.h"
#include "bench_inputs.h"
#include "runtime.h"

/* Slots per block of the paged cache. */
#define LKV_BENCH_POOL_BLOCK 16

/* Sequence j's prompt among n: spread evenly from slots / 8 to slots (one
 * sequence: slots). */
int32_t lkv_bench_pool_prompt(int32_t j, int32_t n, int32_t slots);

/* n sequences prefilled with lkv_bench_pool_prompt tokens each, lazy at
 * budget slots and window W, capacity slots + W, then W steps of one
 * lkv_cache_decode_batch call each, compacting and paged, on `rt`; inputs
 * from `in` (max_len >= slots, steps >= W + n - 1). Needs a backend with
 * paged caches (out->status UNSUPPORTED otherwise). */
void lkv_bench_pool_run(lkv_runtime *rt, const lkv_bench_settings *s,
                        const lkv_bench_decode_inputs *in, int32_t n, lkv_bench_pool *out);

#endif
