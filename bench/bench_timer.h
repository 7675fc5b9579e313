/* Timing one op: warm-up runs, then timed runs of (issue, sync) on a
 * monotonic host clock; median and min of the timed runs. */
#ifndef LKV_BENCH_TIMER_H
#define LKV_BENCH_TIMER_H

#include "bench.h"
#include "runtime.h"

/* Issues the op under test; the timer syncs after it. */
typedef lkv_status (*lkv_bench_issue)(void *ctx);


/* Median of x[0..n) (sorts x in place); 0 for n = 0. */
double lkv_bench_median(double *x, int n);

/* Times `issue` on `rt` as the settings say. A failing run stops the timing
 * and is recorded in *out (status and message); out->reps counts the timed
 * runs that completed. */
void lkv_bench_time(lkv_runtime *rt, const lkv_bench_settings *s, lkv_bench_issue issue,
                    void *ctx, lkv_bench_timing *out);

#endif
