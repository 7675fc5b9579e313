/* The five backend ops timed on one backend at one cache length. */
#ifndef LKV_BENCH_OPS_H
#define LKV_BENCH_OPS_H

#include "bench.h"
#include "bench_inputs.h"
#include "bench_progress.h"
#include "runtime.h"

/* Uploads the first `length` slots of `in` to fresh buffers on `rt` and
 * times every op into out[op]; a failure is recorded there, never fatal.
 * `label` names the device and shape on the progress line. */
void lkv_bench_ops_run(lkv_runtime *rt, const lkv_bench_settings *s,
                       const lkv_bench_op_inputs *in, int32_t length, const char *label,
                       lkv_bench_progress *progress, lkv_bench_timing out[LKV_BENCH_OP_COUNT]);

#endif
