/* The decode step as an application meets it: lkv_cache_prefill, then timed
 * lkv_cache_decode calls (append, attend, observe, and every W steps the
 * batched eviction), each followed by a sync so queued eviction work is
 * billed to the step that caused it.
 *
 * Both caches stand at the same sequence length L. The full cache holds all
 * L tokens. The lazy cache stands where a long LazyEviction decode settles:
 * the last B = budget tokens of the prompt cached (positions L - B .. L - 1),
 * growing to B + W and evicting back to B every W steps. Its timed steps are
 * exactly one period, so their mean includes one eviction and the slowest
 * step is the evicting one. Peak and reserved KV memory come from
 * lkv_cache_get_stats; capacity is what each needs (B + W, L + steps). */
#include "bench_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timer.h"
#include "error.h"
#include "clock.h"

#define LAZY_WARMUP 1
#define FULL_WARMUP 2

int32_t lkv_bench_decode_steps(const lkv_bench_settings *s)
{
    int32_t lazy = LAZY_WARMUP + s->window, full = FULL_WARMUP + s->full_steps;
    return lazy > full ? lazy : full;
}

typedef struct step_times {
    double sum_s, max_s;
    double evict_s; /* the steps that evicted (the cache's eviction count rose) */
    int32_t evicting;
} step_times;

/* Decodes steps [first, first + count) of the inputs; times them if `times`. */
static lkv_status decode_steps(lkv_runtime *rt, lkv_cache *c, const lkv_bench_decode_inputs *in,
                               int32_t first, int32_t count, float *out, step_times *times)
{
    size_t kvs = (size_t)in->shape.kv_heads * (size_t)in->shape.head_dim;
    size_t qs = (size_t)in->shape.q_heads * (size_t)in->shape.head_dim;
    for (int32_t i = first; i < first + count; i++) {
        size_t tok = (size_t)in->max_len + (size_t)i;
        lkv_decode_io io = {in->q + (size_t)i * qs, in->k + tok * kvs, in->v + tok * kvs, out,
                            LKV_MEMORY_HOST};
        lkv_cache_stats before, after;
        lkv_status st = lkv_cache_get_stats(c, &before);
        double t0 = lkv_clock_seconds();
        if (st == LKV_OK)
            st = lkv_cache_decode(c, 0, 0, &io);
        if (st == LKV_OK)
            st = rt->ops->sync(rt->dev);
        double dt = lkv_clock_seconds() - t0;
        if (st == LKV_OK)
            st = lkv_cache_get_stats(c, &after);
        if (st != LKV_OK)
            return st;
        if (times) {
            times->sum_s += dt;
            if (dt > times->max_s)
                times->max_s = dt;
            if (after.evictions > before.evictions) {
                times->evict_s += dt;
                times->evicting++;
            }
        }
    }
    return LKV_OK;
}

static lkv_cache_config config_for(const lkv_bench_shape *sh, int32_t capacity)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = 1;
    cfg.q_heads = sh->q_heads;
    cfg.kv_heads = sh->kv_heads;
    cfg.head_dim = sh->head_dim;
    cfg.dtype = sh->dtype;
    cfg.capacity = capacity;
    return cfg;
}

/* Prefills `n` prompt tokens ending at sequence length `length`, then runs
 * `warmup` untimed and `timed` timed steps; stats of the cache at the end. */
static lkv_status run_cache(lkv_runtime *rt, const lkv_cache_config *cfg,
                            const lkv_bench_decode_inputs *in, int32_t length, int32_t n,
                            int32_t warmup, int32_t timed, step_times *times,
                            lkv_cache_stats *stats)
{
    size_t kvs = (size_t)in->shape.kv_heads * (size_t)in->shape.head_dim;
    float *out = malloc(sizeof(float) * (size_t)in->shape.q_heads * (size_t)in->shape.head_dim);
    if (!out)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a decode output");
    lkv_cache *c = NULL;
    lkv_status st = lkv_cache_create(rt, cfg, &c);
    if (st == LKV_OK) {
        size_t first = (size_t)(length - n);
        lkv_prefill_io io = {.n_tokens = n, .k = in->k + first * kvs, .v = in->v + first * kvs,
                             .first_position = (int32_t)first, .memory = LKV_MEMORY_HOST};
        st = lkv_cache_prefill(c, 0, 0, &io);
    }
    if (st == LKV_OK)
        st = decode_steps(rt, c, in, 0, warmup, out, NULL);
    if (st == LKV_OK)
        st = decode_steps(rt, c, in, warmup, timed, out, times);
    if (st == LKV_OK)
        st = lkv_cache_get_stats(c, stats);
    lkv_cache_destroy(c);
    free(out);
    return st;
}

/* The mean of the steps that evicted, 0 when none did. */
static double evicting_ms(const step_times *t)
{
    return t->evicting ? 1e3 * t->evict_s / t->evicting : 0.0;
}

static void record_failure(lkv_bench_decode *out, lkv_status st, const char *which)
{
    out->status = st;
    snprintf(out->error, sizeof out->error, "%s: %s", which, lkv_last_error());
}

/* The lazy run again with hole filling, inline and in the background, on a
 * backend that has it; then paged, inline, on one that has a pool. */
static lkv_status run_placements(lkv_runtime *rt, const lkv_bench_settings *s,
                                 const lkv_bench_decode_inputs *in, lkv_cache_config cfg,
                                 lkv_bench_decode *out)
{
    if (!rt->ops->holes)
        return LKV_OK;
    cfg.eviction = LKV_EVICTION_INLINE;
    cfg.placement = LKV_PLACEMENT_HOLES;
    step_times h = {0};
    lkv_cache_stats stats;
    lkv_status st = run_cache(rt, &cfg, in, out->length, out->budget, LAZY_WARMUP, s->window,
                              &h, &stats);
    if (st != LKV_OK)
        return st;
    out->holes_ms = 1e3 * h.sum_s / s->window;
    out->holes_evict_ms = evicting_ms(&h);
    cfg.eviction = LKV_EVICTION_BACKGROUND;
    step_times b = {0};
    st = run_cache(rt, &cfg, in, out->length, out->budget, LAZY_WARMUP, s->window, &b, &stats);
    out->holes_bg_call_ms = evicting_ms(&b);
    if (st != LKV_OK || !rt->ops->paged)
        return st;
    cfg.eviction = LKV_EVICTION_INLINE;
    cfg.placement = LKV_PLACEMENT_PAGED;
    step_times g = {0};
    st = run_cache(rt, &cfg, in, out->length, out->budget, LAZY_WARMUP, s->window, &g, &stats);
    out->paged_evict_ms = evicting_ms(&g);
    out->paged_kv_peak = stats.pool_blocks ? stats.blocks_peak * stats.kv_bytes_reserved /
                                                 stats.pool_blocks
                                           : 0;
    return st;
}

/* The lazy cache at its settled size: the last B prompt tokens, capacity B + W;
 * then the same with its evictions in the background. The step's stats are
 * read after its timed call, so the wait for a background eviction falls
 * outside the timing: the caller's view, with work of its own to overlap. */
static lkv_status run_lazy(lkv_runtime *rt, const lkv_bench_settings *s,
                           const lkv_bench_decode_inputs *in, lkv_bench_decode *out)
{
    lkv_cache_config cfg = config_for(&in->shape, out->budget + s->window);
    lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    cfg.policy.budget = out->budget;
    cfg.policy.window = s->window;
    step_times t = {0};
    lkv_cache_stats stats;
    lkv_status st = run_cache(rt, &cfg, in, out->length, out->budget, LAZY_WARMUP, s->window, &t,
                              &stats);
    if (st != LKV_OK)
        return st;
    out->lazy_ms = 1e3 * t.sum_s / s->window;
    out->lazy_max_ms = 1e3 * t.max_s;
    out->lazy_evict_ms = evicting_ms(&t);
    out->lazy_kv_peak = stats.kv_bytes_peak;
    out->lazy_kv_reserved = stats.kv_bytes_reserved;
    cfg.eviction = LKV_EVICTION_BACKGROUND;
    step_times b = {0};
    if ((st = run_cache(rt, &cfg, in, out->length, out->budget, LAZY_WARMUP, s->window, &b,
                        &stats)) != LKV_OK)
        return st;
    out->bg_evict_call_ms = evicting_ms(&b);
    out->bg_eviction_ms = stats.evictions ? 1e3 * stats.eviction_seconds / (double)stats.evictions
                                          : 0.0;
    return run_placements(rt, s, in, cfg, out);
}

static lkv_status run_full(lkv_runtime *rt, const lkv_bench_settings *s,
                           const lkv_bench_decode_inputs *in, lkv_bench_decode *out)
{
    lkv_cache_config cfg = config_for(&in->shape, out->length + FULL_WARMUP + s->full_steps);
    step_times t = {0};
    lkv_cache_stats stats;
    lkv_status st = run_cache(rt, &cfg, in, out->length, out->length, FULL_WARMUP, s->full_steps,
                              &t, &stats);
    if (st != LKV_OK)
        return st;
    out->full_ms = 1e3 * t.sum_s / s->full_steps;
    out->full_max_ms = 1e3 * t.max_s;
    out->full_kv_peak = stats.kv_bytes_peak;
    out->full_kv_reserved = stats.kv_bytes_reserved;
    return LKV_OK;
}

void lkv_bench_decode_run(lkv_runtime *rt, const lkv_bench_settings *s,
                          const lkv_bench_decode_inputs *in, int32_t length, const char *label,
                          lkv_bench_progress *progress, lkv_bench_decode *out)
{
    memset(out, 0, sizeof *out);
    out->length = length;
    out->budget = s->decode_budget > 0 ? s->decode_budget : lkv_bench_keep(s, length);
    out->window = s->window;
    out->lazy_steps = s->window;
    out->full_steps = s->full_steps;
    char len_text[16];
    lkv_bench_format_length(length, len_text, sizeof len_text);
    lkv_bench_progress_step(progress, "%s %s decode step, lazy", label, len_text);
    int too_short = out->budget < s->window || out->budget > length;
    lkv_status st = too_short ? LKV_UNSUPPORTED : run_lazy(rt, s, in, out);
    lkv_bench_progress_step(progress, "%s %s decode step, full", label, len_text);
    if (too_short) {
        out->status = LKV_UNSUPPORTED;
        snprintf(out->error, sizeof out->error,
                 "length %d: the lazy budget %d is below the window %d or above the length",
                 length, out->budget, s->window);
    } else if (st != LKV_OK) {
        record_failure(out, st, "lazy");
    } else if ((st = run_full(rt, s, in, out)) != LKV_OK) {
        record_failure(out, st, "full");
    } else {
        out->status = LKV_OK;
    }
}
