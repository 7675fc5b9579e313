/* Engine-owned caches and lkv_plan_apply: what the paged engine
 * (examples/paged_engine.c) does not reach: refusals that change nothing,
 * the voters of each policy, stats, and plans applied to a dense layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static lkv_cache *engine_cache(lkv_policy_kind kind, int32_t budget, int32_t window)
{
    lkv_cache_config cfg = tu_config(1, 4, 2, 8, 64);
    cfg.kv_owner = LKV_KV_ENGINE;
    lkv_policy_init(&cfg.policy, kind);
    cfg.policy.budget = budget;
    if (window)
        cfg.policy.window = window;
    return tu_cache(&cfg);
}

/* A prompt of n tokens with no votes, then `steps` decode steps whose probs
 * are uniform. */
static void feed(lkv_cache *c, int32_t n, int32_t steps, float *probs)
{
    int32_t seq = 0;
    lkv_observe_prompt_io p = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n};
    TU_OK(lkv_cache_observe_prompt(c, 0, &p));
    for (int32_t t = 0; t < steps; t++) {
        int32_t len = 0;
        TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
        for (int32_t i = 0; i < 4 * 64; i++)
            probs[i] = i % 64 <= len ? 1.0f / (float)(len + 1) : 0.0f;
        lkv_observe_batch_io io = {.n_sequences = 1, .sequences = &seq, .probs = probs, .stride = 64};
        TU_OK(lkv_cache_observe_batch(c, 0, &io));
    }
}

Test(engine_plan, owned_and_engine_calls_do_not_mix)
{
    lkv_cache *e = engine_cache(LKV_POLICY_LAZY, 16, 4);
    lkv_cache_config cfg = tu_config(1, 4, 2, 8, 64);
    lkv_cache *o = tu_cache(&cfg);
    float q[32] = {0}, kv[16] = {0}, out[32], probs[4 * 64] = {0};
    int32_t seq = 0;
    lkv_decode_batch_io d = {.n_sequences = 1, .sequences = &seq, .q = q, .k = kv, .v = kv, .out = out};
    cr_expect_eq(lkv_cache_decode_batch(e, 0, &d), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "lkv_cache_observe_batch"), "%s", lkv_last_error());
    lkv_observe_batch_io io = {.n_sequences = 1, .sequences = &seq, .probs = probs, .stride = 64};
    cr_expect_eq(lkv_cache_observe_batch(o, 0, &io), LKV_INVALID_ARGUMENT);
    lkv_eviction_plan plan;
    cr_expect_eq(lkv_cache_get_plan(o, &plan), LKV_INVALID_ARGUMENT);
    int32_t len = -1, step = -1;
    TU_OK(lkv_cache_sequence_info(e, 0, &len, &step));
    cr_expect_eq(len, 0);
    cr_expect_eq(step, 0);
    lkv_cache_destroy(e);
    lkv_cache_destroy(o);
}

Test(engine_plan, bad_probabilities_change_nothing)
{
    lkv_cache *c = engine_cache(LKV_POLICY_LAZY, 16, 4);
    float probs[4 * 64];
    feed(c, 10, 1, probs);
    int32_t seq = 0;
    const float bad[] = {1.5f, -0.25f, NAN};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        for (int32_t i = 0; i < 4 * 64; i++)
            probs[i] = 0.05f;
        probs[2 * 64 + 5] = bad[b];
        lkv_observe_batch_io io = {.n_sequences = 1, .sequences = &seq, .probs = probs, .stride = 64};
        cr_expect_eq(lkv_cache_observe_batch(c, 0, &io), LKV_INVALID_ARGUMENT);
        cr_expect(strstr(lkv_last_error(), "row 2 slot 5"), "%s", lkv_last_error());
    }
    lkv_observe_batch_io narrow = {.n_sequences = 1, .sequences = &seq, .probs = probs, .stride = 11};
    cr_expect_eq(lkv_cache_observe_batch(c, 0, &narrow), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "stride 11"), "%s", lkv_last_error());
    lkv_observe_batch_io none = {.n_sequences = 1, .sequences = &seq, .stride = 64};
    cr_expect_eq(lkv_cache_observe_batch(c, 0, &none), LKV_INVALID_ARGUMENT);
    int32_t len = 0, step = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &len, &step));
    cr_expect_eq(len, 11);
    cr_expect_eq(step, 1);
    lkv_cache_destroy(c);
}

Test(engine_plan, voters_follow_the_policy)
{
    struct { lkv_policy_kind kind; int32_t budget, window, first, causal, required; } cases[] = {
        {LKV_POLICY_LAZY, 16, 4, 40, 0, 0},   /* no votes */
        {LKV_POLICY_H2O, 16, 0, 0, 1, 0},     /* every prompt query, causally */
        {LKV_POLICY_SNAPKV, 16, 8, 32, 1, 1}, /* the last w, causally */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lkv_cache *c = engine_cache(cases[i].kind, cases[i].budget, cases[i].window);
        int32_t first = -1, causal = -1, required = -1;
        TU_OK(lkv_cache_prompt_voters(c, 40, &first, &causal, &required));
        cr_expect_eq(first, cases[i].first, "%s: first %d", lkv_policy_name(cases[i].kind), first);
        cr_expect_eq(causal, cases[i].causal, "%s", lkv_policy_name(cases[i].kind));
        cr_expect_eq(required, cases[i].required, "%s", lkv_policy_name(cases[i].kind));
        cr_expect_eq(lkv_cache_prompt_voters(c, 65, NULL, NULL, NULL), LKV_INVALID_ARGUMENT);
        if (cases[i].required) {
            int32_t seq = 0, n = 40;
            lkv_observe_prompt_io p = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n};
            cr_expect_eq(lkv_cache_observe_prompt(c, 0, &p), LKV_INVALID_ARGUMENT);
            cr_expect(strstr(lkv_last_error(), "needs votes"), "%s", lkv_last_error());
            int32_t len = -1;
            TU_OK(lkv_cache_sequence_info(c, 0, &len, NULL));
            cr_expect_eq(len, 0);
        }
        lkv_cache_destroy(c);
    }
}

Test(engine_plan, stats_count_the_engine_bytes_and_hold_none)
{
    lkv_cache *c = engine_cache(LKV_POLICY_STREAMING, 16, 0);
    float probs[4 * 64];
    feed(c, 20, 3, probs);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_expect_eq(s.kv_bytes_reserved, 0);
    cr_expect_eq(s.slots_in_use, 2 * 16); /* two cache heads at the budget */
    cr_expect_eq(s.kv_bytes_in_use, s.slots_in_use * 2 * 8 * 4);
    lkv_eviction_plan plan;
    TU_OK(lkv_cache_get_plan(c, &plan));
    cr_expect_eq(plan.n_rows, 2);
    for (int32_t r = 0; r < plan.n_rows; r++) {
        cr_expect_eq(plan.rows[r].n_before, 17);
        cr_expect_eq(plan.rows[r].n_kept, 16);
        cr_expect_eq(plan.rows[r].head, r);
        cr_expect_eq(plan.rows[r].kept[3], 3);  /* a sink stays */
        cr_expect_eq(plan.rows[r].kept[4], 5);  /* the oldest after the sinks goes */
        cr_expect_eq(plan.rows[r].first_move, 4);
    }
    lkv_cache_destroy(c);
}

Test(engine_plan, config_values_are_checked)
{
    lkv_cache_config cfg = tu_config(1, 4, 2, 8, 64);
    lkv_cache *c = NULL;
    cfg.kv_owner = (lkv_kv_owner)7;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cfg.kv_owner = LKV_KV_OWNED;
    cfg.granularity = (lkv_granularity)3;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect_null(c);
    lkv_granularity g = LKV_GRANULARITY_HEAD;
    cr_expect_eq(lkv_granularity_from_name("cell", &g), LKV_INVALID_ARGUMENT);
    TU_OK(lkv_granularity_from_name("token", &g));
    cr_expect_eq(g, LKV_GRANULARITY_TOKEN);
    cr_expect_null(lkv_granularity_name((lkv_granularity)9));
}

/* A dense [seq][head][slot][dim] layout of 2 sequences, 1 layer, 2 heads,
 * 8 slots, head_dim 3, K = slot id + 100 * head + 1000 * seq, V = -K. */
enum { S = 2, H = 2, N = 8, DIM = 3 };
static float dense_k[S][H][N][DIM], dense_v[S][H][N][DIM];

static lkv_kv_layout dense_layout(void **k, void **v)
{
    for (int s = 0; s < S; s++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < N; j++)
                for (int d = 0; d < DIM; d++) {
                    dense_k[s][h][j][d] = (float)(j + 100 * h + 1000 * s);
                    dense_v[s][h][j][d] = -dense_k[s][h][j][d];
                }
    k[0] = dense_k;
    v[0] = dense_v;
    return (lkv_kv_layout){
        .dtype = LKV_DTYPE_F32, .head_dim = DIM, .layers = 1, .heads = H, .sequences = S,
        .k_layers = k, .v_layers = v, .seq_stride = sizeof dense_k[0],
        .slot_stride = DIM * 4, .head_stride = N * DIM * 4,
    };
}

Test(engine_plan, apply_moves_dense_rows_in_place)
{
    void *k[1], *v[1];
    lkv_kv_layout kv = dense_layout(k, v);
    const int32_t keep0[] = {0, 1, 4, 7}, keep1[] = {0, 2, 3, 6};
    lkv_plan_row rows[] = {
        {.sequence = 1, .layer = 0, .head = 0, .n_before = 8, .n_kept = 4, .first_move = 2, .kept = keep0},
        {.sequence = 1, .layer = 0, .head = 1, .n_before = 8, .n_kept = 4, .first_move = 1, .kept = keep1},
    };
    lkv_eviction_plan plan = {2, rows};
    int32_t freed = -1;
    TU_OK(lkv_plan_apply(&plan, &kv, NULL, 0, &freed));
    cr_expect_eq(freed, 0);
    for (int j = 0; j < 4; j++)
        for (int d = 0; d < DIM; d++) {
            cr_expect_eq(dense_k[1][0][j][d], (float)(keep0[j] + 1000));
            cr_expect_eq(dense_v[1][1][j][d], -(float)(keep1[j] + 1100));
            cr_expect_eq(dense_k[0][0][j][d], (float)j); /* sequence 0 untouched */
        }
}

Test(engine_plan, a_refused_apply_moves_nothing)
{
    void *k[1], *v[1];
    lkv_kv_layout kv = dense_layout(k, v);
    float before[S][H][N][DIM];
    memcpy(before, dense_k, sizeof before);
    const int32_t good[] = {0, 3, 5}, unsorted[] = {0, 5, 3}, past[] = {0, 3, 8};
    lkv_plan_row rows[] = {
        {.sequence = 0, .head = 0, .n_before = 8, .n_kept = 3, .first_move = 1, .kept = good},
        {.sequence = 0, .head = 1, .n_before = 8, .n_kept = 3, .first_move = 1, .kept = unsorted},
    };
    lkv_eviction_plan plan = {2, rows};
    cr_expect_eq(lkv_plan_apply(&plan, &kv, NULL, 0, NULL), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "row 1 kept[2] = 3"), "%s", lkv_last_error());
    rows[1].kept = past;
    cr_expect_eq(lkv_plan_apply(&plan, &kv, NULL, 0, NULL), LKV_INVALID_ARGUMENT);
    rows[1].kept = good;
    rows[1].head = 2;
    cr_expect_eq(lkv_plan_apply(&plan, &kv, NULL, 0, NULL), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "head 2"), "%s", lkv_last_error());
    cr_expect_eq(memcmp(before, dense_k, sizeof before), 0);

    /* paged: the freed blocks must fit */
    int32_t table[S][2] = {{3, 1}, {0, 2}};
    kv.block_size = 4, kv.block_table = &table[0][0], kv.max_blocks = 2, kv.n_blocks = 4;
    kv.block_stride = 4 * H * DIM * 4, kv.slot_stride = H * DIM * 4, kv.head_stride = DIM * 4;
    rows[1].head = 1;
    int32_t freed[1] = {-1}, n_freed = -1;
    cr_expect_eq(lkv_plan_apply(&plan, &kv, freed, 0, &n_freed), LKV_INVALID_ARGUMENT);
    cr_expect_eq(memcmp(before, dense_k, sizeof before), 0);
    TU_OK(lkv_plan_apply(&plan, &kv, freed, 1, &n_freed));
    cr_expect_eq(n_freed, 1);
    cr_expect_eq(freed[0], 1); /* sequence 0's second block */
    table[1][1] = 9;           /* out of the pool */
    rows[0].sequence = rows[1].sequence = 1;
    cr_expect_eq(lkv_plan_apply(&plan, &kv, freed, 1, &n_freed), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "no block"), "%s", lkv_last_error());
}
