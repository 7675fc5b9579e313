/* A whole decode step through the public API: LazyEviction at a budget
 * against the full cache, at the same sequence length. */
#ifndef LKV_BENCH_DECODE_H
#define LKV_BENCH_DECODE_H

#include "bench.h"
#include "bench_inputs.h"
#include "bench_progress.h"
#include "runtime.h"

/* Decode tokens the comparison needs beyond the prompt. */
int32_t lkv_bench_decode_steps(const lkv_bench_settings *s);

void lkv_bench_decode_run(lkv_runtime *rt, const lkv_bench_settings *s,
                          const lkv_bench_decode_inputs *in, int32_t length, const char *label,
                          lkv_bench_progress *progress, lkv_bench_decode *out);

#endif
