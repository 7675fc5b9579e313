/* lkv_cache_observe_batch_qk: the probabilities it recomputes from an
 * engine's q, K and lse against a float64 softmax over the same K, read
 * dense (f16) and paged (f32, blocks out of order); and the refusals of bad
 * input, each of which must leave the cache as it was. Decisions against an
 * owned cache are the paged engine's (tests/paged_engine.sh, --qk). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { HEADS = 2, DIM = 8, CAP = 64, PROMPT = 20, N = PROMPT + 1, BLOCK = 4 };

/* An engine's K for one sequence and layer: the values in double (the
 * reference reads these) and the bytes the layout points at. */
typedef struct engine_k {
    double value[N][HEADS][DIM];
    unsigned char bytes[CAP * HEADS * DIM * sizeof(float)];
    void *layers[1];
    int32_t table[CAP / BLOCK];
    lkv_kv_layout layout;
} engine_k;

/* A random f16 pattern of magnitude 2^-3 .. 2^1, its value by definition. */
static uint16_t random_half(uint64_t *rng, double *out)
{
    uint16_t sign = tu_uniform(rng) < 0.5 ? 0x8000u : 0;
    uint16_t exp = (uint16_t)(12 + (int)(tu_uniform(rng) * 4.0));
    uint16_t frac = (uint16_t)(tu_uniform(rng) * 1024.0) & 0x3ffu;
    uint16_t h = (uint16_t)(sign | (uint16_t)(exp << 10) | frac);
    *out = tu_half_value(h);
    return h;
}

/* Dense [slot][head][dim] f16. */
static void fill_dense_f16(engine_k *e, uint64_t *rng)
{
    uint16_t *k = (uint16_t *)e->bytes;
    for (int32_t j = 0; j < N; j++)
        for (int32_t h = 0; h < HEADS; h++)
            for (int32_t d = 0; d < DIM; d++)
                k[(j * HEADS + h) * DIM + d] = random_half(rng, &e->value[j][h][d]);
    e->layers[0] = e->bytes;
    e->layout = (lkv_kv_layout){
        .dtype = LKV_DTYPE_F16, .head_dim = DIM, .layers = 1, .heads = HEADS, .sequences = 1,
        .k_layers = e->layers, .seq_stride = CAP * HEADS * DIM * 2,
        .slot_stride = HEADS * DIM * 2, .head_stride = DIM * 2};
}

/* Paged [block][head][slot][dim] f32 (FlashInfer's HND), the table naming
 * the blocks back to front so that a read through slot order is wrong. */
static void fill_paged_f32(engine_k *e, uint64_t *rng)
{
    enum { BLOCKS = CAP / BLOCK };
    float *k = (float *)e->bytes;
    for (int32_t b = 0; b < BLOCKS; b++)
        e->table[b] = BLOCKS - 1 - b;
    for (int32_t j = 0; j < N; j++)
        for (int32_t h = 0; h < HEADS; h++)
            for (int32_t d = 0; d < DIM; d++) {
                double v = tu_normal(rng);
                size_t at = ((size_t)(e->table[j / BLOCK] * HEADS + h) * BLOCK + j % BLOCK) * DIM;
                k[at + (size_t)d] = (float)v;
                e->value[j][h][d] = (double)(float)v;
            }
    e->layers[0] = e->bytes;
    e->layout = (lkv_kv_layout){
        .dtype = LKV_DTYPE_F32, .head_dim = DIM, .layers = 1, .heads = HEADS, .sequences = 1,
        .k_layers = e->layers, .slot_stride = DIM * 4, .head_stride = BLOCK * DIM * 4,
        .block_stride = HEADS * BLOCK * DIM * 4, .block_size = BLOCK, .block_table = e->table,
        .max_blocks = BLOCKS, .n_blocks = BLOCKS};
}

/* The step's queries, the float64 softmax of head h into want[h] and its
 * log-sum-exp rounded as an engine returns it. */
static void reference(const engine_k *e, float scale, uint64_t *rng, float *q, float *lse,
                      double want[HEADS][N])
{
    tu_fill_normal(q, HEADS * DIM, rng, 1.0);
    for (int32_t h = 0; h < HEADS; h++) {
        double logit[N], max = -INFINITY, sum = 0.0;
        for (int32_t j = 0; j < N; j++) {
            logit[j] = 0.0;
            for (int32_t d = 0; d < DIM; d++)
                logit[j] += (double)q[h * DIM + d] * e->value[j][h][d];
            logit[j] *= (double)scale;
            max = fmax(max, logit[j]);
        }
        for (int32_t j = 0; j < N; j++)
            sum += exp(logit[j] - max);
        for (int32_t j = 0; j < N; j++)
            want[h][j] = exp(logit[j] - max) / sum;
        lse[h] = (float)(max + log(sum));
    }
}

/* An engine-owned H2O cache (no eviction below its budget) holding a
 * prompt of PROMPT tokens without votes: after one decode step each slot's
 * state_f is the probability the step gave it. */
static lkv_cache *h2o_cache(void)
{
    lkv_cache_config cfg = tu_config(1, HEADS, HEADS, DIM, CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    lkv_policy_init(&cfg.policy, LKV_POLICY_H2O);
    cfg.policy.budget = 48;
    lkv_cache *c = tu_cache(&cfg);
    int32_t seq = 0, n = PROMPT;
    lkv_observe_prompt_io p = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n};
    TU_OK(lkv_cache_observe_prompt(c, 0, &p));
    return c;
}

static void read_state(const lkv_cache *c, float out[HEADS][CAP], int32_t *out_n)
{
    for (int32_t h = 0; h < HEADS; h++) {
        lkv_slot_view v = {.cap = CAP, .state_f = out[h]};
        TU_OK(lkv_cache_read_slots(c, 0, 0, h, &v, &out_n[h]));
    }
}

/* With the engine's lse, or none (lazykv normalises: one f32 rounding of
 * the float64 softmax). */
static void expect_softmax(void (*fill)(engine_k *, uint64_t *), int given_lse, const char *what)
{
    static engine_k e;
    uint64_t rng = 0x9e3779b97f4a7c15u;
    fill(&e, &rng);
    float q[HEADS * DIM], lse[HEADS], scale = 0.35f;
    double want[HEADS][N];
    reference(&e, scale, &rng, q, lse, want);
    lkv_cache *c = h2o_cache();
    int32_t seq = 0;
    lkv_observe_qk_io io = {.n_sequences = 1, .sequences = &seq, .q = q,
                            .lse = given_lse ? lse : NULL, .scale = scale, .k = &e.layout};
    TU_OK(lkv_cache_observe_batch_qk(c, 0, &io));
    float got[HEADS][CAP];
    int32_t n[HEADS];
    read_state(c, got, n);
    double worst = 0.0;
    for (int32_t h = 0; h < HEADS; h++) {
        cr_expect_eq(n[h], N, "%s: head %d holds %d slots", what, h, n[h]);
        for (int32_t j = 0; j < N; j++) {
            /* the f32 lse carries a relative error of 2^-24 of its size
             * into every exponent; the f32 result rounds once more */
            double tol = given_lse ? want[h][j] * (fabs((double)lse[h]) * 1.2e-7 + 1.2e-7)
                                   : want[h][j] * 6e-8;
            tol += 1e-12;
            double err = fabs((double)got[h][j] - want[h][j]);
            worst = fmax(worst, err / want[h][j]);
            cr_expect(err <= tol, "%s: head %d slot %d: %.9g, float64 softmax %.9g", what, h,
                      j, (double)got[h][j], want[h][j]);
        }
    }
    cr_log_info("%s: worst relative error %.3g", what, worst);
    lkv_cache_destroy(c);
}

Test(engine_qk, dense_f16_k_gives_the_float64_softmax)
{
    expect_softmax(fill_dense_f16, 1, "dense f16");
    expect_softmax(fill_dense_f16, 0, "dense f16, no lse");
}

Test(engine_qk, paged_f32_k_gives_the_float64_softmax)
{
    expect_softmax(fill_paged_f32, 1, "paged f32");
    expect_softmax(fill_paged_f32, 0, "paged f32, no lse");
}

/* One bad field at a time: each call is refused naming it, the cache's
 * positions, step and state stay as they were, and the good call after them
 * all is accepted (so the refusals were the fields'). */
Test(engine_qk, bad_input_is_refused_and_changes_nothing)
{
    static engine_k e;
    uint64_t rng = 7;
    fill_dense_f16(&e, &rng);
    float q[HEADS * DIM], lse[HEADS], scale = 0.35f;
    double want[HEADS][N];
    reference(&e, scale, &rng, q, lse, want);
    lkv_cache *c = h2o_cache();
    float before[HEADS][CAP], after[HEADS][CAP];
    int32_t n_before[HEADS], n_after[HEADS];
    read_state(c, before, n_before);

    lkv_kv_layout wide = e.layout, few = e.layout, short_ = e.layout;
    wide.head_dim = DIM + 1;
    few.heads = 1;
    short_.layers = 0;
    float low[HEADS] = {lse[0] - 10.0f, lse[1]}, off[HEADS] = {lse[0], lse[1] + 1.0f};
    float nan_lse[HEADS] = {lse[0], NAN};
    int32_t seq = 0;
    lkv_observe_qk_io good = {.n_sequences = 1, .sequences = &seq, .q = q, .lse = lse,
                              .scale = scale, .k = &e.layout};
    struct { lkv_observe_qk_io io; const char *names; } cases[] = {
        {good, "q is NULL"},
        {good, "k is NULL"},
        {good, "scale 0"},
        {good, "scale nan"},
        {good, "head_dim 9"},
        {good, "heads 1"},
        {good, "layers 0"},
        {good, "is below its slot"},
        {good, "query head 1's 21 probabilities sum to 0.36"},
        {good, "sum to"},
        {good, "lse nan of sequence 0 query head 1"},
    };
    cases[0].io.q = NULL;
    cases[1].io.k = NULL;
    cases[2].io.scale = 0.0f;
    cases[3].io.scale = NAN;
    cases[4].io.k = &wide;
    cases[5].io.k = &few;
    cases[6].io.k = &short_;
    cases[7].io.lse = low;
    cases[8].io.lse = off;
    cases[9].io.scale = scale * 1.01f;
    cases[10].io.lse = nan_lse;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &cases[i].io), LKV_INVALID_ARGUMENT,
                     "case %zu", i);
        cr_expect(strstr(lkv_last_error(), cases[i].names), "case %zu: %s", i, lkv_last_error());
        int32_t len = -1, step = -1;
        TU_OK(lkv_cache_sequence_info(c, 0, &len, &step));
        cr_expect(len == PROMPT && step == 0, "case %zu: len %d step %d", i, len, step);
        read_state(c, after, n_after);
        for (int32_t h = 0; h < HEADS; h++) {
            cr_expect_eq(n_after[h], n_before[h], "case %zu", i);
            cr_expect_arr_eq(after[h], before[h], sizeof(float) * (size_t)n_before[h],
                             "case %zu head %d", i, h);
        }
    }
    TU_OK(lkv_cache_observe_batch_qk(c, 0, &good));
    int32_t len = -1;
    TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
    cr_expect_eq(len, N);
    lkv_cache_destroy(c);
}

/* Through a slot map: the map must be paged like the layout, shaped like
 * the cache, and hold the step's new token in every row. */
Test(engine_qk, a_slot_map_must_match_and_hold_the_new_token)
{
    static engine_k e;
    uint64_t rng = 11;
    fill_paged_f32(&e, &rng);
    float q[HEADS * DIM], lse[HEADS], scale = 0.35f;
    double want[HEADS][N];
    reference(&e, scale, &rng, q, lse, want);
    lkv_cache *c = h2o_cache();
    lkv_slot_map_config mc = {.sequences = 1, .layers = 1, .heads = HEADS, .capacity = CAP,
                              .block_size = BLOCK, .n_blocks = CAP / BLOCK};
    lkv_slot_map *map = NULL, *odd = NULL;
    TU_OK(lkv_slot_map_create(&mc, &map));
    mc.block_size = 2 * BLOCK;
    TU_OK(lkv_slot_map_create(&mc, &odd));
    int32_t slots[PROMPT * HEADS];
    TU_OK(lkv_slot_map_place(map, 0, 0, PROMPT, slots));
    int32_t seq = 0;
    lkv_observe_qk_io io = {.n_sequences = 1, .sequences = &seq, .q = q, .lse = lse,
                            .scale = scale, .k = &e.layout, .map = map};
    cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "place the new tokens first"), "%s", lkv_last_error());
    io.map = odd;
    cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "blocks of 8"), "%s", lkv_last_error());
    lkv_kv_layout dense = e.layout;
    dense.block_size = 0;
    io.k = &dense;
    io.map = map;
    cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "needs a paged layout"), "%s", lkv_last_error());
    int32_t len = -1;
    TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
    cr_expect_eq(len, PROMPT);

    /* Through the map's table, not the layout's: K is rewritten into the
     * blocks the map took (lowest ids first) and the layout's table is
     * spoiled, so the reference's values come back only if the map is read. */
    TU_OK(lkv_slot_map_place(map, 0, 0, 1, slots));
    io.k = &e.layout;
    const int32_t *table = NULL;
    int32_t n_table = 0;
    TU_OK(lkv_slot_map_table(map, 0, &table, &n_table));
    float *k = (float *)e.bytes;
    for (int32_t j = 0; j < N; j++)
        for (int32_t h = 0; h < HEADS; h++)
            for (int32_t d = 0; d < DIM; d++)
                k[((size_t)(table[j / BLOCK] * HEADS + h) * BLOCK + j % BLOCK) * DIM + d] =
                    (float)e.value[j][h][d];
    for (int32_t b = 0; b < CAP / BLOCK; b++)
        e.table[b] = CAP / BLOCK - 1;
    TU_OK(lkv_cache_observe_batch_qk(c, 0, &io));
    float got[HEADS][CAP];
    int32_t n[HEADS];
    read_state(c, got, n);
    for (int32_t h = 0; h < HEADS; h++)
        for (int32_t j = 0; j < N; j++)
            cr_expect(fabs((double)got[h][j] - want[h][j]) <= want[h][j] * 1e-5,
                      "head %d slot %d: %.9g, float64 softmax %.9g", h, j, (double)got[h][j],
                      want[h][j]);
    lkv_slot_map_destroy(odd);
    lkv_slot_map_destroy(map);
    lkv_cache_destroy(c);
}

/* ---- prompt ------------------------------------------------------------ */

/* An engine-owned cache of `kind` for a prompt of N tokens: budget 12, so
 * snapkv and nacl evict at the prompt; h2o keeps its votes' sums. */
static lkv_cache *prompt_cache(lkv_policy_kind kind)
{
    lkv_cache_config cfg = tu_config(1, HEADS, HEADS, DIM, CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    lkv_policy_init(&cfg.policy, kind);
    cfg.policy.budget = kind == LKV_POLICY_H2O || kind == LKV_POLICY_LAZY ? 48 : 12;
    if (kind == LKV_POLICY_SNAPKV)
        cfg.policy.window = 6;
    if (kind == LKV_POLICY_LAZY)
        cfg.policy.window = 8;
    if (kind == LKV_POLICY_NACL) {
        cfg.policy.min_length = 16;
        cfg.policy.proxy_ratio = 0.25f; /* 5 proxies, 4 of which see past their causal rows */
    }
    return tu_cache(&cfg);
}

/* Every prompt token's query, the voters' float64 softmax rounded to f32 as
 * votes [voters][HEADS][CAP], and each token's causal lse (a causal prefill
 * kernel's, whatever the voters see). */
static int32_t prompt_reference(const engine_k *e, const lkv_cache *c, float scale,
                                uint64_t *rng, float *q, float *votes, float *lse)
{
    int32_t first = 0, causal = 0;
    TU_OK(lkv_cache_prompt_voters(c, N, &first, &causal, NULL));
    tu_fill_normal(q, (size_t)N * HEADS * DIM, rng, 1.0);
    for (int32_t a = 0; a < N; a++)
        for (int32_t h = 0; h < HEADS; h++) {
            int32_t sees = causal || a < first ? a + 1 : N;
            double logit[N], max = -INFINITY, sum = 0.0;
            for (int32_t j = 0; j < sees; j++) {
                logit[j] = 0.0;
                for (int32_t d = 0; d < DIM; d++)
                    logit[j] += (double)q[(a * HEADS + h) * DIM + d] * e->value[j][h][d];
                logit[j] *= (double)scale;
                max = fmax(max, logit[j]);
            }
            double causal_max = -INFINITY, causal_sum = 0.0;
            for (int32_t j = 0; j <= a; j++)
                causal_max = fmax(causal_max, logit[j]);
            for (int32_t j = 0; j <= a; j++)
                causal_sum += exp(logit[j] - causal_max);
            lse[a * HEADS + h] = (float)(causal_max + log(causal_sum));
            for (int32_t j = 0; j < sees; j++)
                sum += exp(logit[j] - max);
            for (int32_t j = 0; a >= first && j < sees; j++)
                votes[((a - first) * HEADS + h) * CAP + j] = (float)(exp(logit[j] - max) / sum);
        }
    return N - first;
}

/* Positions and state of both caches' heads, and their plans, the same. */
static void expect_same(const lkv_cache *a, const lkv_cache *b, const char *what)
{
    for (int32_t h = 0; h < HEADS; h++) {
        int32_t pa[CAP], pb[CAP], na = 0, nb = 0;
        float fa[CAP], fb[CAP];
        lkv_slot_view va = {.cap = CAP, .positions = pa, .state_f = fa};
        lkv_slot_view vb = {.cap = CAP, .positions = pb, .state_f = fb};
        TU_OK(lkv_cache_read_slots(a, 0, 0, h, &va, &na));
        TU_OK(lkv_cache_read_slots(b, 0, 0, h, &vb, &nb));
        cr_expect_eq(na, nb, "%s: head %d holds %d and %d", what, h, na, nb);
        cr_expect_arr_eq(pa, pb, sizeof(int32_t) * (size_t)na, "%s: head %d positions", what, h);
        cr_expect_arr_eq(fa, fb, sizeof(float) * (size_t)na, "%s: head %d state", what, h);
    }
    lkv_eviction_plan pa, pb;
    TU_OK(lkv_cache_get_plan(a, &pa));
    TU_OK(lkv_cache_get_plan(b, &pb));
    cr_expect_eq(pa.n_rows, pb.n_rows, "%s: plan rows", what);
}

/* The votes recomputed without an lse are the float64 softmax's, so the
 * decisions and state are those of the votes handed over, bit for bit; with
 * the causal lse they are refused where the policy's voters see the whole
 * prompt (nacl) and accepted where they see 0 .. a. */
Test(engine_qk, prompt_votes_recomputed_decide_as_the_votes_handed_over)
{
    const lkv_policy_kind kinds[] = {LKV_POLICY_H2O, LKV_POLICY_SNAPKV, LKV_POLICY_NACL,
                                     LKV_POLICY_LAZY};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        static engine_k e;
        static float q[N * HEADS * DIM], votes[N * HEADS * CAP], lse[N * HEADS];
        const char *name = lkv_policy_name(kinds[k]);
        uint64_t rng = 99 + k;
        fill_paged_f32(&e, &rng);
        lkv_cache *given = prompt_cache(kinds[k]), *mine = prompt_cache(kinds[k]);
        lkv_cache *with_lse = prompt_cache(kinds[k]);
        float scale = 0.6f;
        int32_t voters = prompt_reference(&e, given, scale, &rng, q, votes, lse);
        int32_t seq = 0, n = N;
        lkv_observe_prompt_io p = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n,
                                   .votes = voters ? votes : NULL, .stride = CAP};
        lkv_observe_prompt_qk_io x = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n,
                                      .q = q, .scale = scale, .k = &e.layout};
        TU_OK(lkv_cache_observe_prompt(given, 0, &p));
        TU_OK(lkv_cache_observe_prompt_qk(mine, 0, &x));
        expect_same(given, mine, name);
        x.lse = lse;
        lkv_status st = lkv_cache_observe_prompt_qk(with_lse, 0, &x);
        if (kinds[k] == LKV_POLICY_NACL) {
            cr_expect_eq(st, LKV_INVALID_ARGUMENT, "nacl took a causal lse");
            cr_expect(strstr(lkv_last_error(), "sum to"), "%s", lkv_last_error());
            int32_t len = -1;
            TU_OK(lkv_cache_sequence_info(with_lse, 0, &len, NULL));
            cr_expect_eq(len, 0);
        } else {
            cr_expect_eq(st, LKV_OK, "%s: %s", name, lkv_last_error());
        }
        if (kinds[k] == LKV_POLICY_LAZY) { /* no voters: q is not needed */
            x.q = NULL;
            lkv_cache *none = prompt_cache(kinds[k]);
            TU_OK(lkv_cache_observe_prompt_qk(none, 0, &x));
            expect_same(given, none, "lazy, q NULL");
            lkv_cache_destroy(none);
        }
        lkv_cache_destroy(given);
        lkv_cache_destroy(mine);
        lkv_cache_destroy(with_lse);
    }
}

Test(engine_qk, a_bad_prompt_is_refused_and_changes_nothing)
{
    static engine_k e;
    static float q[N * HEADS * DIM], votes[N * HEADS * CAP], lse[N * HEADS];
    uint64_t rng = 5;
    fill_dense_f16(&e, &rng);
    lkv_cache *c = prompt_cache(LKV_POLICY_SNAPKV);
    prompt_reference(&e, c, 0.6f, &rng, q, votes, lse);
    int32_t seq = 0, n = N, zero = 0, many = CAP + 1;
    lkv_observe_prompt_qk_io good = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n,
                                     .q = q, .lse = lse, .scale = 0.6f, .k = &e.layout};
    struct { lkv_observe_prompt_qk_io io; const char *names; } cases[] = {
        {good, "q is NULL"}, {good, "n_tokens is NULL"}, {good, "n_tokens[0] = 0"},
        {good, "n_tokens[0] = 65"}, {good, "scale -1"}, {good, "sum to"},
    };
    cases[0].io.q = NULL;
    cases[1].io.n_tokens = NULL;
    cases[2].io.n_tokens = &zero;
    cases[3].io.n_tokens = &many;
    cases[4].io.scale = -1.0f;
    cases[5].io.scale = 0.3f;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(lkv_cache_observe_prompt_qk(c, 0, &cases[i].io), LKV_INVALID_ARGUMENT,
                     "case %zu", i);
        cr_expect(strstr(lkv_last_error(), cases[i].names), "case %zu: %s", i, lkv_last_error());
        int32_t len = -1;
        TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
        cr_expect_eq(len, 0, "case %zu", i);
    }
    TU_OK(lkv_cache_observe_prompt_qk(c, 0, &good));
    int32_t len = -1;
    TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
    cr_expect_eq(len, 12); /* snapkv evicted the prompt to its budget */
    lkv_cache_destroy(c);
}
