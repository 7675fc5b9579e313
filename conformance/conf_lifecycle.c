/* Sequence lifecycle: fork and truncate.
 *
 * fork: a source S and a reference R, the same sequence index in a twin
 * cache (nacl's random stage draws its noise per cache row), get the same
 * prompt and steps; S is forked mid-decode into F1 and F1 later into F2
 * (which held a sequence of its own: the fork is refused until F2 is
 * reset). From then on all of
 * them get the same steps, and each must hold exactly what R holds after
 * every step
 * (positions, states, length, step) with outputs within attend's threshold:
 * a fork continues as its source would alone. Refusals change nothing: src
 * == dst, a source or destination part-way through a step, and a
 * destination holding slots.
 *
 * truncate: two sequences decode on the backend and on the oracle in
 * lockstep, and now and then drop their newest n tokens, n at most the
 * tokens appended since their last eviction (tracked from the eviction
 * counter). After each drop every row must be the old one less its last n
 * slots (positions and the survivors' states untouched), and the next token
 * kept must take the first dropped position. Decisions and outputs of the
 * backend must equal the oracle's doing the same operations (the documented
 * approximate rollback, run by the reference). One more token than can be
 * dropped, and more than the sequence holds, are refused with
 * INVALID_ARGUMENT, changing nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define D CONF_ENGINE_HEAD_DIM
#define MAX_W (8 * D) /* floats of one token's q (q_heads <= 8) */

typedef struct lc_case {
    conf_engine_shape shape;
} lc_case;

/* One decode step of sequence `seq` on `c`: token `index` of `stream`. */
static lkv_status step(lkv_cache *c, const conf_engine_shape *e, uint64_t seed, int32_t seq,
                       int32_t stream, int32_t index, float *out_all, int32_t from_layer,
                       int32_t to_layer)
{
    lkv_status st = LKV_OK;
    for (int32_t l = from_layer; l < to_layer && st == LKV_OK; l++) {
        float q[MAX_W], k[MAX_W], v[MAX_W];
        conf_engine_token(e, seed, stream, l, index, q, k, v);
        lkv_decode_io io = {q, k, v, out_all + (size_t)l * MAX_W, LKV_MEMORY_HOST};
        st = lkv_cache_decode(c, seq, l, &io);
    }
    return st;
}

static lkv_status prefill(lkv_cache *c, const conf_engine_shape *e, uint64_t seed, int32_t seq,
                          int32_t stream, int32_t n)
{
    size_t qw = (size_t)e->q_heads * D, kvw = (size_t)e->kv_heads * D;
    float *q = malloc((size_t)n * qw * 4), *k = malloc((size_t)n * kvw * 4);
    float *v = malloc((size_t)n * kvw * 4), *out = malloc((size_t)n * qw * 4);
    lkv_status st = q && k && v && out ? LKV_OK : LKV_OUT_OF_MEMORY;
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
        for (int32_t t = 0; t < n; t++)
            conf_engine_token(e, seed, stream, l, t, q + t * qw, k + t * kvw, v + t * kvw);
        lkv_prefill_io io = {.n_tokens = n, .k = k, .v = v, .q = q, .out = out,
                             .memory = LKV_MEMORY_HOST};
        st = lkv_cache_prefill(c, seq, l, &io);
    }
    free(q), free(k), free(v), free(out);
    return st;
}

static void expect_refused(conf_diff *d, lkv_status st, const char *what)
{
    if (st != LKV_INVALID_ARGUMENT && d->mismatches++ == 0)
        snprintf(d->first, sizeof d->first, "%s: %s, want INVALID_ARGUMENT", what,
                 lkv_status_name(st));
}

/* slots_in_use must be the sum of what the sequences hold. */
static void check_slots(conf_diff *d, const lkv_cache *c, int32_t seqs, const char *when)
{
    lkv_cache_config cfg;
    lkv_cache_stats stats;
    lkv_cache_get_config(c, &cfg);
    lkv_cache_get_stats(c, &stats);
    int64_t sum = 0;
    for (int32_t s = 0; s < seqs; s++) {
        int32_t n = 0, t = 0;
        lkv_cache_sequence_info(c, s, &n, &t);
        sum += (int64_t)n * lkv_cache_heads(c) * cfg.layers;
    }
    if (sum != stats.slots_in_use && d->mismatches++ == 0)
        snprintf(d->first, sizeof d->first, "%s: stats say %lld slots in use, the sequences hold "
                 "%lld", when, (long long)stats.slots_in_use, (long long)sum);
}

/* ---- fork ---- */

enum { S = 1, F1, F2, FORK_SEQS }; /* sequence 0 is left empty */

typedef struct fork_run {
    const conf_engine_shape *e;
    uint64_t seed;
    lkv_cache *c, *ref; /* ref: R, the source continuing alone, at index S */
    int32_t index;      /* next token of stream 0 */
    conf_diff d;
    float out[FORK_SEQS][3 * MAX_W], ref_out[3 * MAX_W];
} fork_run;

/* One step of stream 0 for R and `seqs`, each compared against R. */
static void fork_step(fork_run *f, const int32_t *seqs, int32_t n, int split, int states)
{
    int32_t layers = f->e->layers, mid = split ? 1 : layers;
    lkv_status st = step(f->ref, f->e, f->seed, S, 0, f->index, f->ref_out, 0, layers);
    for (int32_t i = 0; i < n && st == LKV_OK; i++)
        st = step(f->c, f->e, f->seed, seqs[i], 0, f->index, f->out[seqs[i]], 0, mid);
    if (split && st == LKV_OK) { /* every listed sequence between layers 0 and 1 */
        expect_refused(&f->d, lkv_cache_fork_sequence(f->c, S, F2), "fork of a source mid-step");
        expect_refused(&f->d, lkv_cache_fork_sequence(f->c, F2, S),
                       "fork onto a destination mid-step");
        for (int32_t i = 0; i < n && st == LKV_OK; i++)
            st = step(f->c, f->e, f->seed, seqs[i], 0, f->index, f->out[seqs[i]], mid, layers);
    }
    if (st != LKV_OK) {
        conf_diff_fail(&f->d, "decode", st);
        return;
    }
    char when[48];
    snprintf(when, sizeof when, "step of token %d", f->index);
    f->index++;
    for (int32_t i = 0; i < n; i++) {
        conf_engine_compare_seq(&f->d, f->ref, S, f->c, seqs[i], states, when);
        conf_engine_compare_out(&f->d, f->ref_out, f->out[seqs[i]], (size_t)layers * MAX_W,
                                when);
    }
}

static void fork_at(fork_run *f, int32_t src, int32_t dst)
{
    lkv_status st = lkv_cache_fork_sequence(f->c, src, dst);
    if (st != LKV_OK) {
        conf_diff_fail(&f->d, "lkv_cache_fork_sequence", st);
        return;
    }
    char when[48];
    snprintf(when, sizeof when, "fork %d -> %d", src, dst);
    conf_engine_compare_seq(&f->d, f->c, src, f->c, dst, 1, when);
    check_slots(&f->d, f->c, FORK_SEQS, when);
}

static void fork_run_all(fork_run *f)
{
    const conf_engine_shape *e = f->e;
    int32_t prompt = conf_engine_longest(e->policy) - 4;
    lkv_status st = prefill(f->ref, e, f->seed, S, 0, prompt);
    if (st == LKV_OK)
        st = prefill(f->c, e, f->seed, S, 0, prompt);
    if (st == LKV_OK) /* F2's own sequence, reset before the second fork */
        st = prefill(f->c, e, f->seed, F2, 1, 10);
    for (int32_t i = 0; i < 2 && st == LKV_OK; i++)
        st = step(f->c, e, f->seed, F2, 1, 10 + i, f->out[F2], 0, e->layers);
    if (st != LKV_OK) {
        conf_diff_fail(&f->d, "setup", st);
        return;
    }
    f->index = prompt;
    static const int32_t s1[] = {S}, s2[] = {S, F1}, s3[] = {S, F1, F2};
    for (int32_t i = 0; i < 4 && !f->d.failed; i++)
        fork_step(f, s1, 1, 0, 0);
    fork_at(f, S, F1);
    for (int32_t i = 0; i < 4 && !f->d.failed; i++)
        fork_step(f, s2, 2, i == 2 && e->layers > 1, i == 3);
    expect_refused(&f->d, lkv_cache_fork_sequence(f->c, F1, F1), "fork onto itself");
    expect_refused(&f->d, lkv_cache_fork_sequence(f->c, F1, FORK_SEQS), "fork out of range");
    /* F2 still holds its own sequence: a fork onto it is refused until it
     * is reset */
    expect_refused(&f->d, lkv_cache_fork_sequence(f->c, F1, F2),
                   "fork onto a sequence holding slots");
    if (!f->d.failed && (st = lkv_cache_reset_sequence(f->c, F2)) != LKV_OK)
        conf_diff_fail(&f->d, "lkv_cache_reset_sequence", st);
    if (!f->d.failed)
        fork_at(f, F1, F2);
    for (int32_t i = 0; i < 5 && !f->d.failed; i++)
        fork_step(f, s3, 3, 0, i == 4);
}

static void fork_seed(conf_run *r, const void *proto, uint64_t seed)
{
    const lc_case *lc = proto;
    conf_engine_shape e = lc->shape;
    e.seqs = FORK_SEQS;
    fork_run *f = calloc(1, sizeof *f);
    conf_verdict v;
    conf_verdict_init(&v);
    if (!f) {
        conf_verdict_set(&v, LKV_CONF_FAIL, "out of host memory");
        conf_group_result(r, seed, &v);
        return;
    }
    f->e = &e;
    f->seed = seed;
    conf_diff_init(&f->d);
    lkv_status st = conf_engine_cache(r->rt[CONF_TESTED], &e, &f->c);
    if (st == LKV_OK)
        st = conf_engine_cache(r->rt[CONF_TESTED], &e, &f->ref);
    if (st != LKV_OK)
        conf_diff_fail(&f->d, "lkv_cache_create", st);
    else
        fork_run_all(f);
    conf_engine_verdict(&f->d, "the reference continuing alone", &v);
    conf_group_result(r, seed, &v);
    lkv_cache_destroy(f->c);
    lkv_cache_destroy(f->ref);
    free(f);
}

/* ---- truncate ---- */

#define TRUNC_SEQS 2
#define TRUNC_TICKS 14

typedef struct rows_copy {
    int32_t n[8 * 3];
    int32_t *pos, *a, *b;
    float *f;
} rows_copy;

typedef struct trunc_run {
    const conf_engine_shape *e;
    uint64_t seed;
    lkv_cache *c[2]; /* oracle, backend */
    int32_t index[TRUNC_SEQS], since[TRUNC_SEQS];
    int32_t expect_pos[TRUNC_SEQS]; /* -1: nothing to check */
    conf_diff d;
    float out[2][3 * MAX_W];
    rows_copy before;
    int32_t cap, heads;
} trunc_run;

static int64_t evictions(const lkv_cache *c)
{
    lkv_cache_stats s;
    return lkv_cache_get_stats(c, &s) == LKV_OK ? s.evictions : -1;
}

static int32_t length(const lkv_cache *c, int32_t seq)
{
    int32_t n = 0, t = 0;
    lkv_cache_sequence_info(c, seq, &n, &t);
    return n;
}

static int32_t *row_at(int32_t *base, const trunc_run *tr, int32_t row)
{
    return base + (size_t)row * (size_t)tr->cap;
}

/* Every row of `seq` on the backend, into tr->before (or compared with it
 * when `check`: the first n_after slots must be unchanged). */
static void rows(trunc_run *tr, int32_t seq, int check, int32_t n_after, const char *when)
{
    int32_t cap = tr->cap;
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)cap), *a = malloc(sizeof(int32_t) * (size_t)cap);
    int32_t *b = malloc(sizeof(int32_t) * (size_t)cap);
    float *f = malloc(sizeof(float) * (size_t)cap);
    for (int32_t l = 0; pos && a && b && f && l < tr->e->layers; l++)
        for (int32_t h = 0; h < tr->heads; h++) {
            int32_t row = l * tr->heads + h, n = 0;
            lkv_slot_view view = {cap, pos, a, b, f};
            if (lkv_cache_read_slots(tr->c[1], seq, l, h, &view, &n) != LKV_OK) {
                conf_diff_fail(&tr->d, "lkv_cache_read_slots", LKV_DEVICE_ERROR);
                goto done;
            }
            if (!check) {
                tr->before.n[row] = n;
                memcpy(row_at(tr->before.pos, tr, row), pos, sizeof(int32_t) * (size_t)n);
                memcpy(row_at(tr->before.a, tr, row), a, sizeof(int32_t) * (size_t)n);
                memcpy(row_at(tr->before.b, tr, row), b, sizeof(int32_t) * (size_t)n);
                memcpy((float *)row_at((int32_t *)tr->before.f, tr, row), f, 4 * (size_t)n);
                continue;
            }
            int same = n == n_after &&
                       !memcmp(row_at(tr->before.pos, tr, row), pos, 4 * (size_t)n) &&
                       !memcmp(row_at(tr->before.a, tr, row), a, 4 * (size_t)n) &&
                       !memcmp(row_at(tr->before.b, tr, row), b, 4 * (size_t)n) &&
                       !memcmp(row_at((int32_t *)tr->before.f, tr, row), f, 4 * (size_t)n);
            if (!same && tr->d.mismatches++ == 0)
                snprintf(tr->d.first, sizeof tr->d.first,
                         "%s: sequence %d layer %d head %d holds %d slots, want the first %d of "
                         "its %d before, unchanged", when, seq, l, h, n, n_after,
                         tr->before.n[row]);
        }
done:
    free(pos), free(a), free(b), free(f);
}

static void trunc_compare(trunc_run *tr, int32_t seq, int states, const char *when)
{
    conf_engine_compare_seq(&tr->d, tr->c[0], seq, tr->c[1], seq, states, when);
    conf_engine_compare_stats(&tr->d, tr->c[0], tr->c[1], when);
}

/* The newest slot's position after a step that kept its token. */
static void check_position(trunc_run *tr, int32_t seq, int32_t n_before)
{
    int32_t want = tr->expect_pos[seq];
    tr->expect_pos[seq] = -1;
    int32_t n = length(tr->c[1], seq);
    if (want < 0 || n != n_before + 1)
        return; /* evicted at this step: the new token's slot is not known */
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)tr->cap), got = 0;
    lkv_slot_view view = {tr->cap, pos, NULL, NULL, NULL};
    if (pos && lkv_cache_read_slots(tr->c[1], seq, 0, 0, &view, &got) == LKV_OK && got == n &&
        pos[n - 1] != want && tr->d.mismatches++ == 0)
        snprintf(tr->d.first, sizeof tr->d.first, "the token after a truncate of sequence %d "
                 "took position %d, want %d (the first dropped)", seq, pos[n - 1], want);
    free(pos);
}

static void trunc_step(trunc_run *tr, int32_t seq)
{
    int64_t ev = evictions(tr->c[1]);
    int32_t n_before = length(tr->c[1], seq);
    for (int k = 0; k < 2; k++) {
        lkv_status st = step(tr->c[k], tr->e, tr->seed, seq, seq, tr->index[seq], tr->out[k], 0,
                             tr->e->layers);
        if (st != LKV_OK) {
            conf_diff_fail(&tr->d, k ? "backend decode" : "oracle decode", st);
            return;
        }
    }
    tr->index[seq]++;
    tr->since[seq] = evictions(tr->c[1]) != ev ? 0 : tr->since[seq] + 1;
    char when[64];
    snprintf(when, sizeof when, "step of sequence %d token %d", seq, tr->index[seq] - 1);
    conf_engine_compare_out(&tr->d, tr->out[0], tr->out[1], (size_t)tr->e->layers * MAX_W, when);
    trunc_compare(tr, seq, 0, when);
    check_position(tr, seq, n_before);
}

static void trunc_refusals(trunc_run *tr, int32_t seq)
{
    int32_t n = length(tr->c[1], seq);
    for (int k = 0; k < 2; k++) {
        if (tr->since[seq] < n)
            expect_refused(&tr->d, lkv_cache_truncate_sequence(tr->c[k], seq, tr->since[seq] + 1),
                           "truncate past the last eviction");
        expect_refused(&tr->d, lkv_cache_truncate_sequence(tr->c[k], seq, n + 1),
                       "truncate of more than the sequence holds");
        expect_refused(&tr->d, lkv_cache_truncate_sequence(tr->c[k], seq, -1),
                       "truncate of -1 tokens");
    }
    if (length(tr->c[1], seq) != n && tr->d.mismatches++ == 0)
        snprintf(tr->d.first, sizeof tr->d.first, "a refused truncate changed sequence %d", seq);
}

static void trunc_drop(trunc_run *tr, int32_t seq, conf_rng *rng)
{
    int32_t n = length(tr->c[1], seq);
    int32_t most = tr->since[seq] < n ? tr->since[seq] : n;
    int32_t drop = conf_rng_below(rng, most + 1); /* 0 included: a no-op */
    rows(tr, seq, 0, 0, "");
    int32_t newest = tr->before.pos[tr->before.n[0] > 0 ? tr->before.n[0] - 1 : 0];
    for (int k = 0; k < 2 && !tr->d.failed; k++) {
        lkv_status st = lkv_cache_truncate_sequence(tr->c[k], seq, drop);
        if (st != LKV_OK)
            conf_diff_fail(&tr->d, k ? "backend truncate" : "oracle truncate", st);
    }
    if (tr->d.failed)
        return;
    tr->since[seq] -= drop;
    char when[64];
    snprintf(when, sizeof when, "truncate of %d tokens of sequence %d", drop, seq);
    rows(tr, seq, 1, n - drop, when);
    trunc_compare(tr, seq, 1, when);
    /* the dropped tokens were the newest: the next one takes the first's place */
    tr->expect_pos[seq] = drop > 0 ? newest - drop + 1 : newest + 1;
}

static void trunc_run_all(trunc_run *tr, conf_rng *rng)
{
    const conf_engine_shape *e = tr->e;
    lkv_policy_kind p = e->policy;
    /* within the budget, so no early eviction muddles the eviction count */
    int32_t prompt = p == LKV_POLICY_FULL || p == LKV_POLICY_NACL ? 20 : conf_engine_budget(p) - 6;
    for (int32_t s = 0; s < TRUNC_SEQS && !tr->d.failed; s++) {
        int64_t ev = evictions(tr->c[1]);
        for (int k = 0; k < 2; k++) {
            lkv_status st = prefill(tr->c[k], e, tr->seed, s, s, prompt);
            if (st != LKV_OK) {
                conf_diff_fail(&tr->d, k ? "backend prefill" : "oracle prefill", st);
                return;
            }
        }
        tr->index[s] = prompt;
        tr->since[s] = evictions(tr->c[1]) != ev ? 0 : prompt;
        tr->expect_pos[s] = -1;
        trunc_compare(tr, s, 1, "after prefill");
    }
    for (int32_t t = 0; t < TRUNC_TICKS && !tr->d.failed; t++)
        for (int32_t s = 0; s < TRUNC_SEQS && !tr->d.failed; s++) {
            trunc_step(tr, s);
            if (tr->d.failed || conf_rng_uniform(rng) >= 0.4)
                continue;
            trunc_refusals(tr, s);
            trunc_drop(tr, s, rng);
        }
    for (int32_t s = 0; s < TRUNC_SEQS && !tr->d.failed; s++)
        trunc_compare(tr, s, 1, "at the end");
}

static void trunc_seed(conf_run *r, const void *proto, uint64_t seed)
{
    const lc_case *lc = proto;
    conf_engine_shape e = lc->shape;
    e.seqs = TRUNC_SEQS;
    trunc_run *tr = calloc(1, sizeof *tr);
    conf_verdict v;
    conf_verdict_init(&v);
    if (!tr) {
        conf_verdict_set(&v, LKV_CONF_FAIL, "out of host memory");
        conf_group_result(r, seed, &v);
        return;
    }
    tr->e = &e;
    tr->seed = seed;
    tr->cap = conf_engine_capacity(e.policy);
    conf_diff_init(&tr->d);
    lkv_runtime *rts[2] = {r->rt[CONF_ORACLE], r->rt[CONF_TESTED]};
    for (int k = 0; k < 2 && !tr->d.failed; k++) {
        lkv_status st = conf_engine_cache(rts[k], &e, &tr->c[k]);
        if (st != LKV_OK)
            conf_diff_fail(&tr->d, "lkv_cache_create", st);
    }
    size_t slots = (size_t)tr->cap * 8 * 3;
    tr->before.pos = malloc(slots * 4), tr->before.a = malloc(slots * 4);
    tr->before.b = malloc(slots * 4), tr->before.f = malloc(slots * 4);
    if (!tr->d.failed && (!tr->before.pos || !tr->before.a || !tr->before.b || !tr->before.f))
        conf_diff_fail(&tr->d, "host memory", LKV_OUT_OF_MEMORY);
    if (!tr->d.failed) {
        tr->heads = lkv_cache_heads(tr->c[1]);
        conf_rng rng;
        conf_rng_init(&rng, seed, r->name);
        trunc_run_all(tr, &rng);
    }
    conf_engine_verdict(&tr->d, "the oracle doing the same operations", &v);
    conf_group_result(r, seed, &v);
    for (int k = 0; k < 2; k++)
        lkv_cache_destroy(tr->c[k]);
    free(tr->before.pos), free(tr->before.a), free(tr->before.b), free(tr->before.f);
    free(tr);
}

/* ---- the grid ---- */

static const lkv_policy_kind policies[] = {
    LKV_POLICY_FULL, LKV_POLICY_LAZY, LKV_POLICY_STREAMING, LKV_POLICY_H2O,
    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV, LKV_POLICY_NACL,
};

static const conf_engine_shape shape = {LKV_POLICY_FULL, 0, 2, 4, 2, LKV_GQA_GROUPED,
                                        LKV_DTYPE_F32};
static const conf_engine_shape shape_expanded = {LKV_POLICY_FULL, 0, 2, 4, 2, LKV_GQA_EXPANDED,
                                                 LKV_DTYPE_F16};

void conf_run_lifecycle(conf_run *r)
{
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int supported = ops->attend && ops->observe && ops->score && ops->select && ops->compact &&
                    ops->copy;
    size_t np = sizeof policies / sizeof policies[0];
    int saved = r->seeds;
    r->seeds = r->opt->quick ? 1 : (saved < 2 ? saved : 2);
    for (int which = 0; which < 2; which++)
        for (size_t p = 0; p < np; p++) {
            lc_case lc = {which == 0 ? shape : shape_expanded};
            lc.shape.policy = policies[p];
            const conf_engine_shape *e = &lc.shape;
            const char *family = which == 0 ? "fork" : "truncate";
            char name[192];
            snprintf(name, sizeof name, "%s(policy=%s,layers=%d,hq=%d,hkv=%d,%s,%s)", family,
                     lkv_policy_name(e->policy), e->layers, e->q_heads, e->kv_heads,
                     e->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded",
                     conf_dtype_name(e->dtype));
            conf_progress(r, "lifecycle", which * (int)np + (int)p, 2 * (int)np);
            conf_group_run(r, name, family, conf_dtype_name(e->dtype), supported,
                           which == 0 ? fork_seed : trunc_seed, &lc);
        }
    r->seeds = saved;
}
