/* Eviction off the critical path (eviction = LKV_EVICTION_BACKGROUND): for
 * every policy, on ref and cpu, a background cache and an inline one fed the
 * same tokens give the same attention outputs bit for bit at every step and
 * hold the same slots, positions and policy state, with the same counters;
 * an engine-owned cache returns the same plans; destroy with an eviction in
 * flight is clean (ASan and the thread join). */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { SEQS = 3, LAYERS = 2, QH = 4, KVH = 2, D = 8, CAP = 96, PROMPT = 30 };

static void params(lkv_policy_params *p, lkv_policy_kind kind)
{
    lkv_policy_init(p, kind);
    p->budget = kind == LKV_POLICY_FULL || kind == LKV_POLICY_NACL ? 0 : 20;
    if (kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV)
        p->window = 6;
    if (kind == LKV_POLICY_NACL) {
        p->min_length = 8;
        p->proxy_ratio = 0.1f;
        p->proxy_keep_ratio = 0.3f;
        p->random_keep_ratio = 0.2f;
        p->seed = 3;
    }
}

static lkv_cache *make(lkv_runtime *rt, lkv_policy_kind kind, lkv_eviction_timing when,
                       lkv_kv_owner owner)
{
    lkv_cache_config cfg = tu_config(LAYERS, QH, KVH, D, CAP);
    cfg.sequences = SEQS;
    cfg.eviction = when;
    cfg.kv_owner = owner;
    params(&cfg.policy, kind);
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

static void same_state(lkv_cache *a, lkv_cache *b, const char *what, int32_t step)
{
    int32_t pa[CAP], pb[CAP], xa[CAP], xb[CAP], ya[CAP], yb[CAP], na, nb;
    float fa[CAP], fb[CAP];
    for (int32_t s = 0; s < SEQS; s++)
        for (int32_t l = 0; l < LAYERS; l++)
            for (int32_t h = 0; h < lkv_cache_heads(a); h++) {
                lkv_slot_view va = {CAP, pa, xa, ya, fa}, vb = {CAP, pb, xb, yb, fb};
                TU_OK(lkv_cache_read_slots(a, s, l, h, &va, &na));
                TU_OK(lkv_cache_read_slots(b, s, l, h, &vb, &nb));
                cr_assert_eq(na, nb, "%s step %d row %d/%d/%d: %d vs %d slots", what, step, s, l,
                             h, na, nb);
                size_t n = sizeof(int32_t) * (size_t)na;
                cr_assert(!memcmp(pa, pb, n) && !memcmp(xa, xb, n) && !memcmp(ya, yb, n) &&
                              !memcmp(fa, fb, n),
                          "%s step %d row %d/%d/%d: slots differ", what, step, s, l, h);
            }
    lkv_cache_stats sa, sb;
    TU_OK(lkv_cache_get_stats(a, &sa));
    TU_OK(lkv_cache_get_stats(b, &sb));
    cr_assert(sa.evictions == sb.evictions && sa.tokens_evicted == sb.tokens_evicted &&
                  sa.slots_in_use == sb.slots_in_use && sa.peak_slots == sb.peak_slots,
              "%s step %d: counters differ (%lld vs %lld evictions)", what, step,
              (long long)sa.evictions, (long long)sb.evictions);
}

/* Prompt and `steps` decode steps of both caches, sequence 2 sitting some
 * steps out; outputs compared at every layer. */
static void run_owned(lkv_runtime *rt, lkv_policy_kind kind, int32_t steps)
{
    lkv_cache *in = make(rt, kind, LKV_EVICTION_INLINE, LKV_KV_OWNED);
    lkv_cache *bg = make(rt, kind, LKV_EVICTION_BACKGROUND, LKV_KV_OWNED);
    uint64_t rng = 77 + (uint64_t)kind;
    int32_t seqs[SEQS] = {0, 1, 2}, n_tok[SEQS] = {PROMPT, PROMPT - 7, PROMPT + 5};
    size_t total = 3 * PROMPT - 2;
    float *q = tu_alloc_normal(total * QH * D, &rng, 2.0);
    float *k = tu_alloc_normal(total * KVH * D, &rng, 1.0);
    float *v = tu_alloc_normal(total * KVH * D, &rng, 1.0);
    for (int32_t l = 0; l < LAYERS; l++) {
        lkv_prefill_batch_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok,
                                  .q = q, .k = k, .v = v};
        TU_OK(lkv_cache_prefill_batch(in, l, &p));
        TU_OK(lkv_cache_prefill_batch(bg, l, &p));
    }
    float oa[SEQS * QH * D], ob[SEQS * QH * D];
    for (int32_t t = 1; t <= steps; t++) {
        int32_t n = t % 4 == 3 ? 2 : 3;
        tu_fill_normal(q, (size_t)n * QH * D, &rng, 2.0);
        tu_fill_normal(k, (size_t)n * KVH * D, &rng, 1.0);
        tu_fill_normal(v, (size_t)n * KVH * D, &rng, 1.0);
        for (int32_t l = 0; l < LAYERS; l++) {
            lkv_decode_batch_io da = {.n_sequences = n, .sequences = seqs, .q = q, .k = k,
                                      .v = v, .out = oa};
            lkv_decode_batch_io db = da;
            db.out = ob;
            TU_OK(lkv_cache_decode_batch(in, l, &da));
            TU_OK(lkv_cache_decode_batch(bg, l, &db));
            cr_assert(!memcmp(oa, ob, sizeof(float) * (size_t)n * QH * D),
                      "policy %d step %d layer %d: outputs differ", (int)kind, t, l);
        }
        if (t % 10 == 0)
            same_state(in, bg, lkv_policy_name(kind), t);
    }
    same_state(in, bg, lkv_policy_name(kind), steps);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(bg, &st));
    cr_expect(st.evictions == 0 || st.eviction_seconds > 0.0,
              "%s: %lld evictions, none timed", lkv_policy_name(kind), (long long)st.evictions);
    free(q);
    free(k);
    free(v);
    lkv_cache_destroy(in);
    lkv_cache_destroy(bg);
}

static const lkv_policy_kind every[] = {LKV_POLICY_FULL, LKV_POLICY_LAZY, LKV_POLICY_STREAMING,
                                        LKV_POLICY_H2O, LKV_POLICY_TOVA, LKV_POLICY_SNAPKV,
                                        LKV_POLICY_NACL};

Test(background, every_policy_on_ref_decides_as_inline)
{
    for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
        run_owned(tu_runtime(), every[i], 60);
}

Test(background, every_policy_on_cpu_decides_as_inline)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
        run_owned(rt, every[i], 60);
    lkv_runtime_close(rt);
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
