/* Attention through the public API (prefill k/v, then decode) against an
 * independent float64 reference written here in plain loops: logits =
 * scale * q . k, softmax, weighted sum of V. Covers f32, f16 and bf16
 * storage (and the range each refuses or keeps), GQA
 * ratios 1, 4 and 8, head_dim 64 and 128, cache lengths 1 to 16384, other
 * layers and sequences, the prompt's causal outputs, attention after h2o
 * evictions, the `scale` field, the new token's own key, and the per-slot
 * probabilities a policy observes (tova's state_f) under mean and max group
 * reduction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "test_util.h"

/* Output tolerance, relative to max(1, |reference|). The cpu backend
 * accumulates in double and rounds each output once to f32 (error <=
 * 2^-24 ~ 6e-8 of |out|); this reference differs from it only by double
 * rounding (~1e-15). 1e-6 leaves a 16x margin over the f32 rounding, yet is
 * far below what a missed slot, a wrong scale or K/V kept in f32 where f16
 * was asked for cause (1e-4 and more). */
#define OUT_TOL 1e-6
/* Probabilities are at most 1 and stored as f32 (error <= 6e-8): 1e-6
 * absolute. */
#define PROB_TOL 1e-6

typedef struct shape {
    int32_t q_heads, kv_heads, dim, len;
    lkv_dtype dtype;
    float scale; /* 0: the default 1 / sqrt(dim) */
    uint64_t seed;
} shape;

/* One decode problem: `len` tokens, the last one decoded with query q. */
typedef struct problem {
    shape s;
    float *q;       /* [q_heads][dim] */
    float *k, *v;   /* [len][kv_heads][dim] as handed to lazykv */
    float *ks, *vs; /* the same as stored: rounded for f16 and bf16 caches */
} problem;

/* The value a cache of `dtype` holds for input x (exact as a float). */
static float stored(float x, lkv_dtype dtype)
{
    float y;
    lkv_dtype_store(dtype, &y, 0, x);
    return lkv_dtype_load(dtype, &y, 0);
}

static float *stored_copy(const float *x, size_t n, lkv_dtype dtype)
{
    float *y = malloc(sizeof(float) * n);
    cr_assert_not_null(y);
    for (size_t i = 0; i < n; i++)
        y[i] = stored(x[i], dtype);
    return y;
}

static problem problem_make(shape s)
{
    problem p = {.s = s};
    uint64_t rng = s.seed;
    size_t kvn = (size_t)s.len * (size_t)s.kv_heads * (size_t)s.dim;
    /* q scaled by 2: peakier attention, so a wrong slot or scale shows */
    p.q = tu_alloc_normal((size_t)s.q_heads * (size_t)s.dim, &rng, 2.0);
    p.k = tu_alloc_normal(kvn, &rng, 1.0);
    p.v = tu_alloc_normal(kvn, &rng, 1.0);
    p.ks = stored_copy(p.k, kvn, s.dtype);
    p.vs = stored_copy(p.v, kvn, s.dtype);
    return p;
}

static void problem_free(problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->ks);
    free(p->vs);
}

/* The scale lazykv uses: the float config field, or 1/sqrt(dim) in f32. */
static double effective_scale(const shape *s)
{
    return s->scale > 0.0f ? (double)s->scale : (double)(float)(1.0 / sqrt((double)s->dim));
}

static const float *row_of(const problem *p, const float *x, int32_t token, int32_t kv_head)
{
    return x + ((size_t)token * (size_t)p->s.kv_heads + (size_t)kv_head) * (size_t)p->s.dim;
}

/* Float64 softmax of query head qh over all len stored keys into prob[len]. */
static void ref_probs(const problem *p, int32_t qh, double *prob)
{
    int32_t kvh = qh / (p->s.q_heads / p->s.kv_heads), dim = p->s.dim;
    const float *q = p->q + (size_t)qh * (size_t)dim;
    double scale = effective_scale(&p->s), top = -INFINITY, sum = 0.0;
    for (int32_t i = 0; i < p->s.len; i++) {
        const float *k = row_of(p, p->ks, i, kvh);
        double dot = 0.0;
        for (int32_t d = 0; d < dim; d++)
            dot += (double)q[d] * (double)k[d];
        prob[i] = scale * dot;
        top = fmax(top, prob[i]);
    }
    for (int32_t i = 0; i < p->s.len; i++)
        sum += (prob[i] = exp(prob[i] - top));
    for (int32_t i = 0; i < p->s.len; i++)
        prob[i] /= sum;
}

/* Float64 attention output of every query head: out[q_heads][dim]. */
static double *ref_output(const problem *p)
{
    int32_t dim = p->s.dim;
    double *out = calloc((size_t)p->s.q_heads * (size_t)dim, sizeof(double));
    double *prob = malloc(sizeof(double) * (size_t)p->s.len);
    cr_assert(out && prob);
    for (int32_t qh = 0; qh < p->s.q_heads; qh++) {
        int32_t kvh = qh / (p->s.q_heads / p->s.kv_heads);
        double *o = out + (size_t)qh * (size_t)dim;
        ref_probs(p, qh, prob);
        for (int32_t i = 0; i < p->s.len; i++) {
            const float *v = row_of(p, p->vs, i, kvh);
            for (int32_t d = 0; d < dim; d++)
                o[d] += prob[i] * (double)v[d];
        }
    }
    free(prob);
    return out;
}

static lkv_cache_config config_of(const shape *s)
{
    lkv_cache_config cfg = tu_config(1, s->q_heads, s->kv_heads, s->dim, s->len);
    cfg.dtype = s->dtype;
    cfg.scale = s->scale;
    return cfg;
}

/* Prefills the first len - 1 tokens' k/v of (seq, layer), no queries. */
static void prefill_layer(lkv_cache *c, int32_t seq, int32_t layer, const problem *p)
{
    lkv_prefill_io pre = {.n_tokens = p->s.len - 1, .k = p->k, .v = p->v};
    TU_OK(lkv_cache_prefill(c, seq, layer, &pre));
}

/* Decodes token `token` of p with query p->q at (seq, layer) into
 * out[q_heads][dim]. */
static void decode_token(lkv_cache *c, int32_t seq, int32_t layer, const problem *p,
                         int32_t token, float *out)
{
    lkv_decode_io io = {p->q, row_of(p, p->k, token, 0), row_of(p, p->v, token, 0), out,
                        LKV_MEMORY_HOST};
    TU_OK(lkv_cache_decode(c, seq, layer, &io));
}

/* Decodes the last token of p at (seq, layer). */
static void decode_layer(lkv_cache *c, int32_t seq, int32_t layer, const problem *p, float *out)
{
    decode_token(c, seq, layer, p, p->s.len - 1, out);
}

/* One layer, one sequence: prefill (if there is a prompt), then decode.
 * The prompt gets no queries: only the decode step is checked. */
static void prefill_and_decode(lkv_cache *c, const problem *p, float *out)
{
    if (p->s.len > 1)
        prefill_layer(c, 0, 0, p);
    decode_layer(c, 0, 0, p, out);
}

/* Decodes problem p on a cache made from cfg; out[q_heads][dim]. */
static float *run_output(const problem *p, const lkv_cache_config *cfg)
{
    float *out = malloc(sizeof(float) * (size_t)p->s.q_heads * (size_t)p->s.dim);
    cr_assert_not_null(out);
    lkv_cache *c = tu_cache(cfg);
    prefill_and_decode(c, p, out);
    lkv_cache_destroy(c);
    return out;
}

/* One assertion for the worst element (Criterion reports every assertion,
 * so per-element asserts would dominate the run time). */
static void assert_output_close(const float *got, const double *want, const shape *s)
{
    size_t n = (size_t)s->q_heads * (size_t)s->dim, worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < n; i++) {
        double ratio = fabs((double)got[i] - want[i]) / (OUT_TOL * fmax(1.0, fabs(want[i])));
        if (!(ratio <= worst_ratio)) { /* NaN counts as the worst */
            worst_ratio = ratio;
            worst = i;
        }
    }
    cr_assert(worst_ratio <= 1.0,
              "out[head %zu][%zu] = %.9g, float64 reference %.9g: off by %.3g tolerances "
              "(q_heads %d, kv_heads %d, dim %d, len %d, %s)",
              worst / (size_t)s->dim, worst % (size_t)s->dim, (double)got[worst], want[worst],
              worst_ratio, s->q_heads, s->kv_heads, s->dim, s->len,
              lkv_dtype_name(s->dtype));
}

static void check_output_matches_reference(shape s)
{
    problem p = problem_make(s);
    lkv_cache_config cfg = config_of(&s);
    float *out = run_output(&p, &cfg);
    double *want = ref_output(&p);
    assert_output_close(out, want, &s);
    free(want);
    free(out);
    problem_free(&p);
}

#define SHAPE(qh, kvh, d, n, dt) \
    ((shape){.q_heads = (qh), .kv_heads = (kvh), .dim = (d), .len = (n), .dtype = (dt), \
             .seed = 0x5eed0000u + (uint64_t)(n) * 131u + (uint64_t)(qh) * 7u + (uint64_t)(d)})

/* ---- outputs: f32 storage --------------------------------------------- */

/* One slot: its probability is exactly 1, so the output is the stored v
 * itself, bit for bit (and the float64 reference agrees). */
static void check_single_slot_is_its_value(lkv_dtype dtype)
{
    shape s = SHAPE(4, 4, 64, 1, dtype);
    problem p = problem_make(s);
    lkv_cache_config cfg = config_of(&s);
    float *out = run_output(&p, &cfg);
    cr_assert(memcmp(out, p.vs, sizeof(float) * 4 * 64) == 0, "out differs from the stored v");
    double *want = ref_output(&p);
    assert_output_close(out, want, &s);
    free(want);
    free(out);
    problem_free(&p);
}

Test(attend, f32_single_slot_output_is_its_value)
{
    check_single_slot_is_its_value(LKV_DTYPE_F32);
}

Test(attend, f32_mha_two_slots_match_float64_reference)
{
    check_output_matches_reference(SHAPE(2, 2, 64, 2, LKV_DTYPE_F32));
}

Test(attend, f32_gqa4_dim128_len17_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(8, 2, 128, 17, LKV_DTYPE_F32));
}

Test(attend, f32_gqa8_dim64_len1000_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(16, 2, 64, 1000, LKV_DTYPE_F32));
}

Test(attend, f32_mha_dim128_len1000_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(4, 4, 128, 1000, LKV_DTYPE_F32));
}

Test(attend, f32_gqa4_dim128_len16384_matches_float64_reference)
{
    /* few heads keep 16K slots within a second, also under ASan; two KV
     * heads make the cpu backend split the work over its threads */
    check_output_matches_reference(SHAPE(8, 2, 128, 16384, LKV_DTYPE_F32));
}

/* ---- outputs: f16 storage (reference on the f16-rounded K/V) ---------- */

Test(attend, f16_single_slot_output_is_its_rounded_value)
{
    check_single_slot_is_its_value(LKV_DTYPE_F16);
}

Test(attend, f16_mha_dim64_len2_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(4, 4, 64, 2, LKV_DTYPE_F16));
}

Test(attend, f16_gqa4_dim64_len17_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(4, 1, 64, 17, LKV_DTYPE_F16));
}

Test(attend, f16_gqa8_dim128_len1000_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(8, 1, 128, 1000, LKV_DTYPE_F16));
}

Test(attend, f16_gqa8_dim64_len16384_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(8, 1, 64, 16384, LKV_DTYPE_F16));
}

/* A key above the storage type's largest finite value would be stored as
 * inf and turn every later output of the head into NaN. The cache refuses
 * the token, names the value and the type, and keeps its length. */
static void check_key_beyond_range_is_rejected(lkv_dtype dtype, float k, const char *k_text)
{
    shape s = SHAPE(2, 1, 64, 2, dtype);
    problem p = problem_make(s);
    p.k[64] = k; /* token 1 (the decoded one), dim 0 */
    lkv_cache_config cfg = config_of(&s);
    lkv_cache *c = tu_cache(&cfg);
    prefill_layer(c, 0, 0, &p);
    float out[2 * 64];
    lkv_decode_io io = {p.q, p.k + 64, p.v + 64, out, LKV_MEMORY_HOST};
    lkv_status st = lkv_cache_decode(c, 0, 0, &io);
    char why[1024];
    snprintf(why, sizeof why, "%s", lkv_last_error()); /* the next call clears it */
    int32_t n = -1;
    lkv_cache_sequence_info(c, 0, &n, NULL);
    lkv_cache_destroy(c); /* before asserting: no leak report on failure */
    problem_free(&p);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "decode accepted k = %s into %s storage", k_text,
                 lkv_dtype_name(dtype));
    cr_assert(strstr(why, k_text) && strstr(why, lkv_dtype_name(dtype)), "%s", why);
    cr_assert_eq(n, 1, "the refused token was not appended");
}

Test(attend, f16_key_beyond_half_range_is_rejected)
{
    /* 70000 is a finite f32 but above the largest half, 65504 */
    check_key_beyond_range_is_rejected(LKV_DTYPE_F16, 70000.0f, "70000");
}

/* Guards the rounded-storage tests: on this data rounding K/V as `dtype`
 * instead of as `other` moves the output far beyond OUT_TOL, so a cache that
 * kept K/V in the other type would fail them. */
static void check_storage_differs(lkv_dtype dtype, lkv_dtype other)
{
    shape s = SHAPE(2, 1, 64, 17, dtype);
    problem p = problem_make(s);
    double *rounded = ref_output(&p);
    for (size_t i = 0; i < 17 * 64; i++) {
        p.ks[i] = stored(p.k[i], other);
        p.vs[i] = stored(p.v[i], other);
    }
    double *moved = ref_output(&p);
    double diff = 0.0;
    for (size_t i = 0; i < 2 * 64; i++)
        diff = fmax(diff, fabs(rounded[i] - moved[i]));
    cr_assert_gt(diff, 10 * OUT_TOL, "%s instead of %s storage moved the output by only %.3g",
                 lkv_dtype_name(dtype), lkv_dtype_name(other), diff);
    free(rounded);
    free(moved);
    problem_free(&p);
}

Test(attend, f16_storage_differs_from_f32_storage)
{
    check_storage_differs(LKV_DTYPE_F16, LKV_DTYPE_F32);
}

/* ---- outputs: bf16 storage -------------------------------------------- */

Test(attend, bf16_single_slot_output_is_its_rounded_value)
{
    check_single_slot_is_its_value(LKV_DTYPE_BF16);
}

Test(attend, bf16_mha_dim64_len2_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(4, 4, 64, 2, LKV_DTYPE_BF16));
}

Test(attend, bf16_gqa4_dim128_len17_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(4, 1, 128, 17, LKV_DTYPE_BF16));
}

Test(attend, bf16_gqa8_dim64_len1000_matches_float64_reference)
{
    check_output_matches_reference(SHAPE(8, 1, 64, 1000, LKV_DTYPE_BF16));
}

Test(attend, bf16_key_beyond_bf16_range_is_rejected)
{
    /* 3.4e38 is a finite f32 above the largest bf16, 3.3895314e38: it would
     * round to inf */
    check_key_beyond_range_is_rejected(LKV_DTYPE_BF16, 3.4e38f, "3.4e+38");
}

/* bf16 keeps f32's range: a key f16 refuses and a value at the largest bf16
 * are stored, and the output stays finite. */
Test(attend, bf16_stores_what_f16_cannot)
{
    shape s = SHAPE(2, 1, 64, 2, LKV_DTYPE_BF16);
    problem p = problem_make(s);
    p.k[64] = 70000.0f;             /* above f16's 65504 */
    p.v[64 + 1] = 0x1.fep127f;      /* 3.3895314e38, the largest bf16 */
    lkv_cache_config cfg = config_of(&s);
    lkv_cache *c = tu_cache(&cfg);
    prefill_layer(c, 0, 0, &p);
    float out[2 * 64];
    lkv_decode_io io = {p.q, p.k + 64, p.v + 64, out, LKV_MEMORY_HOST};
    lkv_status st = lkv_cache_decode(c, 0, 0, &io);
    int32_t n = -1;
    lkv_cache_sequence_info(c, 0, &n, NULL);
    lkv_cache_destroy(c);
    problem_free(&p);
    cr_assert_eq(st, LKV_OK, "bf16 decode refused 70000 / 3.39e38: %s", lkv_last_error());
    cr_assert_eq(n, 2);
    for (int i = 0; i < 2 * 64; i++)
        cr_assert(isfinite(out[i]), "out[%d] = %g", i, (double)out[i]);
}

Test(attend, bf16_storage_differs_from_f16_and_f32_storage)
{
    check_storage_differs(LKV_DTYPE_BF16, LKV_DTYPE_F16);
    check_storage_differs(LKV_DTYPE_BF16, LKV_DTYPE_F32);
}

/* ---- other rows and the prompt's own outputs -------------------------- */

Test(attend, every_layer_and_sequence_matches_float64_reference)
{
    /* 2 sequences x 3 layers, each with its own data: a row addressing slip
     * (reading another layer's or sequence's K/V) cannot match */
    enum { SEQS = 2, LAYERS = 3 };
    problem p[SEQS][LAYERS];
    shape s = SHAPE(4, 2, 64, 17, LKV_DTYPE_F32);
    lkv_cache_config cfg = config_of(&s);
    cfg.layers = LAYERS;
    cfg.sequences = SEQS;
    lkv_cache *c = tu_cache(&cfg);
    float *out = malloc(sizeof(float) * 4 * 64);
    cr_assert_not_null(out);
    for (int32_t q = 0; q < SEQS; q++)
        for (int32_t l = 0; l < LAYERS; l++) {
            s.seed = 0xa11u + (uint64_t)(q * LAYERS + l);
            p[q][l] = problem_make(s);
            prefill_layer(c, q, l, &p[q][l]);
        }
    for (int32_t q = 0; q < SEQS; q++)
        for (int32_t l = 0; l < LAYERS; l++) {
            decode_layer(c, q, l, &p[q][l], out);
            double *want = ref_output(&p[q][l]);
            assert_output_close(out, want, &s);
            free(want);
            problem_free(&p[q][l]);
        }
    free(out);
    lkv_cache_destroy(c);
}

Test(attend, prefill_causal_outputs_match_float64_reference)
{
    /* prompt token i attends to tokens 0..i only */
    shape s = SHAPE(8, 2, 64, 17, LKV_DTYPE_F16);
    problem p = problem_make(s);
    uint64_t rng = 0xca5a1u;
    size_t per_token = (size_t)s.q_heads * (size_t)s.dim;
    float *q = tu_alloc_normal((size_t)s.len * per_token, &rng, 2.0);
    float *out = malloc(sizeof(float) * (size_t)s.len * per_token);
    cr_assert_not_null(out);
    lkv_cache_config cfg = config_of(&s);
    lkv_cache *c = tu_cache(&cfg);
    lkv_prefill_io io = {.n_tokens = s.len, .k = p.k, .v = p.v, .q = q, .out = out};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    for (int32_t i = 0; i < s.len; i++) {
        problem view = p; /* the first i + 1 tokens, queried by token i */
        view.s.len = i + 1;
        view.q = q + (size_t)i * per_token;
        double *want = ref_output(&view);
        assert_output_close(out + (size_t)i * per_token, want, &view.s);
        free(want);
    }
    lkv_cache_destroy(c);
    free(out);
    free(q);
    problem_free(&p);
}

/* Float64 output of the query heads of KV head kvh over the tokens listed
 * in idx (indices into p's tokens), as a gathered one-KV-head problem. */
static double *ref_output_over(const problem *p, int32_t kvh, const int32_t *idx, int32_t n)
{
    int32_t per = p->s.q_heads / p->s.kv_heads, dim = p->s.dim;
    problem g = {.s = p->s, .q = p->q + (size_t)kvh * (size_t)per * (size_t)dim};
    g.s.q_heads = per;
    g.s.kv_heads = 1;
    g.s.len = n;
    g.ks = malloc(sizeof(float) * (size_t)n * (size_t)dim);
    g.vs = malloc(sizeof(float) * (size_t)n * (size_t)dim);
    cr_assert(g.ks && g.vs);
    for (int32_t i = 0; i < n; i++) {
        memcpy(g.ks + (size_t)i * dim, row_of(p, p->ks, idx[i], kvh), sizeof(float) * dim);
        memcpy(g.vs + (size_t)i * dim, row_of(p, p->vs, idx[i], kvh), sizeof(float) * dim);
    }
    double *out = ref_output(&g);
    free(g.ks);
    free(g.vs);
    return out;
}

/* Decode step t of the h2o test: reads each head's survivors, decodes token
 * t with a fresh query, checks each group against survivors + token t.
 * Returns 1 if some head had lost a token (something was evicted). */
static int h2o_step_matches(lkv_cache *c, problem *p, int32_t t, uint64_t *rng, float *out)
{
    int32_t heads = p->s.kv_heads, per = p->s.q_heads / heads, dim = p->s.dim, evicted = 0;
    tu_fill_normal(p->q, (size_t)p->s.q_heads * (size_t)dim, rng, 2.0);
    int32_t *idx[8], n[8];
    cr_assert_leq(heads, 8);
    for (int32_t h = 0; h < heads; h++) {
        idx[h] = tu_positions(c, 0, 0, h, &n[h]); /* positions = token indices here */
        idx[h][n[h]++] = t;                       /* capacity leaves room for it */
        evicted |= n[h] < t + 1;
    }
    decode_token(c, 0, 0, p, t, out);
    for (int32_t h = 0; h < heads; h++) {
        double *want = ref_output_over(p, h, idx[h], n[h]);
        shape g = {.q_heads = per, .kv_heads = 1, .dim = dim, .len = n[h]};
        assert_output_close(out + (size_t)h * (size_t)per * (size_t)dim, want, &g);
        free(want);
        free(idx[h]);
    }
    return evicted;
}

Test(attend, h2o_decode_after_evictions_attends_over_the_survivors)
{
    /* budget 16 over 60 steps: compaction must move each kept slot's K and V
     * together, and attention must cover exactly the kept slots + the new */
    enum { STEPS = 60 };
    shape s = SHAPE(4, 2, 64, STEPS, LKV_DTYPE_F32);
    problem p = problem_make(s);
    lkv_cache_config cfg = config_of(&s);
    lkv_policy_init(&cfg.policy, LKV_POLICY_H2O);
    cfg.policy.budget = 16;
    cfg.capacity = 17;
    lkv_cache *c = tu_cache(&cfg);
    float *out = malloc(sizeof(float) * 4 * 64);
    uint64_t rng = 0x420u;
    int evicted = 0;
    for (int32_t t = 0; t < STEPS; t++)
        evicted |= h2o_step_matches(c, &p, t, &rng, out);
    cr_assert(evicted, "no slot was ever evicted: the test checked nothing");
    free(out);
    lkv_cache_destroy(c);
    problem_free(&p);
}

/* ---- the scale field and the new token -------------------------------- */

Test(attend, scale_config_is_honoured)
{
    shape s = SHAPE(4, 2, 64, 17, LKV_DTYPE_F32);
    s.scale = 0.5f; /* the default would be 1/8 */
    problem p = problem_make(s);
    lkv_cache_config cfg = config_of(&s);
    float *scaled = run_output(&p, &cfg);
    cfg.scale = 0.0f;
    float *plain = run_output(&p, &cfg);
    double *want = ref_output(&p);
    assert_output_close(scaled, want, &s);
    double diff = 0.0;
    for (size_t i = 0; i < 4 * 64; i++)
        diff = fmax(diff, fabs((double)scaled[i] - (double)plain[i]));
    cr_assert_gt(diff, 1e-2, "scale 0.5 changed the output by only %.3g", diff);
    free(want);
    free(plain);
    free(scaled);
    problem_free(&p);
}

Test(attend, decode_attends_to_the_new_tokens_key)
{
    /* the new key is 4 q (logit ~ 4 |q|^2 / 8 ~ 128 against ~N(0, 4) for the
     * 16 cached keys) and its value 5: the output must be ~5 everywhere,
     * which it cannot be if the new slot were left out */
    shape s = SHAPE(2, 2, 64, 17, LKV_DTYPE_F32);
    problem p = problem_make(s);
    for (int32_t i = 0; i < 2 * 64; i++) { /* token 16, both heads: the last 128 floats */
        p.k[16 * 2 * 64 + i] = 4.0f * p.q[i];
        p.v[16 * 2 * 64 + i] = 5.0f;
    }
    memcpy(p.ks, p.k, sizeof(float) * 17 * 2 * 64);
    memcpy(p.vs, p.v, sizeof(float) * 17 * 2 * 64);
    lkv_cache_config cfg = config_of(&s);
    float *out = run_output(&p, &cfg);
    for (int32_t i = 0; i < 2 * 64; i++)
        if (fabs(out[i] - 5.0) > 5.0 * OUT_TOL)
            cr_assert_fail("out[%d] = %.9g: the new token (value 5) was not attended", i,
                           (double)out[i]);
    double *want = ref_output(&p);
    assert_output_close(out, want, &s);
    free(want);
    free(out);
    problem_free(&p);
}

/* ---- probabilities: tova's state_f is the last step's probability ----- */

/* tova that never evicts: budget twice the sequence. */
static lkv_cache_config tova_config(const shape *s, lkv_group_reduce reduce, lkv_gqa_mode gqa)
{
    lkv_cache_config cfg = config_of(s);
    lkv_policy_init(&cfg.policy, LKV_POLICY_TOVA);
    cfg.policy.budget = 2 * s->len;
    cfg.policy.group_reduce = reduce;
    cfg.capacity = 2 * s->len + 1;
    cfg.gqa = gqa;
    return cfg;
}

/* Reference probability of cache head ch: its query heads' softmax
 * combined by max or mean (per query heads share one cache head). */
static void ref_group_probs(const problem *p, int32_t ch, int32_t per, lkv_group_reduce reduce,
                            double *want)
{
    double *prob = malloc(sizeof(double) * (size_t)p->s.len);
    cr_assert_not_null(prob);
    for (int32_t i = 0; i < p->s.len; i++)
        want[i] = reduce == LKV_REDUCE_MAX ? -INFINITY : 0.0;
    for (int32_t j = 0; j < per; j++) {
        ref_probs(p, ch * per + j, prob);
        for (int32_t i = 0; i < p->s.len; i++)
            want[i] = reduce == LKV_REDUCE_MAX ? fmax(want[i], prob[i]) : want[i] + prob[i] / per;
    }
    free(prob);
}

static void assert_state_f_close(const lkv_cache *c, const problem *p, int32_t ch,
                                 const double *want)
{
    float *f = malloc(sizeof(float) * (size_t)p->s.len);
    cr_assert_not_null(f);
    lkv_slot_view view = {p->s.len, NULL, NULL, NULL, f};
    int32_t n = 0;
    TU_OK(lkv_cache_read_slots(c, 0, 0, ch, &view, &n));
    cr_assert_eq(n, p->s.len, "cache head %d holds %d slots, expected %d", ch, n, p->s.len);
    int32_t worst = 0;
    for (int32_t i = 1; i < n; i++)
        if (!(fabs(f[i] - want[i]) <= fabs(f[worst] - want[worst])))
            worst = i;
    cr_assert(fabs(f[worst] - want[worst]) <= PROB_TOL,
              "cache head %d slot %d: state_f %.9g, float64 probability %.9g", ch, worst,
              (double)f[worst], want[worst]);
    free(f);
}

/* Decodes p under tova and checks every cache head's state_f. */
static void check_tova_probs(shape s, lkv_group_reduce reduce, lkv_gqa_mode gqa)
{
    problem p = problem_make(s);
    lkv_cache_config cfg = tova_config(&s, reduce, gqa);
    lkv_cache *c = tu_cache(&cfg);
    float *out = malloc(sizeof(float) * (size_t)s.q_heads * (size_t)s.dim);
    prefill_and_decode(c, &p, out);
    int32_t heads = lkv_cache_heads(c), per = s.q_heads / heads;
    double *want = malloc(sizeof(double) * (size_t)s.len);
    cr_assert(out && want);
    for (int32_t ch = 0; ch < heads; ch++) {
        ref_group_probs(&p, ch, per, reduce == LKV_REDUCE_MAX ? reduce : LKV_REDUCE_MEAN, want);
        assert_state_f_close(c, &p, ch, want);
    }
    free(want);
    free(out);
    lkv_cache_destroy(c);
    problem_free(&p);
}

Test(attend, tova_state_f_is_group_mean_probability_by_default)
{
    check_tova_probs(SHAPE(8, 2, 64, 17, LKV_DTYPE_F32), LKV_REDUCE_DEFAULT, LKV_GQA_GROUPED);
}

Test(attend, tova_state_f_is_group_mean_probability_over_1000_slots)
{
    check_tova_probs(SHAPE(8, 1, 128, 1000, LKV_DTYPE_F32), LKV_REDUCE_DEFAULT, LKV_GQA_GROUPED);
}

Test(attend, tova_state_f_is_group_max_probability_with_reduce_max)
{
    check_tova_probs(SHAPE(8, 2, 64, 17, LKV_DTYPE_F32), LKV_REDUCE_MAX, LKV_GQA_GROUPED);
}

Test(attend, tova_f16_state_f_is_probability_over_rounded_keys)
{
    check_tova_probs(SHAPE(4, 1, 64, 1000, LKV_DTYPE_F16), LKV_REDUCE_MAX, LKV_GQA_GROUPED);
}

Test(attend, tova_expanded_state_f_is_each_query_heads_probability)
{
    /* expanded: one cache head per query head, nothing to combine */
    check_tova_probs(SHAPE(8, 2, 64, 17, LKV_DTYPE_F32), LKV_REDUCE_MAX, LKV_GQA_EXPANDED);
}

Test(attend, max_and_mean_reductions_differ)
{
    /* guards the two reduction tests: on this data max and mean are apart by
     * far more than PROB_TOL, so a swapped reduction cannot pass either */
    problem p = problem_make(SHAPE(8, 2, 64, 17, LKV_DTYPE_F32));
    double mx[17], mean[17], diff = 0.0;
    ref_group_probs(&p, 0, 4, LKV_REDUCE_MAX, mx);
    ref_group_probs(&p, 0, 4, LKV_REDUCE_MEAN, mean);
    for (int i = 0; i < 17; i++)
        diff = fmax(diff, mx[i] - mean[i]);
    cr_assert_gt(diff, 1e-2, "max and mean differ by only %.3g", diff);
    problem_free(&p);
}
