/* The timing loop shared by every op and the copy roofline. */
#include "bench_timer.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lkv_bench_median(double *x, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* One run: issue, then wait for the device; *out_s gets the elapsed time. */
static lkv_status run_once(lkv_runtime *rt, lkv_bench_issue issue, void *ctx, double *out_s)
{
    double t0 = lkv_clock_seconds();
    lkv_status st = issue(ctx);
    if (st == LKV_OK)
        st = rt->ops->sync(rt->dev);
    *out_s = lkv_clock_seconds() - t0;
    return st;
}

static void record_failure(lkv_bench_timing *out, lkv_status st)
{
    out->status = st;
    snprintf(out->error, sizeof out->error, "%s", lkv_last_error());
}

void lkv_bench_time(lkv_runtime *rt, const lkv_bench_settings *s, lkv_bench_issue issue,
                    void *ctx, lkv_bench_timing *out)
{
    memset(out, 0, sizeof *out);
    /* Start from an idle queue so earlier uploads are not billed to the op. */
    lkv_status st = rt->ops->sync(rt->dev);
    double elapsed = 0.0;
    /* A second warm-up only when the first was cheap: a slow op has already
     * paid its first-use costs (pipelines, page faults) and would double the
     * run time for nothing. */
    for (int w = 0; w < s->max_warmup && st == LKV_OK; w++) {
        st = run_once(rt, issue, ctx, &elapsed);
        if (elapsed > s->target_s / 4.0)
            break;
    }
    if (st != LKV_OK) {
        record_failure(out, st);
        return;
    }
    double samples[LKV_BENCH_MAX_SAMPLES], total = 0.0;
    int max_reps = s->max_reps < LKV_BENCH_MAX_SAMPLES ? s->max_reps : LKV_BENCH_MAX_SAMPLES;
    int n = 0;
    while (n < max_reps && (n < s->min_reps || total < s->target_s)) {
        if ((st = run_once(rt, issue, ctx, &samples[n])) != LKV_OK) {
            record_failure(out, st);
            out->reps = n;
            return;
        }
        total += samples[n++];
    }
    out->status = LKV_OK;
    out->reps = n;
    out->median_s = lkv_bench_median(samples, n);
    out->min_s = n ? samples[0] : 0.0; /* sorted by the median */
}
