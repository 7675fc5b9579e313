/* The batched decode step: one lkv_cache_decode_batch call for n sequences of
 * one cache against n per-sequence lkv_cache_decode calls, at one shape, with
 * the device counters (lkv_runtime_get_counters) each step costs. */
#ifndef LKV_BENCH_BATCH_H
#define LKV_BENCH_BATCH_H

#include "bench.h"
#include "bench_inputs.h"
#include "bench_progress.h"
#include "runtime.h"

/* Decode tokens the batch measurement needs beyond the prompt: sequence j
 * takes token i + j at step i, so a step's rows lie side by side. */
int32_t lkv_bench_batch_tokens(const lkv_bench_settings *s);

/* Step `step` of n sequences of cache c at `layer` in one
 * lkv_cache_decode_batch call (host arrays): sequence seqs[j] takes input
 * token step + j. */
lkv_status lkv_bench_batch_step(lkv_cache *c, const lkv_bench_decode_inputs *in, int32_t step,
                                int32_t layer, int32_t n, const int32_t *seqs, float *out);

/* A cache of `cfg`, sequence 0 prefilled with the first `slots` input
 * tokens at every layer and forked to every other sequence. */
lkv_status lkv_bench_batch_open(lkv_runtime *rt, const lkv_cache_config *cfg,
                                const lkv_bench_decode_inputs *in, int32_t slots,
                                lkv_cache **out);

/* Both ways of stepping `sequences` sequences of settings->batch_slots
 * slots on `rt`, inputs from `in` (max_len >= batch_slots, steps >=
 * lkv_bench_batch_tokens). Failures are recorded in *out. */
void lkv_bench_batch_run(lkv_runtime *rt, const lkv_bench_settings *s,
                         const lkv_bench_decode_inputs *in, int32_t sequences,
                         const char *label, lkv_bench_progress *progress, lkv_bench_batch *out);

#endif
