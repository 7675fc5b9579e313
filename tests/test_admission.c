/* Admission (docs/policies-admission.md): a prompt longer than the budget, up
 * to the capacity, is taken at prefill and then decodes for as long as the
 * engine likes, because a decode step whose append would not fit runs the
 * policy's eviction first. A host model of each policy, written from
 * spec/policies.md with the cpu oracle's arithmetic order, predicts every
 * slot of every step; the policies that cannot evict during decode say at
 * prefill and at decode what fits, and a refused call changes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "test_util.h"

enum { D = 8, MAXL = 3, MAXH = 4, MAXN = 48 };

/* ---- the host model ------------------------------------------------------------ */

typedef struct hrow {
    int32_t n;
    int32_t pos[MAXN], last[MAXN], mri[MAXN];
    float k[MAXN][D];
    float f[MAXN];
} hrow;

typedef struct host {
    lkv_cache_config cfg; /* as the cache resolved it (h2o recent, reduce) */
    int32_t heads, per;   /* cache heads per layer, query heads per cache head */
    float scale;
    int32_t next_pos;
    int32_t early;        /* early evictions the model made, per layer */
    hrow row[MAXL][MAXH];
} host;

static host *host_new(const lkv_cache *c)
{
    host *h = calloc(1, sizeof *h);
    cr_assert_not_null(h);
    TU_OK(lkv_cache_get_config(c, &h->cfg));
    h->heads = lkv_cache_heads(c);
    h->per = h->cfg.q_heads / h->heads;
    h->scale = (float)(1.0 / sqrt((double)h->cfg.head_dim));
    cr_assert(h->cfg.layers <= MAXL && h->heads <= MAXH && h->cfg.capacity < MAXN);
    cr_assert_eq(h->cfg.head_dim, D);
    return h;
}

static int32_t kv_head_of(const host *h, int32_t ch)
{
    return h->cfg.gqa == LKV_GQA_GROUPED ? ch : ch / (h->cfg.q_heads / h->cfg.kv_heads);
}

/* One token (k: [kv_heads][D]) at the end of every cache head of layer l. */
static void host_append(host *h, int32_t l, const float *k, int32_t pos, int32_t last)
{
    for (int32_t ch = 0; ch < h->heads; ch++) {
        hrow *r = &h->row[l][ch];
        memcpy(r->k[r->n], k + (size_t)kv_head_of(h, ch) * D, sizeof r->k[0]);
        r->pos[r->n] = pos;
        r->last[r->n] = last;
        r->mri[r->n] = 0;
        r->f[r->n] = 0.0f;
        r->n++;
    }
}

/* The probability each of the first n slots of cache head ch gets from its
 * query heads (q: [q_heads][D]), combined by the policy's group reduction. */
static void host_probs(const host *h, const hrow *r, int32_t ch, const float *q, int32_t n,
                       float *out)
{
    double p[MAXN], comb[MAXN];
    int max = h->cfg.policy.group_reduce == LKV_REDUCE_MAX;
    for (int32_t i = 0; i < n; i++)
        comb[i] = max ? -INFINITY : 0.0;
    for (int32_t j = 0; j < h->per; j++) {
        const float *qh = q + (size_t)(ch * h->per + j) * D;
        double m = -INFINITY, z = 0.0;
        for (int32_t i = 0; i < n; i++) {
            double s = 0.0;
            for (int32_t d = 0; d < D; d++)
                s += (double)qh[d] * r->k[i][d];
            p[i] = s * (double)h->scale;
            m = p[i] > m ? p[i] : m;
        }
        for (int32_t i = 0; i < n; i++) {
            p[i] = exp(p[i] - m);
            z += p[i];
        }
        for (int32_t i = 0; i < n; i++) {
            p[i] /= z;
            comb[i] = max ? fmax(comb[i], (double)(float)p[i]) : comb[i] + p[i];
        }
    }
    for (int32_t i = 0; i < n; i++)
        out[i] = (float)(max ? comb[i] : comb[i] / h->per);
}

static double lazy_score(int32_t mri, int32_t delta)
{
    double h2 = mri == 0 ? 0.0 : 2.0 / (1.0 + exp((double)mri - 1.0));
    return h2 + 2.0 / (1.0 + exp(1.0 + (double)delta / ((double)mri + 1e-5)));
}

/* Keeps `keep` slots of r, higher score first, ties to the older slot, in
 * positional order. */
static void host_keep(hrow *r, int32_t keep, const float *s)
{
    int32_t order[MAXN];
    unsigned char kept[MAXN] = {0};
    for (int32_t i = 0; i < r->n; i++) {
        int32_t j = i;
        for (; j > 0 && s[order[j - 1]] < s[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int32_t j = 0; j < keep; j++)
        kept[order[j]] = 1;
    int32_t m = 0;
    for (int32_t i = 0; i < r->n; i++) {
        if (!kept[i])
            continue;
        r->pos[m] = r->pos[i];
        r->last[m] = r->last[i];
        r->mri[m] = r->mri[i];
        r->f[m] = r->f[i];
        memcpy(r->k[m], r->k[i], sizeof r->k[0]);
        m++;
    }
    r->n = m;
}

/* The policy's eviction of layer l down to `keep`, scored at step t. */
static void host_evict(host *h, int32_t l, int32_t keep, int32_t t)
{
    const lkv_policy_params *p = &h->cfg.policy;
    float s[MAXH][MAXN];
    for (int32_t ch = 0; ch < h->heads; ch++) {
        const hrow *r = &h->row[l][ch];
        for (int32_t i = 0; i < r->n; i++) {
            switch (p->kind) {
            case LKV_POLICY_LAZY:
                s[ch][i] = i >= r->n - p->window ? INFINITY
                                                 : (float)lazy_score(r->mri[i], t - r->last[i]);
                break;
            case LKV_POLICY_STREAMING:
                s[ch][i] = i < p->sinks ? INFINITY : (float)i;
                break;
            case LKV_POLICY_H2O:
                s[ch][i] = i >= r->n - p->recent ? INFINITY : r->f[i];
                break;
            default: { /* tova: the layer's mean, one decision for every head */
                double sum = 0.0;
                for (int32_t g = 0; g < h->heads; g++)
                    sum += h->row[l][g].f[i];
                s[ch][i] = (float)(sum / h->heads);
            }
            }
        }
    }
    for (int32_t ch = 0; ch < h->heads; ch++)
        host_keep(&h->row[l][ch], keep, s[ch]);
}

/* The rule under test: a full layer evicts before the append, lazy to its
 * budget, the every-step policies one slot; scored on step t - 1's state. */
static void host_decode(host *h, int32_t l, int32_t t, const float *q, const float *k)
{
    const lkv_policy_params *p = &h->cfg.policy;
    if (h->row[l][0].n == h->cfg.capacity) {
        host_evict(h, l, p->kind == LKV_POLICY_LAZY ? p->budget : h->cfg.capacity - 1, t - 1);
        h->early++;
    }
    host_append(h, l, k, h->next_pos, t - 1);
    for (int32_t ch = 0; ch < h->heads; ch++) {
        hrow *r = &h->row[l][ch];
        float pr[MAXN];
        host_probs(h, r, ch, q, r->n, pr);
        for (int32_t i = 0; i < r->n; i++) {
            if (p->kind == LKV_POLICY_LAZY && pr[i] >= p->alpha) {
                if (t - r->last[i] > r->mri[i])
                    r->mri[i] = t - r->last[i];
                r->last[i] = t;
            } else if (p->kind == LKV_POLICY_H2O) {
                r->f[i] += pr[i];
            } else if (p->kind == LKV_POLICY_TOVA) {
                r->f[i] = pr[i];
            }
        }
    }
}

static void host_step_end(host *h, int32_t t)
{
    const lkv_policy_params *p = &h->cfg.policy;
    h->next_pos++;
    for (int32_t l = 0; l < h->cfg.layers; l++)
        if (h->row[l][0].n > p->budget && (p->kind != LKV_POLICY_LAZY || t % p->window == 0))
            host_evict(h, l, p->budget, t);
}

/* Prompt k: [n][kv_heads][D]; q: [n][q_heads][D] or NULL. h2o sums every
 * prompt query's causal attention, tova keeps the last one's. */
static void host_prefill(host *h, int32_t l, int32_t n, const float *k, const float *q)
{
    size_t kvs = (size_t)h->cfg.kv_heads * D, qs = (size_t)h->cfg.q_heads * D;
    for (int32_t i = 0; i < n; i++)
        host_append(h, l, k + (size_t)i * kvs, i, 0);
    lkv_policy_kind kind = h->cfg.policy.kind;
    if (!q || (kind != LKV_POLICY_H2O && kind != LKV_POLICY_TOVA))
        return;
    for (int32_t i = kind == LKV_POLICY_TOVA ? n - 1 : 0; i < n; i++)
        for (int32_t ch = 0; ch < h->heads; ch++) {
            hrow *r = &h->row[l][ch];
            float pr[MAXN];
            host_probs(h, r, ch, q + (size_t)i * qs, i + 1, pr);
            for (int32_t j = 0; j <= i; j++)
                r->f[j] += pr[j];
        }
}

/* ---- driving a cache and its model together ---------------------------------- */

static lkv_cache_config config(int32_t layers, int32_t q_heads, int32_t kv_heads, int32_t cap,
                               lkv_policy_kind kind, int32_t budget)
{
    lkv_cache_config cfg = tu_config(layers, q_heads, kv_heads, D, cap);
    TU_OK(lkv_policy_init(&cfg.policy, kind));
    cfg.policy.budget = budget;
    return cfg;
}

static lkv_cache_config lazy_config(int32_t layers, int32_t q_heads, int32_t kv_heads)
{
    lkv_cache_config cfg = config(layers, q_heads, kv_heads, 24, LKV_POLICY_LAZY, 16);
    cfg.policy.window = 8; /* capacity 24 = B + W, the least creation takes */
    cfg.policy.alpha = 0.06f;
    return cfg;
}

static void prefill(lkv_cache *c, int32_t seq, host *h, int32_t n, int with_q, uint64_t *rng)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    size_t kvn = (size_t)n * (size_t)cfg.kv_heads * D, qn = (size_t)n * (size_t)cfg.q_heads * D;
    for (int32_t l = 0; l < cfg.layers; l++) {
        float *k = tu_alloc_normal(kvn, rng, 1.0), *v = tu_alloc_normal(kvn, rng, 1.0);
        float *q = with_q ? tu_alloc_normal(qn, rng, 1.0) : NULL;
        lkv_prefill_io io = {.n_tokens = n, .k = k, .v = v, .q = q};
        TU_OK(lkv_cache_prefill(c, seq, l, &io));
        if (h)
            host_prefill(h, l, n, k, q);
        free(k);
        free(v);
        free(q);
    }
    if (h)
        h->next_pos = n;
}

/* Data of one layer of one step. */
typedef struct step_data {
    float q[MAXH * D], k[MAXH * D], v[MAXH * D], out[MAXH * D];
} step_data;

static lkv_decode_io step_io(step_data *d, const lkv_cache_config *cfg, uint64_t *rng)
{
    tu_fill_normal(d->q, (size_t)cfg->q_heads * D, rng, 1.0);
    tu_fill_normal(d->k, (size_t)cfg->kv_heads * D, rng, 1.0);
    tu_fill_normal(d->v, (size_t)cfg->kv_heads * D, rng, 1.0);
    return (lkv_decode_io){d->q, d->k, d->v, d->out, LKV_MEMORY_HOST};
}

static void decode_layer(lkv_cache *c, int32_t seq, host *h, int32_t l, int32_t t, uint64_t *rng)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    step_data d;
    lkv_decode_io io = step_io(&d, &cfg, rng);
    lkv_status st = lkv_cache_decode(c, seq, l, &io);
    cr_assert_eq(st, LKV_OK, "sequence %d step %d layer %d: %s: %s", seq, t, l,
                 lkv_status_name(st), lkv_last_error());
    host_decode(h, l, t, d.q, d.k);
}

static void decode(lkv_cache *c, int32_t seq, host *h, int32_t t, uint64_t *rng)
{
    for (int32_t l = 0; l < h->cfg.layers; l++)
        decode_layer(c, seq, h, l, t, rng);
    host_step_end(h, t);
}

/* Every slot of the sequence is what the model predicts, within capacity. */
static void expect_model(const lkv_cache *c, int32_t seq, const host *h, int32_t t)
{
    int32_t cap = h->cfg.capacity, pos[MAXN], a[MAXN], b[MAXN];
    float f[MAXN];
    for (int32_t l = 0; l < h->cfg.layers; l++)
        for (int32_t ch = 0; ch < h->heads; ch++) {
            const hrow *r = &h->row[l][ch];
            lkv_slot_view view = {MAXN, pos, a, b, f};
            int32_t n = -1;
            TU_OK(lkv_cache_read_slots(c, seq, l, ch, &view, &n));
            cr_assert_leq(n, cap, "t=%d layer %d head %d: %d slots > capacity %d", t, l, ch, n,
                          cap);
            cr_assert_eq(n, r->n, "t=%d layer %d head %d: %d slots, the model says %d", t, l, ch,
                         n, r->n);
            for (int32_t i = 0; i < n; i++) {
                cr_assert_eq(pos[i], r->pos[i], "t=%d layer %d head %d slot %d: position %d, "
                             "the model says %d", t, l, ch, i, pos[i], r->pos[i]);
                if (h->cfg.policy.kind == LKV_POLICY_LAZY)
                    cr_assert(a[i] == r->last[i] && b[i] == r->mri[i],
                              "t=%d layer %d head %d slot %d: last/mri %d/%d, the model says %d/%d",
                              t, l, ch, i, a[i], b[i], r->last[i], r->mri[i]);
                else if (h->cfg.policy.kind != LKV_POLICY_STREAMING)
                    cr_assert_eq(tu_bits_of_float(f[i]), tu_bits_of_float(r->f[i]),
                                 "t=%d layer %d head %d slot %d: state %.9g, the model says %.9g",
                                 t, l, ch, i, (double)f[i], (double)r->f[i]);
            }
        }
}

/* Prefills `prompt` tokens and decodes `steps`, checking every step. */
static host *run_against_model(lkv_cache *c, int32_t prompt, int with_q, int32_t steps,
                               uint64_t seed)
{
    uint64_t rng = seed;
    host *h = host_new(c);
    prefill(c, 0, h, prompt, with_q, &rng);
    expect_model(c, 0, h, 0);
    for (int32_t t = 1; t <= steps; t++) {
        decode(c, 0, h, t, &rng);
        expect_model(c, 0, h, t);
    }
    return h;
}

static int32_t length_of(const lkv_cache *c, int32_t seq, int32_t layer)
{
    int32_t n = -1;
    TU_OK(lkv_cache_read_slots(c, seq, layer, 0, NULL, &n));
    return n;
}

/* Everything a caller can read back: stats, sequence info, every slot. */
typedef struct snapshot {
    lkv_cache_stats stats;
    int32_t *ints;
    size_t count;
} snapshot;

static snapshot snapshot_take(const lkv_cache *c)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    int32_t heads = lkv_cache_heads(c), cap = cfg.capacity;
    size_t per_row = 1 + 4 * (size_t)cap;
    snapshot s = {.count = (size_t)cfg.sequences * (2 + (size_t)cfg.layers * heads * per_row)};
    TU_OK(lkv_cache_get_stats(c, &s.stats));
    s.ints = calloc(s.count, sizeof *s.ints);
    cr_assert_not_null(s.ints);
    int32_t *w = s.ints;
    for (int32_t q = 0; q < cfg.sequences; q++) {
        TU_OK(lkv_cache_sequence_info(c, q, w, w + 1));
        w += 2;
        for (int32_t l = 0; l < cfg.layers; l++)
            for (int32_t h = 0; h < heads; h++, w += per_row) {
                lkv_slot_view view = {cap, w + 1, w + 1 + cap, w + 1 + 2 * cap,
                                      (float *)(void *)(w + 1 + 3 * cap)};
                TU_OK(lkv_cache_read_slots(c, q, l, h, &view, w));
            }
    }
    return s;
}

static void expect_unchanged(const snapshot *before, const lkv_cache *c, const char *what)
{
    snapshot now = snapshot_take(c);
    cr_assert(memcmp(&now.stats, &before->stats, sizeof now.stats) == 0,
              "%s changed the cache's counters", what);
    cr_assert_eq(now.count, before->count);
    cr_assert(memcmp(now.ints, before->ints, now.count * sizeof *now.ints) == 0,
              "%s changed the cache's slots or sequence info", what);
    free(now.ints);
}

static void expect_message(lkv_status got, lkv_status want, const char *const *needles)
{
    const char *msg = lkv_last_error();
    cr_assert_eq(got, want, "returned %s, expected %s: %s", lkv_status_name(got),
                 lkv_status_name(want), msg);
    for (const char *const *n = needles; *n; n++)
        cr_assert_not_null(strstr(msg, *n), "message '%s' does not say '%s'", msg, *n);
}

#define EXPECT_MESSAGE(call, want, ...)                                                          \
    expect_message((call), (want), (const char *const[]){__VA_ARGS__, NULL})

/* ---- lazy ------------------------------------------------------------------------- */

/* Prompt 22 > B = 16, capacity 24 = B + W: steps 1 and 2 fill the cache, so
 * step 3 would not fit long before the period (t = 8). */
Test(admission, lazy_prompt_over_budget_evicts_early_and_keeps_its_window)
{
    lkv_cache_config cfg = lazy_config(1, 1, 1);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 101;
    host *h = host_new(c);
    prefill(c, 0, h, 22, 0, &rng);
    for (int32_t t = 1; t <= 2; t++)
        decode(c, 0, h, t, &rng);
    cr_assert_eq(length_of(c, 0, 0), 24, "two steps fill the capacity");
    decode(c, 0, h, 3, &rng);
    expect_model(c, 0, h, 3);
    int32_t n, *pos = tu_positions(c, 0, 0, 0, &n);
    cr_assert_eq(n, 16 + 1, "evicted to the budget, then the step's token");
    for (int32_t i = 0; i <= 8; i++) /* the window before the step (16..23) and token 24 */
        cr_assert_eq(pos[n - 9 + i], 16 + i, "recent token %d is missing", 16 + i);
    free(pos);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.evictions, 1);
    cr_assert_eq(s.tokens_evicted, 24 - 16);
    cr_assert_eq(s.peak_slots, 24, "never above capacity");
    for (int32_t t = 4; t <= 10 * 8; t++) {
        decode(c, 0, h, t, &rng);
        expect_model(c, 0, h, t);
    }
    cr_assert_eq(h->early, 1, "one early eviction; the period takes over after it");
    free(h);
    lkv_cache_destroy(c);
}

/* A prompt of exactly the capacity: the eviction runs before step 1, when no
 * step has been observed and every prompt slot scores the same, so the
 * older tokens stay: the first B - W and the last W. */
Test(admission, lazy_prompt_of_capacity_evicts_before_the_first_step)
{
    lkv_cache_config cfg = lazy_config(1, 1, 1);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 102;
    host *h = host_new(c);
    prefill(c, 0, h, 24, 0, &rng);
    decode(c, 0, h, 1, &rng);
    int32_t n, *pos = tu_positions(c, 0, 0, 0, &n);
    cr_assert_eq(n, 17);
    for (int32_t i = 0; i < 8; i++) {
        cr_assert_eq(pos[i], i, "prompt token %d kept by the tie rule", i);
        cr_assert_eq(pos[8 + i], 16 + i, "window token %d kept", 16 + i);
    }
    cr_assert_eq(pos[16], 24, "the step's own token");
    free(pos);
    expect_model(c, 0, h, 1);
    for (int32_t t = 2; t <= 10 * 8; t++) {
        decode(c, 0, h, t, &rng);
        expect_model(c, 0, h, t);
    }
    free(h);
    lkv_cache_destroy(c);
}

/* Long enough room: the period decides, as before, even with a prompt over
 * the budget. Early eviction is only for a step that would not fit. */
Test(admission, lazy_with_room_waits_for_its_period)
{
    lkv_cache_config cfg = lazy_config(1, 1, 1);
    cfg.capacity = 40;
    lkv_cache *c = tu_cache(&cfg);
    host *h = run_against_model(c, 22, 0, 8, 103);
    cr_assert_eq(h->early, 0);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.evictions, 1, "the one eviction is the period's, at t = 8");
    cr_assert_eq(s.peak_slots, 22 + 8);
    free(h);
    lkv_cache_destroy(c);
}

/* ---- layers, GQA, sequences -------------------------------------------------- */

/* Layer 0 of the step that would not fit evicts every layer in one batch
 * (they all hold the capacity then); the later layers then find room. */
Test(admission, grouped_layers_evict_early_in_one_batch)
{
    lkv_runtime *rt = tu_counting_runtime();
    lkv_cache_config cfg = lazy_config(3, 4, 2);
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    uint64_t rng = 104;
    host *h = host_new(c);
    prefill(c, 0, h, 22, 0, &rng);
    for (int32_t t = 1; t <= 2; t++)
        decode(c, 0, h, t, &rng);
    cr_assert_eq(tu_counted.score, 0);
    decode_layer(c, 0, h, 0, 3, &rng);
    cr_assert(tu_counted.score == 1 && tu_counted.select == 1 && tu_counted.compact == 1,
              "one pass per op");
    cr_assert_eq(tu_counted.rows_seen, 3 * 2, "every layer and KV head in the batch");
    cr_assert_eq(length_of(c, 0, 0), 17);
    cr_assert(length_of(c, 0, 1) == 16 && length_of(c, 0, 2) == 16,
              "layers 1 and 2 evicted with layer 0, before their own calls");
    decode_layer(c, 0, h, 1, 3, &rng);
    decode_layer(c, 0, h, 2, 3, &rng);
    host_step_end(h, 3);
    cr_assert_eq(tu_counted.score, 1, "no second pass for the later layers");
    expect_model(c, 0, h, 3);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.evictions, 3);
    for (int32_t t = 4; t <= 3 * 8; t++) {
        decode(c, 0, h, t, &rng);
        expect_model(c, 0, h, t);
    }
    cr_assert_eq(h->early, 3, "once per layer, in the one batch");
    free(h);
    lkv_cache_destroy(c);
    tu_counting_close(rt);
}

Test(admission, expanded_heads_evict_early_each_by_its_query_head)
{
    lkv_cache_config cfg = lazy_config(2, 4, 2);
    cfg.gqa = LKV_GQA_EXPANDED;
    lkv_cache *c = tu_cache(&cfg);
    cr_assert_eq(lkv_cache_heads(c), 4);
    host *h = run_against_model(c, 23, 0, 10 * 8, 105);
    int differ = 0;
    for (int32_t ch = 1; ch < 4; ch++)
        differ |= memcmp(h->row[0][ch].pos, h->row[0][0].pos, sizeof h->row[0][0].pos) != 0;
    cr_assert(differ, "query heads with their own attention keep their own tokens");
    free(h);
    lkv_cache_destroy(c);
}

/* Sequence 1's early eviction is its own: sequence 0 (a short prompt) goes
 * through the same steps as it would alone. */
Test(admission, sequences_evict_early_independently)
{
    lkv_cache_config cfg = lazy_config(2, 2, 1);
    cfg.sequences = 2;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 106;
    host *h0 = host_new(c), *h1 = host_new(c);
    prefill(c, 0, h0, 5, 0, &rng);
    prefill(c, 1, h1, 24, 0, &rng);
    for (int32_t t = 1; t <= 10 * 8; t++) {
        decode(c, 1, h1, t, &rng);
        decode(c, 0, h0, t, &rng);
        expect_model(c, 0, h0, t);
        expect_model(c, 1, h1, t);
    }
    cr_assert_eq(h0->early, 0);
    cr_assert_eq(h1->early, 2, "sequence 1, both layers, before its step 1");
    free(h0);
    free(h1);
    lkv_cache_destroy(c);
}

/* ---- the policies that evict every step ------------------------------------------ */

/* For them only a prompt of the whole capacity leaves no slot for step 1's
 * token; room for that one token is made first, and step 1's own eviction
 * brings the cache to the budget. */

Test(admission, streaming_prompt_of_capacity_keeps_sinks_and_the_most_recent)
{
    lkv_cache_config cfg = config(2, 2, 1, 14, LKV_POLICY_STREAMING, 10);
    cfg.policy.sinks = 2;
    lkv_cache *c = tu_cache(&cfg);
    host *h = run_against_model(c, 14, 0, 3 * 14, 107);
    int32_t n, *pos = tu_positions(c, 0, 1, 0, &n);
    int32_t newest = 14 + 3 * 14 - 1;
    cr_assert_eq(n, 10);
    cr_assert(pos[0] == 0 && pos[1] == 1, "the sinks");
    for (int32_t i = 2; i < 10; i++)
        cr_assert_eq(pos[i], newest - 9 + i, "the most recent B - S");
    free(pos);
    cr_assert_eq(h->early, 2);
    free(h);
    lkv_cache_destroy(c);
}

Test(admission, h2o_prompt_of_capacity_drops_the_lightest_prompt_token_first)
{
    lkv_cache_config cfg = config(2, 2, 1, 14, LKV_POLICY_H2O, 10);
    lkv_cache *c = tu_cache(&cfg);
    host *h = run_against_model(c, 14, 1, 3 * 14, 108);
    cr_assert_eq(h->cfg.policy.recent, 5);
    cr_assert_eq(h->early, 2);
    free(h);
    lkv_cache_destroy(c);
}

/* The prompt's last query is tova's current attention at the end of prefill
 * (checked by the model right after prefill); step 1 drops by it first. */
Test(admission, tova_prompt_of_capacity_drops_by_the_last_prompt_query)
{
    lkv_cache_config cfg = config(2, 4, 2, 14, LKV_POLICY_TOVA, 10);
    lkv_cache *c = tu_cache(&cfg);
    host *h = run_against_model(c, 14, 1, 3 * 14, 109);
    cr_assert_eq(h->early, 2);
    free(h);
    lkv_cache_destroy(c);
}

/* Without the prompt's queries every slot ties before step 1, and the tie
 * rule keeps the older: the last prompt token goes (the documented cost of
 * not giving q). */
Test(admission, tova_without_prompt_queries_drops_the_newest_prompt_token)
{
    lkv_cache_config cfg = config(2, 2, 1, 14, LKV_POLICY_TOVA, 10);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 110;
    host *h = host_new(c);
    prefill(c, 0, h, 14, 0, &rng);
    decode_layer(c, 0, h, 0, 1, &rng); /* the step's eviction waits for layer 1 */
    int32_t n, *pos = tu_positions(c, 0, 0, 0, &n);
    cr_assert_eq(n, 14, "room made for one, then the step's token");
    for (int32_t i = 0; i < 13; i++)
        cr_assert_eq(pos[i], i);
    cr_assert_eq(pos[13], 14);
    free(pos);
    cr_assert_eq(length_of(c, 0, 1), 13, "layer 1 made room in the same batch");
    decode_layer(c, 0, h, 1, 1, &rng);
    host_step_end(h, 1);
    expect_model(c, 0, h, 1);
    for (int32_t t = 2; t <= 3 * 14; t++) {
        decode(c, 0, h, t, &rng);
        expect_model(c, 0, h, t);
    }
    free(h);
    lkv_cache_destroy(c);
}

/* ---- snapkv -------------------------------------------------------------------- */

/* Its prefill vote brings a long prompt to the budget and B + interval fits
 * the capacity, so it never needs an early eviction: pinned here. */
Test(admission, snapkv_prompt_of_capacity_decodes_within_its_interval)
{
    lkv_cache_config cfg = config(2, 2, 1, 18, LKV_POLICY_SNAPKV, 10);
    cfg.policy.window = 4;
    cfg.policy.interval = 8;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 111;
    prefill(c, 0, NULL, 18, 1, &rng);
    cr_assert_eq(length_of(c, 0, 0), 10, "the prefill vote keeps the budget");
    for (int32_t t = 1; t <= 3 * 8; t++) {
        tu_decode_random(c, &rng);
        int32_t n, *pos = tu_positions(c, 0, 1, 0, &n);
        cr_assert_leq(n, 10 + 8, "t=%d", t);
        if (t % 8 == 0) {
            cr_assert_eq(n, 10, "t=%d: evicted to the budget", t);
            for (int32_t i = 0; i < 4; i++)
                cr_assert_eq(pos[6 + i], 18 + t - 4 + i, "t=%d: the window survives", t);
        }
        free(pos);
    }
    lkv_cache_destroy(c);
}

/* interval -1: no decode-time eviction, so capacity bounds what the prefill
 * kept plus the decoded tokens; the step past it is refused, saying why,
 * and changes nothing. */
Test(admission, snapkv_without_decode_eviction_fills_the_capacity_then_says_why)
{
    lkv_cache_config cfg = config(2, 2, 1, 14, LKV_POLICY_SNAPKV, 10);
    cfg.policy.window = 4;
    cfg.policy.interval = -1;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 112;
    prefill(c, 0, NULL, 14, 1, &rng);
    for (int32_t t = 1; t <= 4; t++)
        tu_decode_random(c, &rng);
    cr_assert_eq(length_of(c, 0, 1), 14);
    snapshot before = snapshot_take(c);
    step_data d;
    lkv_decode_io io = step_io(&d, &cfg, &rng);
    EXPECT_MESSAGE(lkv_cache_decode(c, 0, 0, &io), LKV_OUT_OF_MEMORY, "cache full", "snapkv",
                   "14 slots", "does not evict during decode", "raise capacity");
    expect_unchanged(&before, c, "the refused step");
    free(before.ints);
    lkv_cache_destroy(c);
}

/* ---- nacl ------------------------------------------------------------------------ */

static lkv_cache_config nacl_config(int32_t min_length)
{
    lkv_cache_config cfg = config(2, 2, 1, 16, LKV_POLICY_NACL, 0);
    cfg.policy.sinks = 1;
    cfg.policy.proxy_ratio = 0.25f;
    cfg.policy.proxy_keep_ratio = 0.25f;
    cfg.policy.random_keep_ratio = 0.25f;
    cfg.policy.protect_ratio = 0.125f;
    cfg.policy.min_length = min_length;
    return cfg;
}

/* 16 tokens: protect 2 (1 sink, 1 recent), 4 by score, 4 by chance = 10. */
Test(admission, nacl_prompt_of_capacity_keeps_its_share_then_fills_the_capacity)
{
    lkv_cache_config cfg = nacl_config(8);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 113;
    prefill(c, 0, NULL, 16, 1, &rng);
    cr_assert_eq(length_of(c, 0, 0), 10);
    for (int32_t t = 1; t <= 6; t++)
        tu_decode_random(c, &rng);
    snapshot before = snapshot_take(c);
    step_data d;
    lkv_decode_io io = step_io(&d, &cfg, &rng);
    EXPECT_MESSAGE(lkv_cache_decode(c, 0, 0, &io), LKV_OUT_OF_MEMORY, "cache full", "nacl",
                   "16 slots", "does not evict during decode");
    expect_unchanged(&before, c, "the refused step");
    free(before.ints);
    lkv_cache_destroy(c);
}

/* Below min_length nacl keeps the whole prompt: a prompt of the capacity is
 * taken (a prefill-only use is valid) and the first step says why not. */
Test(admission, nacl_short_prompt_of_capacity_is_taken_and_the_step_says_why_not)
{
    lkv_cache_config cfg = nacl_config(64);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 114;
    prefill(c, 0, NULL, 16, 1, &rng);
    cr_assert_eq(length_of(c, 0, 1), 16);
    snapshot before = snapshot_take(c);
    step_data d;
    lkv_decode_io io = step_io(&d, &cfg, &rng);
    EXPECT_MESSAGE(lkv_cache_decode(c, 0, 0, &io), LKV_OUT_OF_MEMORY, "nacl", "capacity",
                   "does not evict during decode");
    expect_unchanged(&before, c, "the refused step");
    free(before.ints);
    lkv_cache_destroy(c);
}

/* ---- full -------------------------------------------------------------------------- */

/* A prompt over the capacity is refused at layer 0's prefill, naming the
 * most that fits, and the cache (the other sequence's history included)
 * stays as it was; the prompt that fits is then taken, and full, which never
 * evicts, says at the step past the capacity why it cannot go on. */
Test(admission, full_refuses_a_prompt_over_capacity_naming_what_fits)
{
    lkv_cache_config cfg = config(2, 2, 1, 16, LKV_POLICY_FULL, 0);
    cfg.sequences = 2;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 115;
    prefill(c, 0, NULL, 5, 0, &rng);
    for (int32_t t = 1; t <= 3; t++)
        tu_decode_random(c, &rng);
    snapshot before = snapshot_take(c);
    float *k = tu_alloc_normal(17 * D, &rng, 1.0);
    lkv_prefill_io io = {.n_tokens = 17, .k = k, .v = k};
    EXPECT_MESSAGE(lkv_cache_prefill(c, 1, 0, &io), LKV_OUT_OF_MEMORY,
                   "prompt of 17 tokens leaves no room", "policy full with capacity 16",
                   "fits at most 16 prompt tokens");
    expect_unchanged(&before, c, "the refused prefill");
    free(before.ints);
    io.n_tokens = 16;
    for (int32_t l = 0; l < 2; l++)
        TU_OK(lkv_cache_prefill(c, 1, l, &io));
    cr_assert_eq(length_of(c, 1, 1), 16);
    before = snapshot_take(c);
    step_data d;
    lkv_decode_io dio = step_io(&d, &cfg, &rng);
    EXPECT_MESSAGE(lkv_cache_decode(c, 1, 0, &dio), LKV_OUT_OF_MEMORY, "cache full",
                   "sequence 1", "policy full", "does not evict during decode");
    expect_unchanged(&before, c, "the refused step");
    free(before.ints);
    TU_OK(lkv_cache_decode(c, 0, 0, &dio)); /* sequence 0 still has room */
    free(k);
    lkv_cache_destroy(c);
}

/* ---- every policy ------------------------------------------------------------------ */

static lkv_cache_config any_config(lkv_policy_kind kind)
{
    lkv_cache_config cfg = config(2, 2, 1, 16, kind, 8);
    if (kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV || kind == LKV_POLICY_RKV)
        cfg.policy.window = 4;
    if (kind == LKV_POLICY_RKV)
        cfg.policy.interval = 8; /* B + the buffer fits the capacity */
    if (kind == LKV_POLICY_NACL)
        cfg = nacl_config(8);
    return cfg;
}

Test(admission, every_policy_names_what_fits_when_a_prompt_is_over_capacity)
{
    for (int kind = 0; kind < LKV_POLICY_COUNT_; kind++) {
        lkv_cache_config cfg = any_config((lkv_policy_kind)kind);
        lkv_cache *c = tu_cache(&cfg);
        uint64_t rng = 116;
        snapshot before = snapshot_take(c);
        float *k = tu_alloc_normal(17 * 2 * D, &rng, 1.0); /* room for q too */
        lkv_prefill_io io = {.n_tokens = 17, .k = k, .v = k, .q = k};
        char want[96];
        snprintf(want, sizeof want, "policy %s with capacity 16 fits at most 16 prompt tokens",
                 lkv_policy_name((lkv_policy_kind)kind));
        EXPECT_MESSAGE(lkv_cache_prefill(c, 0, 0, &io), LKV_OUT_OF_MEMORY, want);
        expect_unchanged(&before, c, "the refused prefill");
        free(before.ints);
        free(k);
        lkv_cache_destroy(c);
    }
}

/* Every policy that evicts during decode takes a prompt of the whole
 * capacity and decodes 12 windows' worth of steps without a failure. */
Test(admission, every_evicting_policy_decodes_on_after_a_prompt_of_capacity)
{
    for (int kind = 0; kind < LKV_POLICY_COUNT_; kind++) {
        if (kind == LKV_POLICY_FULL || kind == LKV_POLICY_NACL)
            continue;
        lkv_cache_config cfg = any_config((lkv_policy_kind)kind);
        lkv_cache *c = tu_cache(&cfg);
        uint64_t rng = 117;
        prefill(c, 0, NULL, 16, 1, &rng);
        for (int32_t t = 1; t <= 12 * 4; t++) {
            step_data d;
            for (int32_t l = 0; l < 2; l++) {
                lkv_decode_io io = step_io(&d, &cfg, &rng);
                lkv_status st = lkv_cache_decode(c, 0, l, &io);
                cr_assert_eq(st, LKV_OK, "%s, step %d layer %d: %s",
                             lkv_policy_name((lkv_policy_kind)kind), t, l, lkv_last_error());
                cr_assert_leq(length_of(c, 0, l), 16);
            }
        }
        lkv_cache_stats s;
        TU_OK(lkv_cache_get_stats(c, &s));
        cr_assert_leq(s.peak_slots, 2 * 16, "%s", lkv_policy_name((lkv_policy_kind)kind));
        lkv_cache_destroy(c);
    }
}
