/* The batched decode step as an engine meets it. A cache of n sequences,
 * each standing at L = batch_slots tokens (sequence 0 prefilled, the others
 * forked from it, so every row holds the same prompt); then timed steps of
 * one layer, either one lkv_cache_decode_batch call for all n or n
 * lkv_cache_decode calls, each step followed by a sync (bench_timer.c).
 *
 * The policy is lazy at budget L, window W: every step stores, attends with
 * the probabilities and observes, and no eviction falls due in the timed
 * steps (the first comes at step W, past the most the timer issues), so each
 * step does the same work and its counters are exact. The counters are read
 * around the decode call(s) only, not around the bench's own sync. */
#include "bench_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_overlap.h"
#include "bench_pool.h"
#include "bench_timer.h"
#include "error.h"

/* Sequence j takes token i + j at step i: steps issued (warm-up and timed,
 * or the pool's W), plus the largest batch's spread. */
int32_t lkv_bench_batch_tokens(const lkv_bench_settings *s)
{
    int32_t most = 1;
    for (int b = 0; b < s->n_batches; b++)
        if (s->batches[b] > most)
            most = s->batches[b];
    int32_t steps = s->max_warmup + s->max_reps;
    if (steps < s->window)
        steps = s->window;
    if (steps < LKV_BENCH_OVERLAP_WINDOW + 1) /* the overlap run steps one past its period */
        steps = LKV_BENCH_OVERLAP_WINDOW + 1;
    return steps + most - 1;
}

typedef struct batch_ctx {
    lkv_runtime *rt;
    lkv_cache *cache;
    const lkv_bench_decode_inputs *in;
    int32_t n;
    int batched;        /* one batch call, else n per-sequence calls */
    int32_t step;       /* steps issued so far */
    int32_t *seqs;      /* [n] 0..n-1 */
    float *out;         /* [n][q_heads][head_dim] */
    lkv_counters sum;   /* over the steps issued */
} batch_ctx;

static void add_counters(lkv_counters *sum, const lkv_counters *a, const lkv_counters *b)
{
    sum->launches += b->launches - a->launches;
    sum->h2d_copies += b->h2d_copies - a->h2d_copies;
    sum->h2d_bytes += b->h2d_bytes - a->h2d_bytes;
    sum->d2h_copies += b->d2h_copies - a->d2h_copies;
    sum->d2h_bytes += b->d2h_bytes - a->d2h_bytes;
    sum->syncs += b->syncs - a->syncs;
}

lkv_status lkv_bench_batch_step(lkv_cache *c, const lkv_bench_decode_inputs *in, int32_t step,
                                int32_t layer, int32_t n, const int32_t *seqs, float *out)
{
    size_t qs = (size_t)in->shape.q_heads * (size_t)in->shape.head_dim;
    size_t kvs = (size_t)in->shape.kv_heads * (size_t)in->shape.head_dim;
    size_t tok = (size_t)in->max_len + (size_t)step;
    lkv_decode_batch_io io = {.n_sequences = n, .sequences = seqs, .memory = LKV_MEMORY_HOST,
                              .q = in->q + (size_t)step * qs, .k = in->k + tok * kvs,
                              .v = in->v + tok * kvs, .out = out};
    return lkv_cache_decode_batch(c, layer, &io);
}

static lkv_status step_calls(batch_ctx *x)
{
    if (x->batched)
        return lkv_bench_batch_step(x->cache, x->in, x->step, 0, x->n, x->seqs, x->out);
    const lkv_bench_shape *sh = &x->in->shape;
    size_t qs = (size_t)sh->q_heads * (size_t)sh->head_dim;
    size_t kvs = (size_t)sh->kv_heads * (size_t)sh->head_dim;
    size_t i = (size_t)x->step, tok = (size_t)x->in->max_len + i;
    const float *q = x->in->q + i * qs, *k = x->in->k + tok * kvs, *v = x->in->v + tok * kvs;
    lkv_status st = LKV_OK;
    for (size_t j = 0; j < (size_t)x->n && st == LKV_OK; j++) {
        lkv_decode_io io = {q + j * qs, k + j * kvs, v + j * kvs, x->out + j * qs,
                            LKV_MEMORY_HOST};
        st = lkv_cache_decode(x->cache, (int32_t)j, 0, &io);
    }
    return st;
}

/* One step of the whole batch; the timer syncs after it. */
static lkv_status issue_step(void *ctx)
{
    batch_ctx *x = ctx;
    lkv_counters a, b;
    lkv_status st = lkv_runtime_get_counters(x->rt, &a);
    if (st == LKV_OK)
        st = step_calls(x);
    if (st == LKV_OK)
        st = lkv_runtime_get_counters(x->rt, &b);
    if (st != LKV_OK)
        return st;
    add_counters(&x->sum, &a, &b);
    x->step++;
    return LKV_OK;
}

lkv_status lkv_bench_batch_open(lkv_runtime *rt, const lkv_cache_config *cfg,
                                const lkv_bench_decode_inputs *in, int32_t slots,
                                lkv_cache **out)
{
    lkv_cache *c = NULL;
    lkv_status st = lkv_cache_create(rt, cfg, &c);
    for (int32_t l = 0; l < cfg->layers && st == LKV_OK; l++) {
        lkv_prefill_io io = {.n_tokens = slots, .k = in->k, .v = in->v,
                             .memory = LKV_MEMORY_HOST};
        st = lkv_cache_prefill(c, 0, l, &io);
    }
    for (int32_t j = 1; j < cfg->sequences && st == LKV_OK; j++)
        st = lkv_cache_fork_sequence(c, 0, j);
    if (st != LKV_OK) {
        lkv_cache_destroy(c);
        return st;
    }
    *out = c;
    return LKV_OK;
}

static void per_step(const lkv_counters *sum, int32_t steps, lkv_bench_batch_counters *out)
{
    double d = steps > 0 ? (double)steps : 1.0;
    out->launches = (double)sum->launches / d;
    out->h2d_copies = (double)sum->h2d_copies / d;
    out->h2d_bytes = (double)sum->h2d_bytes / d;
    out->d2h_copies = (double)sum->d2h_copies / d;
    out->d2h_bytes = (double)sum->d2h_bytes / d;
    out->syncs = (double)sum->syncs / d;
}

/* Times one way of stepping on a fresh cache; the counters are the mean over
 * every step issued (warm-up included: each step does the same work). */
static void run_side(lkv_runtime *rt, const lkv_bench_settings *s, const lkv_bench_decode_inputs *in,
                     int32_t n, int batched, float *out, int32_t *seqs, lkv_bench_batch_side *side)
{
    memset(side, 0, sizeof *side);
    batch_ctx x = {rt, NULL, in, n, batched, 0, seqs, out, {0}};
    lkv_cache_config cfg = lkv_bench_batch_config(s, n);
    lkv_status st = lkv_bench_batch_open(rt, &cfg, in, s->batch_slots, &x.cache);
    if (st != LKV_OK) {
        side->step.status = st;
        snprintf(side->step.error, sizeof side->step.error, "setting up %d sequences: %s", n,
                 lkv_last_error());
        return;
    }
    lkv_bench_time(rt, s, issue_step, &x, &side->step);
    per_step(&x.sum, x.step, &side->counters);
    lkv_cache_destroy(x.cache);
}

void lkv_bench_batch_run(lkv_runtime *rt, const lkv_bench_settings *s,
                         const lkv_bench_decode_inputs *in, int32_t sequences,
                         const char *label, lkv_bench_progress *progress, lkv_bench_batch *out)
{
    memset(out, 0, sizeof *out);
    out->sequences = sequences;
    out->slots = s->batch_slots;
    out->counted = rt->ops->counters != NULL;
    size_t qs = (size_t)in->shape.q_heads * (size_t)in->shape.head_dim;
    float *o = malloc(sizeof(float) * qs * (size_t)sequences);
    int32_t *seqs = malloc(sizeof(int32_t) * (size_t)sequences);
    if (!o || !seqs) {
        free(o);
        free(seqs);
        out->status = LKV_OUT_OF_MEMORY;
        snprintf(out->error, sizeof out->error, "out of host memory for %d sequences", sequences);
        return;
    }
    for (int32_t j = 0; j < sequences; j++)
        seqs[j] = j;
    lkv_bench_progress_step(progress, "%s batch of %d, one call", label, sequences);
    run_side(rt, s, in, sequences, 1, o, seqs, &out->batched);
    lkv_bench_progress_step(progress, "%s batch of %d, %d calls", label, sequences, sequences);
    run_side(rt, s, in, sequences, 0, o, seqs, &out->per_sequence);
    lkv_bench_progress_step(progress, "%s batch of %d, mixed lengths", label, sequences);
    lkv_bench_pool_run(rt, s, in, sequences, &out->pool);
    lkv_bench_progress_step(progress, "%s batch of %d, eviction overlap", label, sequences);
    lkv_bench_overlap_run(rt, s, in, sequences, &out->overlap);
    free(o);
    free(seqs);
    const lkv_bench_timing *bad = out->batched.step.status != LKV_OK ? &out->batched.step
                                  : out->per_sequence.step.status != LKV_OK ? &out->per_sequence.step : NULL;
    out->status = bad ? bad->status : LKV_OK;
    if (bad)
        snprintf(out->error, sizeof out->error, "%s: %.120s",
                 bad == &out->batched.step ? "batched" : "per-sequence", bad->error);
}
