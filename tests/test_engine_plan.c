/* Engine-owned caches and lkv_plan_apply: what the paged engine
 * (examples/paged_engine.c) does not reach: refusals that change nothing,
 * the voters of each policy, stats, and plans applied to a dense layout. */
#include <math.h>
#include <stdio.h>
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
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows};
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
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows};
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

/* A refused host apply names `needle` and moves nothing in `bytes` bytes of
 * K (layer 0) and V. */
static void expect_refused(const lkv_eviction_plan *plan, const lkv_kv_layout *kv, size_t bytes,
                           const char *needle)
{
    unsigned char *k = malloc(bytes), *v = malloc(bytes);
    memcpy(k, kv->k_layers[0], bytes);
    memcpy(v, kv->v_layers[0], bytes);
    int32_t freed[8], n = -7;
    cr_expect_eq(lkv_plan_apply(plan, kv, freed, 8, &n), LKV_INVALID_ARGUMENT, "want %s", needle);
    cr_expect(strstr(lkv_last_error(), needle), "want \"%s\" in: %s", needle, lkv_last_error());
    cr_expect_eq(n, -7, "a refused apply wrote out_n_freed");
    cr_expect_eq(memcmp(k, kv->k_layers[0], bytes), 0, "a refused apply moved K");
    cr_expect_eq(memcmp(v, kv->v_layers[0], bytes), 0, "a refused apply moved V");
    free(k);
    free(v);
}

/* The engine's K/V of engine_cache's shape (1 layer, 2 cache heads,
 * head_dim 8, 64 slots): dense f32 [head][slot][dim]. */
static float eng_k[2][64][8], eng_v[2][64][8];

static lkv_kv_layout engine_layout(void **k, void **v)
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 64; j++)
            for (int d = 0; d < 8; d++)
                eng_k[h][j][d] = -(eng_v[h][j][d] = (float)(j + 100 * h));
    k[0] = eng_k;
    v[0] = eng_v;
    return (lkv_kv_layout){
        .dtype = LKV_DTYPE_F32, .head_dim = 8, .layers = 1, .heads = 2, .sequences = 1,
        .k_layers = k, .v_layers = v, .seq_stride = sizeof eng_k, .slot_stride = 8 * 4,
        .head_stride = 64 * 8 * 4,
    };
}

/* Streaming at budget 16 evicts one slot a step from a 20-token prompt on. */
static lkv_cache *evicting_cache(float *probs, lkv_eviction_plan *plan)
{
    lkv_cache *c = engine_cache(LKV_POLICY_STREAMING, 16, 0);
    feed(c, 20, 1, probs);
    TU_OK(lkv_cache_get_plan(c, plan));
    cr_assert_eq(plan->n_rows, 2);
    return c;
}

Test(engine_plan, a_plan_carries_its_cache_and_call)
{
    float probs[4 * 64];
    lkv_eviction_plan a, b;
    lkv_cache *c = evicting_cache(probs, &a);
    TU_OK(lkv_cache_get_plan(c, &b));
    cr_expect_neq(a.cache, 0);
    cr_expect_eq(a.cache, b.cache);
    cr_expect_eq(a.call, b.call, "reading the plan is not a call that changes it");
    cr_expect_eq(a.layers, 1);
    cr_expect_eq(a.heads, 2);
    cr_expect_eq(a.head_dim, 8);
    cr_expect_eq(a.sequences, 1);
    lkv_cache *d = engine_cache(LKV_POLICY_STREAMING, 16, 0);
    TU_OK(lkv_cache_get_plan(d, &b));
    cr_expect_neq(b.cache, a.cache);
    lkv_cache_destroy(d);
    lkv_cache_destroy(c);
}

Test(engine_plan, a_stale_plan_is_refused_moving_nothing)
{
    float probs[4 * 64];
    lkv_eviction_plan plan;
    lkv_cache *c = evicting_cache(probs, &plan);
    void *k[1], *v[1];
    lkv_kv_layout kv = engine_layout(k, v);
    /* reading calls and a refused call leave it valid */
    lkv_cache_stats stats;
    TU_OK(lkv_cache_get_stats(c, &stats));
    int32_t seq = 0;
    int32_t absent = 3;
    lkv_observe_batch_io bad = {.n_sequences = 1, .sequences = &absent, .probs = probs,
                                .stride = 64};
    cr_expect_eq(lkv_cache_observe_batch(c, 0, &bad), LKV_INVALID_ARGUMENT);
    TU_OK(lkv_plan_apply(&plan, &kv, NULL, 0, NULL));
    cr_expect_eq(eng_v[1][4][0], (float)(plan.rows[1].kept[4] + 100), "kept[4] moved to slot 4");
    /* the next step makes it stale, evicting or not */
    kv = engine_layout(k, v);
    lkv_observe_batch_io io = {.n_sequences = 1, .sequences = &seq, .probs = probs, .stride = 64};
    TU_OK(lkv_cache_observe_batch(c, 0, &io));
    expect_refused(&plan, &kv, sizeof eng_k, "stale");
    char want[64];
    snprintf(want, sizeof want, "call %llu of cache %llu", (unsigned long long)plan.call,
             (unsigned long long)plan.cache);
    expect_refused(&plan, &kv, sizeof eng_k, want);
    /* reset, fork and truncate are calls too */
    TU_OK(lkv_cache_get_plan(c, &plan));
    TU_OK(lkv_cache_truncate_sequence(c, 0, 0)); /* of nothing, but a call */
    expect_refused(&plan, &kv, sizeof eng_k, "stale");
    TU_OK(lkv_cache_get_plan(c, &plan));
    TU_OK(lkv_cache_reset_sequence(c, 0));
    expect_refused(&plan, &kv, sizeof eng_k, "stale");
    lkv_cache_destroy(c);
}

Test(engine_plan, a_plan_of_a_destroyed_cache_is_refused)
{
    float probs[4 * 64];
    lkv_eviction_plan plan;
    lkv_cache *c = evicting_cache(probs, &plan);
    lkv_cache_destroy(c); /* plan.rows now point into freed memory: never read */
    void *k[1], *v[1];
    lkv_kv_layout kv = engine_layout(k, v);
    expect_refused(&plan, &kv, sizeof eng_k, "destroyed");
    lkv_slot_map_config mc = {.sequences = 1, .layers = 1, .heads = 2, .capacity = 64,
                              .block_size = 16, .n_blocks = 4};
    lkv_slot_map *m = NULL;
    TU_OK(lkv_slot_map_create(&mc, &m));
    cr_expect_eq(lkv_slot_map_apply(m, &plan, NULL, 0, NULL), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "destroyed"), "%s", lkv_last_error());
    lkv_slot_map_destroy(m);
}

Test(engine_plan, a_plan_applied_to_another_caches_shape_is_refused)
{
    float probs[4 * 64];
    lkv_eviction_plan plan;
    lkv_cache *c = evicting_cache(probs, &plan);
    void *k[2], *v[2];
    lkv_kv_layout kv = engine_layout(k, v);
    kv.head_dim = 4; /* the same bytes, read as 2 heads of 4 per slot: another model's */
    expect_refused(&plan, &kv, sizeof eng_k, "head_dim 4; the plan's cache");
    cr_expect(strstr(lkv_last_error(), "head_dim 8"), "%s", lkv_last_error());
    kv = engine_layout(k, v);
    kv.heads = 1;
    expect_refused(&plan, &kv, sizeof eng_k, "1 heads");
    kv = engine_layout(k, v);
    k[1] = k[0], v[1] = v[0];
    kv.layers = 2;
    expect_refused(&plan, &kv, sizeof eng_k, "2 layers");
    /* a map of another shape */
    lkv_slot_map_config mc = {.sequences = 1, .layers = 1, .heads = 4, .capacity = 64,
                              .block_size = 16, .n_blocks = 4};
    lkv_slot_map *m = NULL;
    TU_OK(lkv_slot_map_create(&mc, &m));
    cr_expect_eq(lkv_slot_map_apply(m, &plan, NULL, 0, NULL), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "the map has 1 layers, 4 heads"), "%s", lkv_last_error());
    lkv_slot_map_destroy(m);
    lkv_cache_destroy(c);
}

/* A hand-built plan moving slots of both rows of sequence 1 (dense_layout). */
static const int32_t keep_a[] = {0, 1, 4, 7}, keep_b[] = {0, 2, 3, 6};
static const lkv_plan_row rows_s1[] = {
    {.sequence = 1, .head = 0, .n_before = 8, .n_kept = 4, .first_move = 2, .kept = keep_a},
    {.sequence = 1, .head = 1, .n_before = 8, .n_kept = 4, .first_move = 1, .kept = keep_b},
};

Test(engine_plan, overlapping_strides_are_refused)
{
    void *k[1], *v[1];
    lkv_kv_layout kv = dense_layout(k, v);
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows_s1};
    kv.seq_stride = 0; /* both sequences in the same bytes */
    expect_refused(&plan, &kv, sizeof dense_k, "seq_stride 0 is below");
    kv = dense_layout(k, v);
    kv.slot_stride = DIM * 2, kv.head_stride = N * DIM * 2, kv.seq_stride = H * N * DIM * 2;
    /* strides made for f16, dtype f32: a head's 12 bytes overrun the next slot's */
    expect_refused(&plan, &kv, sizeof dense_k, "slot_stride 6 is below the 12 bytes");
    kv = dense_layout(k, v);
    kv.head_stride = 4 * DIM * 4; /* rows of 4 slots: the plan's 8 run into the next head */
    expect_refused(&plan, &kv, sizeof dense_k, "head_stride 48 is below the 96 bytes");
}

Test(engine_plan, paged_tables_are_checked_moving_nothing)
{
    void *k[1], *v[1];
    lkv_kv_layout kv = dense_layout(k, v);
    int32_t table[S][2] = {{3, 1}, {0, 2}};
    kv.block_size = 4, kv.block_table = &table[0][0], kv.max_blocks = 2, kv.n_blocks = 4;
    kv.block_stride = 4 * H * DIM * 4, kv.slot_stride = H * DIM * 4, kv.head_stride = DIM * 4;
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows_s1};
    /* sequence 1 writes slots 1 .. 3 (block 0): shared with sequence 0, refused */
    table[0][0] = 0;
    expect_refused(&plan, &kv, sizeof dense_k, "block 0 (sequence 1, entry 0), which the block "
                                               "table names 2 times");
    /* a shared prefix the plan does not write is allowed */
    const int32_t keep_c[] = {0, 1, 2, 3, 5, 6};
    lkv_plan_row tail = {.sequence = 1, .head = 0, .n_before = 8, .n_kept = 6, .first_move = 4,
                         .kept = keep_c};
    lkv_eviction_plan prefix = {.n_rows = 1, .rows = &tail};
    int32_t n_freed = -1;
    TU_OK(lkv_plan_apply(&prefix, &kv, NULL, 0, &n_freed));
    table[0][0] = 3;
    /* an entry outside the pool, even one the plan does not read */
    table[0][1] = 4;
    expect_refused(&plan, &kv, sizeof dense_k, "block_table[0][1] = 4 is outside the pool");
    table[0][1] = 1;
    /* a row longer than the table's room */
    lkv_plan_row longer = rows_s1[0];
    longer.n_before = 9;
    lkv_eviction_plan too_long = {.n_rows = 1, .rows = &longer};
    expect_refused(&too_long, &kv, sizeof dense_k, "row 0 held 9 slots, beyond the layout's room "
                                                   "for 8");
    /* a slot moved into an entry without a block */
    const int32_t keep_d[] = {4, 5};
    lkv_plan_row down = {.sequence = 1, .head = 0, .n_before = 8, .n_kept = 2, .kept = keep_d};
    lkv_eviction_plan into_hole = {.n_rows = 1, .rows = &down};
    table[1][0] = -1;
    expect_refused(&into_hole, &kv, sizeof dense_k, "sequence 1 slot 0 has no block");
}
