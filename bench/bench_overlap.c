/* Eviction off the step (bench_overlap.h). The eviction falls due at the
 * W-th step of the period (every sequence stands at budget L, capacity
 * L + W); one more step follows, whose earlier layers a lane's evictions
 * of the later ones can run beside, and then the cache is drained, so work
 * the background moved past the last step is billed too. The steps are
 * synced one by one, as a decode loop that reads its logits is. */
#include "bench_overlap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"
#include "clock.h"
#include "error.h"

#define OVERLAP_RUNS 5 /* per mode, the median kept (--quick: 3) */
#define OVERLAP_WINDOW LKV_BENCH_OVERLAP_WINDOW

typedef struct period {
    double total_s;      /* every step and the drain */
    double evicting_s;   /* the step whose call raised the eviction count */
    double others_s;     /* the mean of the other steps */
    int lane;
} period;

/* Sequence 0 prefilled with L tokens at every layer, forked to the rest. */
static lkv_status open_cache(lkv_runtime *rt, const lkv_bench_settings *s,
                             const lkv_bench_decode_inputs *in, int32_t n,
                             lkv_eviction_timing when, lkv_cache **out)
{
    lkv_cache_config cfg = lkv_bench_batch_config(s, n);
    cfg.layers = LKV_BENCH_OVERLAP_LAYERS;
    cfg.eviction = when;
    cfg.policy.window = OVERLAP_WINDOW;
    cfg.capacity = s->batch_slots + OVERLAP_WINDOW;
    return lkv_bench_batch_open(rt, &cfg, in, s->batch_slots, out);
}

static lkv_status step_all_layers(lkv_runtime *rt, lkv_cache *c, const lkv_bench_decode_inputs *in,
                                  int32_t i, int32_t n, const int32_t *seqs, float *o)
{
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < LKV_BENCH_OVERLAP_LAYERS && st == LKV_OK; l++)
        st = lkv_bench_batch_step(c, in, i, l, n, seqs, o);
    return st == LKV_OK ? rt->ops->sync(rt->dev) : st;
}

/* W steps (the last evicts) and one after, each synced; the total is the
 * last two and the drain (stats read, which waits for what is still in
 * flight, then a sync): the steps before are the same work both ways and
 * only add noise. Inline, the stats read after each step (untimed) checks
 * that the evicting step is the W-th; in the background nothing is read
 * between steps, since a read would wait for the evictions and move that
 * wait out of the timing. */
static lkv_status run_period(lkv_runtime *rt, lkv_cache *c, const lkv_bench_decode_inputs *in,
                             int32_t n, const int32_t *seqs, float *o, int probe, period *out)
{
    lkv_cache_stats stats;
    lkv_status st = lkv_cache_get_stats(c, &stats);
    double others = 0.0;
    for (int32_t i = 0; i <= OVERLAP_WINDOW && st == LKV_OK; i++) {
        int64_t evictions = stats.evictions;
        double t0 = lkv_clock_seconds();
        st = step_all_layers(rt, c, in, i, n, seqs, o);
        double dt = lkv_clock_seconds() - t0;
        if (i >= OVERLAP_WINDOW - 1)
            out->total_s += dt;
        if (i == OVERLAP_WINDOW - 1)
            out->evicting_s = dt;
        else if (i < OVERLAP_WINDOW - 1)
            others += dt;
        if (st == LKV_OK && probe && (st = lkv_cache_get_stats(c, &stats)) == LKV_OK &&
            (stats.evictions > evictions) != (i == OVERLAP_WINDOW - 1))
            st = lkv_fail(LKV_INTERNAL, "step %d %s, the eviction was due at step %d", i + 1,
                          stats.evictions > evictions ? "evicted" : "did not evict",
                          OVERLAP_WINDOW);
    }
    double t0 = lkv_clock_seconds();
    if (st == LKV_OK)
        st = lkv_cache_get_stats(c, &stats);
    if (st == LKV_OK)
        st = rt->ops->sync(rt->dev);
    out->total_s += lkv_clock_seconds() - t0;
    out->others_s = others / (OVERLAP_WINDOW - 1);
    out->lane = stats.eviction_lane;
    return st;
}

/* The median of OVERLAP_RUNS periods on fresh caches. */
static lkv_status measure(lkv_runtime *rt, const lkv_bench_settings *s,
                          const lkv_bench_decode_inputs *in, int32_t n, lkv_eviction_timing when,
                          period *out)
{
    period runs[OVERLAP_RUNS];
    memset(runs, 0, sizeof runs);
    int32_t *seqs = malloc(sizeof(int32_t) * (size_t)n);
    float *o = malloc(sizeof(float) * (size_t)n * (size_t)in->shape.q_heads *
                      (size_t)in->shape.head_dim);
    lkv_status st = seqs && o ? LKV_OK : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    for (int32_t j = 0; j < n && st == LKV_OK; j++)
        seqs[j] = j;
    int count = s->quick ? 3 : OVERLAP_RUNS;
    for (int r = 0; r < count && st == LKV_OK; r++) {
        lkv_cache *c = NULL;
        st = open_cache(rt, s, in, n, when, &c);
        if (st == LKV_OK)
            st = run_period(rt, c, in, n, seqs, o, when == LKV_EVICTION_INLINE, &runs[r]);
        lkv_cache_destroy(c);
    }
    free(seqs);
    free(o);
    /* sort by total: at most three */
    for (int a = 0; a < count; a++)
        for (int b = a + 1; b < count; b++)
            if (runs[b].total_s < runs[a].total_s) {
                period t = runs[a];
                runs[a] = runs[b];
                runs[b] = t;
            }
    *out = runs[count / 2];
    return st;
}

void lkv_bench_overlap_run(lkv_runtime *rt, const lkv_bench_settings *s,
                           const lkv_bench_decode_inputs *in, int32_t n, lkv_bench_overlap *out)
{
    memset(out, 0, sizeof *out);
    out->layers = LKV_BENCH_OVERLAP_LAYERS;
    if (n > LKV_BENCH_OVERLAP_MAX_SEQUENCES) {
        out->status = LKV_UNSUPPORTED;
        snprintf(out->error, sizeof out->error, "measured up to %d sequences",
                 LKV_BENCH_OVERLAP_MAX_SEQUENCES);
        return;
    }
    period in_line, bg;
    lkv_status st = measure(rt, s, in, n, LKV_EVICTION_INLINE, &in_line);
    const char *which = "inline";
    if (st == LKV_OK) {
        st = measure(rt, s, in, n, LKV_EVICTION_BACKGROUND, &bg);
        which = "background";
    }
    if (st != LKV_OK) {
        out->status = st;
        snprintf(out->error, sizeof out->error, "%s: %.120s", which, lkv_last_error());
        return;
    }
    out->lane = bg.lane;
    out->inline_s = in_line.total_s;
    out->background_s = bg.total_s;
    out->evict_s = in_line.evicting_s - in_line.others_s;
    out->hidden = out->evict_s > 0.0 ? (out->inline_s - out->background_s) / out->evict_s : 0.0;
}
