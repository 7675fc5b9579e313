/* The batched engine step's scaling (`lazykv bench --step-ratios`): one
 * decode step of a small model (4 layers, 8 query and 2 KV heads, head_dim
 * 64), one lkv_cache_decode_batch call per layer, with every sequence at
 * 256 to 400 slots, at batch 1, 8 and 32, in one run; the per-sequence time
 * at each batch over batch 1's, the figure issue 47 asks of cpu (<= 0.6 at
 * 32). */
#ifndef LKV_BENCH_STEP_H
#define LKV_BENCH_STEP_H

#include <stdio.h>

#include "bench.h"

/* Measures on every device of s->backends and prints the table to `out`.
 * LKV_OK when every measurement ran. */
lkv_status lkv_bench_step_ratios(const lkv_bench_settings *s, FILE *out);

#endif
