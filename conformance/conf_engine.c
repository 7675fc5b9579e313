/* What the engine-API families (batch, chunked, lifecycle) share: a small
 * cache per policy with budgets that make it evict within a few dozen
 * tokens, seeded token inputs, and the comparison of two sequences'
 * decisions (every layer's and head's kept positions and policy state, the
 * length and step) and of outputs.
 *
 * Inputs. Dimension 0 of every key is a "hot channel": a quarter of the
 * tokens (and the first) carry 4.9 there, the rest 0, and every query 4.9,
 * so hot tokens score a logit 6 above the crowd (4.9^2 / sqrt(16)). The
 * other dimensions are noise of logit spread `spread`. Under lazy the
 * spread is small (0.09), so every probability is either well above alpha
 * (hot: >= 1/64 e^-0.5 = 0.0095) or well below it (cold: <= 1/(e^6 + 9)
 * e^0.5 = 0.004), with alpha 0.005: an f32 attention and the oracle's
 * double one then mark the same slots important. The accumulating
 * policies get spread 1: their rankings compare sums of probabilities, and
 * a wide spread keeps neighbouring sums apart (a few percent) compared with
 * the f32 rounding between a backend and the oracle (1e-6). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define HOT_VALUE 4.9f

typedef struct engine_policy {
    int32_t budget, window, capacity, longest;
} engine_policy;

/* Budgets a few dozen tokens long; capacity is the policy's peak (so a
 * prompt of `capacity` tokens brings the early eviction) or, for the
 * policies that only grow while decoding, room for the longest prompt and
 * every step the families take. */
static engine_policy policy_of(lkv_policy_kind p)
{
    switch (p) {
    case LKV_POLICY_LAZY: return (engine_policy){24, 8, 32, 32};
    case LKV_POLICY_STREAMING:
    case LKV_POLICY_H2O:
    case LKV_POLICY_TOVA: return (engine_policy){24, 0, 32, 32};
    case LKV_POLICY_SNAPKV: return (engine_policy){24, 6, 40, 40};
    case LKV_POLICY_RKV: return (engine_policy){24, 6, 40, 40}; /* buffer 16 */
    default: return (engine_policy){0, 0, 72, 40}; /* full, nacl */
    }
}

int32_t conf_engine_longest(lkv_policy_kind p) { return policy_of(p).longest; }
int32_t conf_engine_budget(lkv_policy_kind p) { return policy_of(p).budget; }
int32_t conf_engine_capacity(lkv_policy_kind p) { return policy_of(p).capacity; }

float conf_engine_spread(lkv_policy_kind p) { return p == LKV_POLICY_LAZY ? 0.09f : 1.0f; }

lkv_status conf_engine_config(const conf_engine_shape *s, lkv_cache_config *cfg)
{
    lkv_cache_config_init(cfg);
    cfg->layers = s->layers;
    cfg->q_heads = s->q_heads;
    cfg->kv_heads = s->kv_heads;
    cfg->head_dim = CONF_ENGINE_HEAD_DIM;
    cfg->sequences = s->seqs;
    cfg->dtype = s->dtype;
    cfg->gqa = s->gqa;
    return lkv_policy_init(&cfg->policy, s->policy);
}

lkv_status conf_engine_cache(lkv_runtime *rt, const conf_engine_shape *s, lkv_cache **out)
{
    engine_policy e = policy_of(s->policy);
    lkv_cache_config cfg;
    lkv_status st = conf_engine_config(s, &cfg);
    cfg.capacity = e.capacity;
    lkv_policy_params *p = &cfg.policy;
    p->budget = e.budget;
    if (s->policy == LKV_POLICY_LAZY) {
        p->window = e.window;
        p->alpha = 0.005f;
    } else if (s->policy == LKV_POLICY_SNAPKV) {
        p->window = e.window;
        p->interval = 8;
    } else if (s->policy == LKV_POLICY_RKV) {
        p->window = e.window;
        p->interval = 16;
    } else if (s->policy == LKV_POLICY_STREAMING) {
        p->sinks = 4;
    } else if (s->policy == LKV_POLICY_NACL) {
        /* min_length lowered so the prompts are evicted at prefill */
        p->sinks = 2;
        p->proxy_ratio = 0.1f;
        p->proxy_keep_ratio = 0.3f;
        p->random_keep_ratio = 0.2f;
        p->protect_ratio = 0.1f;
        p->min_length = 16;
        p->seed = 7;
    }
    return st == LKV_OK ? lkv_cache_create(rt, &cfg, out) : st;
}

/* One value of the input stream: a hash of where it sits, so any token can
 * be drawn in any order and every engine sees the same bytes. */
static conf_rng value_rng(uint64_t seed, int32_t stream, int32_t layer, int32_t index, int what)
{
    conf_rng r = {seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)(uint32_t)stream << 40) ^
                  ((uint64_t)(uint32_t)layer << 32) ^ ((uint64_t)(uint32_t)index << 2) ^
                  (uint64_t)what};
    conf_rng_next(&r);
    return r;
}

void conf_engine_token(const conf_engine_shape *s, uint64_t seed, int32_t stream, int32_t layer,
                       int32_t index, float *q, float *k, float *v)
{
    const int32_t d = CONF_ENGINE_HEAD_DIM;
    float amp = sqrtf(conf_engine_spread(s->policy)); /* q and k noise: spread = amp^2 */
    conf_rng r = value_rng(seed, stream, layer, index, 0);
    int hot = index == 0 || conf_rng_uniform(&r) < 0.25;
    for (int32_t h = 0; h < s->kv_heads; h++)
        for (int32_t i = 0; i < d; i++) {
            k[h * d + i] = i == 0 ? (hot ? HOT_VALUE : 0.0f) : amp * (float)conf_rng_normal(&r);
            v[h * d + i] = (float)conf_rng_normal(&r);
        }
    if (!q)
        return;
    for (int32_t h = 0; h < s->q_heads; h++)
        for (int32_t i = 0; i < d; i++)
            q[h * d + i] = i == 0 ? HOT_VALUE : amp * (float)conf_rng_normal(&r);
}

/* ---- comparisons ---- */

void conf_diff_init(conf_diff *d) { memset(d, 0, sizeof *d); }

static void note_mismatch(conf_diff *d, const char *fmt, ...) CONF_PRINTF(2, 3);
static void note_mismatch(conf_diff *d, const char *fmt, ...)
{
    if (d->mismatches++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->first, sizeof d->first, fmt, ap);
    va_end(ap);
}

void conf_diff_fail(conf_diff *d, const char *what, lkv_status st)
{
    if (d->failed)
        return;
    d->failed = st;
    snprintf(d->error, sizeof d->error, "%s: %s: %s", what, lkv_status_name(st),
             lkv_last_error());
}

/* Accumulated state within the attend probability tolerance (5e-4, doubled
 * for sums of them); the integer states and positions must be equal. */
static int state_close(float want, float got)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    return fabs((double)got - want) <= 1e-6 + 1e-3 * fabs((double)want);
}

/* The arrays a policy's state lives in: lazy's integer pair, or state_f. */
static int reads_ints(lkv_policy_kind p) { return p == LKV_POLICY_LAZY; }

void conf_snapshot_free(conf_snapshot *s)
{
    free(s->n);
    free(s->pos);
    free(s->a);
    free(s->b);
    free(s->f);
    memset(s, 0, sizeof *s);
}

int conf_snapshot_take(conf_snapshot *s, conf_diff *d, const lkv_cache *c, int32_t seq,
                       int states)
{
    conf_snapshot_free(s);
    lkv_cache_config cfg;
    lkv_status st = lkv_cache_get_config(c, &cfg);
    if (st == LKV_OK)
        st = lkv_cache_sequence_info(c, seq, &s->length, &s->step);
    if (st != LKV_OK) {
        conf_diff_fail(d, "lkv_cache_sequence_info", st);
        return 0;
    }
    s->seq = seq;
    s->layers = cfg.layers;
    s->heads = lkv_cache_heads(c);
    s->cap = cfg.capacity;
    s->states = states;
    s->ints = reads_ints(cfg.policy.kind);
    size_t slots = (size_t)s->layers * (size_t)s->heads * (size_t)s->cap;
    s->n = calloc((size_t)s->layers * (size_t)s->heads, sizeof(int32_t));
    s->pos = calloc(slots, sizeof(int32_t));
    if (states && s->ints) {
        s->a = calloc(slots, sizeof(int32_t));
        s->b = calloc(slots, sizeof(int32_t));
    } else if (states) {
        s->f = calloc(slots, sizeof(float));
    }
    if (!s->n || !s->pos || (states && !s->f && !(s->a && s->b))) {
        conf_diff_fail(d, "host memory", LKV_OUT_OF_MEMORY);
        return 0;
    }
    for (int32_t r = 0; r < s->layers * s->heads; r++) {
        size_t o = (size_t)r * (size_t)s->cap;
        lkv_slot_view view = {s->cap, s->pos + o, s->a ? s->a + o : NULL, s->b ? s->b + o : NULL,
                              s->f ? s->f + o : NULL};
        st = lkv_cache_read_slots(c, seq, r / s->heads, r % s->heads, &view, &s->n[r]);
        if (st != LKV_OK) {
            conf_diff_fail(d, "lkv_cache_read_slots", st);
            return 0;
        }
    }
    return 1;
}

static int slot_differs(const conf_snapshot *w, const conf_snapshot *g, size_t i, int states)
{
    if (w->pos[i] != g->pos[i])
        return 1;
    if (!states)
        return 0;
    return w->ints ? w->a[i] != g->a[i] || w->b[i] != g->b[i] : !state_close(w->f[i], g->f[i]);
}

static void describe_slot(conf_diff *d, const conf_snapshot *w, const conf_snapshot *g, size_t i,
                          int32_t slot, const char *where, int states)
{
    if (!states)
        note_mismatch(d, "%s slot %d: position %d, want %d", where, slot, g->pos[i], w->pos[i]);
    else if (w->ints)
        note_mismatch(d, "%s slot %d: position %d state (%d, %d), want position %d state (%d, "
                      "%d)", where, slot, g->pos[i], g->a[i], g->b[i], w->pos[i], w->a[i],
                      w->b[i]);
    else
        note_mismatch(d, "%s slot %d: position %d state %.9g, want position %d state %.9g", where,
                      slot, g->pos[i], (double)g->f[i], w->pos[i], (double)w->f[i]);
}

int conf_snapshot_compare(conf_diff *d, const conf_snapshot *w, const conf_snapshot *g,
                          const char *when)
{
    d->compared++;
    if (w->length != g->length || w->step != g->step) {
        note_mismatch(d, "%s: sequence %d holds %d tokens at step %d, want %d at step %d", when,
                      g->seq, g->length, g->step, w->length, w->step);
        return 1;
    }
    int states = w->states && g->states;
    for (int32_t r = 0; r < w->layers * w->heads; r++) {
        char where[160];
        snprintf(where, sizeof where, "%s: sequence %d layer %d head %d", when, g->seq,
                 r / w->heads, r % w->heads);
        if (w->n[r] != g->n[r]) {
            note_mismatch(d, "%s: %d slots, want %d", where, g->n[r], w->n[r]);
            return 1;
        }
        for (int32_t i = 0; i < w->n[r]; i++) {
            size_t at = (size_t)r * (size_t)w->cap + (size_t)i;
            if (slot_differs(w, g, at, states)) {
                describe_slot(d, w, g, at, i, where, states);
                return 1;
            }
        }
    }
    return 0;
}

int conf_engine_compare_seq(conf_diff *d, const lkv_cache *want, int32_t ws, const lkv_cache *got,
                            int32_t gs, int states, const char *when)
{
    conf_snapshot w = {0}, g = {0};
    int differs = 0;
    if (conf_snapshot_take(&w, d, want, ws, states) && conf_snapshot_take(&g, d, got, gs, states))
        differs = conf_snapshot_compare(d, &w, &g, when);
    conf_snapshot_free(&w);
    conf_snapshot_free(&g);
    return differs;
}

void conf_engine_compare_stats(conf_diff *d, const lkv_cache *want, const lkv_cache *got,
                               const char *when)
{
    lkv_cache_stats w, g;
    if (lkv_cache_get_stats(want, &w) != LKV_OK || lkv_cache_get_stats(got, &g) != LKV_OK) {
        conf_diff_fail(d, "lkv_cache_get_stats", LKV_INTERNAL);
        return;
    }
    /* peak_slots is left out: it depends on how appends and evictions of
     * different sequences interleave, which batching changes by design */
    if (w.slots_in_use != g.slots_in_use || w.evictions != g.evictions ||
        w.tokens_evicted != g.tokens_evicted)
        note_mismatch(d, "%s: stats slots %lld, evictions %lld, tokens evicted %lld; want %lld, "
                      "%lld, %lld", when, (long long)g.slots_in_use, (long long)g.evictions,
                      (long long)g.tokens_evicted, (long long)w.slots_in_use,
                      (long long)w.evictions, (long long)w.tokens_evicted);
}

void conf_engine_compare_out(conf_diff *d, const float *want, const float *got, size_t n,
                             const char *when)
{
    for (size_t i = 0; i < n; i++) {
        double x = got[i], y = want[i];
        if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
            if (!(isnan(x) && isnan(y)) && x != y && d->nonfinite++ == 0)
                snprintf(d->out_where, sizeof d->out_where, "%s element %zu: got %.9g want %.9g",
                         when, i, x, y);
            continue;
        }
        d->num += (x - y) * (x - y);
        d->den += y * y;
        if (fabs(x - y) > d->worst) {
            d->worst = fabs(x - y);
            snprintf(d->out_where, sizeof d->out_where, "%s element %zu: got %.9g want %.9g",
                     when, i, x, y);
        }
    }
}

/* Attend's output threshold (conf_attend.c): an f32 online softmax against
 * the oracle's double two-pass one measures 1e-13 at these sizes. */
#define OUT_NMSE 1e-8

void conf_engine_verdict(const conf_diff *d, const char *what, conf_verdict *v)
{
    if (d->failed) {
        conf_verdict_set(v, d->failed == LKV_UNSUPPORTED ? LKV_CONF_SKIP : LKV_CONF_FAIL, "%s",
                         d->error);
        return;
    }
    conf_verdict_check(v, d->mismatches != 0, "mismatches", (double)d->mismatches, 0,
                       d->mismatches ? "%lld of %lld sequence snapshots differ from %s, the "
                                       "first %s"
                                     : "%lld of %lld sequence snapshots identical to %s%s",
                       (long long)(d->mismatches ? d->mismatches : d->compared),
                       (long long)d->compared, what, d->mismatches ? d->first : "");
    double nmse = d->den > 0.0 ? d->num / d->den : d->num;
    conf_verdict_check(v, d->nonfinite != 0, "nan/inf mismatches", (double)d->nonfinite, 0,
                       "outputs: %s", d->out_where);
    conf_verdict_check(v, !(nmse <= OUT_NMSE), "nmse", nmse, OUT_NMSE,
                       "outputs nmse %.3g against %s; largest difference at %s", nmse, what,
                       d->out_where[0] ? d->out_where : "none");
}
