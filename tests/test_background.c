/* Eviction off the critical path (eviction = LKV_EVICTION_BACKGROUND): for
 * every policy, on ref and cpu (a helper thread) and on Vulkan and OpenCL (a
 * second queue, layer by layer, under every granularity), a background
 * cache and an inline one fed the same tokens give the same attention
 * outputs bit for bit at every step and hold the same slots, positions and
 * policy state, with the same counters;
 * an engine-owned cache returns the same plans; destroy with an eviction in
 * flight is clean (ASan and the thread join). */
#include <stdlib.h>
#include <string.h>

#include "twin_caches.h"

enum { SEQS = TWIN_SEQS, LAYERS = TWIN_LAYERS, QH = TWIN_QH, KVH = TWIN_KVH, D = TWIN_D,
       CAP = TWIN_CAP, PROMPT = TWIN_PROMPT };

static lkv_cache *make_as(lkv_runtime *rt, lkv_policy_kind kind, lkv_eviction_timing when,
                          lkv_kv_owner owner, lkv_granularity granularity)
{
    lkv_cache_config cfg = twin_config(kind);
    cfg.eviction = when;
    cfg.granularity = granularity;
    cfg.kv_owner = owner;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

static lkv_cache *make(lkv_runtime *rt, lkv_policy_kind kind, lkv_eviction_timing when,
                       lkv_kv_owner owner)
{
    return make_as(rt, kind, when, owner, LKV_GRANULARITY_HEAD);
}

/* Prompt and `steps` decode steps of both caches (twin_run); `lane`: whether
 * the background cache should evict on a second queue. */
static void run_owned_as(lkv_runtime *rt, lkv_policy_kind kind, int32_t steps,
                         lkv_granularity granularity, int lane)
{
    lkv_cache *in = make_as(rt, kind, LKV_EVICTION_INLINE, LKV_KV_OWNED, granularity);
    lkv_cache *bg = make_as(rt, kind, LKV_EVICTION_BACKGROUND, LKV_KV_OWNED, granularity);
    twin_run(in, bg, 77 + (uint64_t)kind, steps, lkv_policy_name(kind));
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(bg, &st));
    cr_expect(st.evictions == 0 || st.eviction_seconds > 0.0,
              "%s: %lld evictions, none timed", lkv_policy_name(kind), (long long)st.evictions);
    cr_expect_eq(st.eviction_lane, lane, "%s: eviction_lane %d", lkv_policy_name(kind),
                 st.eviction_lane);
    cr_expect(!lane || st.eviction_wait_seconds == 0.0, "%s: a lane's caller waited %g s",
              lkv_policy_name(kind), st.eviction_wait_seconds);
    lkv_cache_destroy(in);
    lkv_cache_destroy(bg);
}

static void run_owned(lkv_runtime *rt, lkv_policy_kind kind, int32_t steps)
{
    run_owned_as(rt, kind, steps, LKV_GRANULARITY_HEAD, 0);
}

Test(background, every_policy_on_ref_decides_as_inline)
{
    for (size_t i = 0; i < TWIN_POLICIES; i++)
        run_owned(tu_runtime(), twin_every_policy[i], 60);
}

Test(background, every_policy_on_cpu_decides_as_inline)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    for (size_t i = 0; i < TWIN_POLICIES; i++)
        run_owned(rt, twin_every_policy[i], 60);
    lkv_runtime_close(rt);
}

/* Vulkan on lavapipe and OpenCL on PoCL where they are (required where
 * LAZYKV_REQUIRE_BACKENDS names them): a lane per cache, each layer evicted
 * as soon as it observed the step (all at the step's end under token).
 * Without LAZYKV_LANES=1 these CPU devices keep to the helper thread. */
Test(background, every_policy_on_a_gpu_lane_decides_as_inline, .timeout = 900)
{
    /* lavapipe and PoCL run on the CPU, where lanes are not the default */
    setenv("LAZYKV_LANES", "1", 1);
    const char *gpus[] = {"vulkan", "opencl"};
    for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++) {
        lkv_runtime *rt = tu_open_backend(gpus[g]);
        if (!rt)
            continue;
        for (size_t i = 0; i < TWIN_POLICIES; i++)
            run_owned_as(rt, twin_every_policy[i], 40, LKV_GRANULARITY_HEAD, 1);
        run_owned_as(rt, LKV_POLICY_LAZY, 40, LKV_GRANULARITY_LAYER, 1);
        run_owned_as(rt, LKV_POLICY_LAZY, 40, LKV_GRANULARITY_TOKEN, 1);
        run_owned_as(rt, LKV_POLICY_H2O, 40, LKV_GRANULARITY_TOKEN, 1);
        unsetenv("LAZYKV_LANES");
        run_owned_as(rt, LKV_POLICY_LAZY, 20, LKV_GRANULARITY_HEAD, 0);
        setenv("LAZYKV_LANES", "1", 1);
        lkv_runtime_close(rt);
    }
}

/* The plan of an engine-owned background cache, read after the step's last
 * layer, is the inline one. */
Test(background, engine_owned_plans_match_inline)
{
    lkv_cache *in = make(tu_runtime(), LKV_POLICY_LAZY, LKV_EVICTION_INLINE, LKV_KV_ENGINE);
    lkv_cache *bg = make(tu_runtime(), LKV_POLICY_LAZY, LKV_EVICTION_BACKGROUND, LKV_KV_ENGINE);
    int32_t seqs[SEQS] = {0, 1, 2}, n_tok[SEQS] = {PROMPT, PROMPT - 7, PROMPT + 5};
    lkv_observe_prompt_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok};
    float *probs = malloc(sizeof(float) * SEQS * QH * CAP);
    uint64_t rng = 5;
    int plans = 0;
    for (int32_t l = 0; l < LAYERS; l++) {
        TU_OK(lkv_cache_observe_prompt(in, l, &p));
        TU_OK(lkv_cache_observe_prompt(bg, l, &p));
    }
    for (int32_t t = 1; t <= 40; t++)
        for (int32_t l = 0; l < LAYERS; l++) {
            for (int32_t i = 0; i < SEQS * QH * CAP; i++)
                probs[i] = (float)(tu_uniform(&rng) * 2e-4);
            lkv_observe_batch_io io = {.n_sequences = SEQS, .sequences = seqs, .probs = probs,
                                       .stride = CAP};
            TU_OK(lkv_cache_observe_batch(in, l, &io));
            TU_OK(lkv_cache_observe_batch(bg, l, &io));
            lkv_eviction_plan pa, pb;
            TU_OK(lkv_cache_get_plan(in, &pa));
            TU_OK(lkv_cache_get_plan(bg, &pb));
            cr_assert_eq(pa.n_rows, pb.n_rows, "step %d layer %d", t, l);
            for (int32_t r = 0; r < pa.n_rows; r++) {
                const lkv_plan_row *a = &pa.rows[r], *b = &pb.rows[r];
                cr_assert(a->sequence == b->sequence && a->layer == b->layer &&
                              a->head == b->head && a->n_kept == b->n_kept &&
                              a->first_move == b->first_move &&
                              !memcmp(a->kept, b->kept, sizeof(int32_t) * (size_t)a->n_kept),
                          "step %d: plan row %d differs", t, r);
            }
            plans += pa.n_rows > 0;
        }
    cr_expect_gt(plans, 3, "the run should evict: %d plans", plans);
    free(probs);
    lkv_cache_destroy(in);
    lkv_cache_destroy(bg);
}

Test(background, destroy_waits_for_an_eviction_in_flight)
{
    lkv_cache *bg = make(tu_runtime(), LKV_POLICY_H2O, LKV_EVICTION_BACKGROUND, LKV_KV_OWNED);
    uint64_t rng = 9;
    int32_t seq = 0;
    float q[QH * D], k[KVH * D], v[KVH * D], out[QH * D];
    for (int32_t t = 0; t < 25; t++)
        for (int32_t l = 0; l < LAYERS; l++) {
            tu_fill_normal(q, QH * D, &rng, 1.0);
            tu_fill_normal(k, KVH * D, &rng, 1.0);
            tu_fill_normal(v, KVH * D, &rng, 1.0);
            lkv_decode_io io = {q, k, v, out, LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(bg, seq, l, &io));
        }
    lkv_cache_destroy(bg); /* h2o evicts every step past the budget: one is in flight */
}

Test(background, a_bad_timing_is_refused_naming_it)
{
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 8);
    cfg.eviction = (lkv_eviction_timing)7;
    lkv_cache *c = NULL;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "eviction 7"), "%s", lkv_last_error());
    cr_expect_null(c);
}
