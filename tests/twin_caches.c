#include <stdlib.h>
#include <string.h>

#include "twin_caches.h"

enum { SEQS = TWIN_SEQS, LAYERS = TWIN_LAYERS, QH = TWIN_QH, KVH = TWIN_KVH, D = TWIN_D,
       CAP = TWIN_CAP, PROMPT = TWIN_PROMPT };

const lkv_policy_kind twin_every_policy[TWIN_POLICIES] = {
    LKV_POLICY_FULL, LKV_POLICY_LAZY,   LKV_POLICY_STREAMING, LKV_POLICY_H2O,
    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV, LKV_POLICY_NACL,     LKV_POLICY_RKV};

lkv_cache_config twin_config(lkv_policy_kind kind)
{
    lkv_cache_config cfg = tu_config(LAYERS, QH, KVH, D, CAP);
    cfg.sequences = SEQS;
    lkv_policy_params *p = &cfg.policy;
    lkv_policy_init(p, kind);
    p->budget = kind == LKV_POLICY_FULL || kind == LKV_POLICY_NACL ? 0 : 20;
    if (kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV || kind == LKV_POLICY_RKV)
        p->window = 6;
    if (kind == LKV_POLICY_RKV)
        p->interval = 12;
    if (kind == LKV_POLICY_NACL) {
        p->min_length = 8;
        p->proxy_ratio = 0.1f;
        p->proxy_keep_ratio = 0.3f;
        p->random_keep_ratio = 0.2f;
        p->seed = 3;
    }
    return cfg;
}

void twin_same_state(lkv_cache *a, lkv_cache *b, const char *what, int32_t step)
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
    /* A lane evicts each layer before the later layers append the step's
     * token, so b's peak may be lower (lazykv.h, lkv_eviction_timing). */
    int peak_ok = sb.eviction_lane ? sb.peak_slots <= sa.peak_slots : sb.peak_slots == sa.peak_slots;
    cr_assert(sa.evictions == sb.evictions && sa.tokens_evicted == sb.tokens_evicted &&
                  sa.slots_in_use == sb.slots_in_use && peak_ok,
              "%s step %d: counters differ (%lld vs %lld evictions)", what, step,
              (long long)sa.evictions, (long long)sb.evictions);
}

void twin_step(lkv_cache *a, lkv_cache *b, int32_t n, const float *q, const float *k,
               const float *v, const char *what, int32_t t)
{
    static const int32_t seqs[SEQS] = {0, 1, 2};
    float oa[SEQS * QH * D], ob[SEQS * QH * D];
    for (int32_t l = 0; l < LAYERS; l++) {
        lkv_decode_batch_io da = {.n_sequences = n, .sequences = seqs, .q = q, .k = k, .v = v,
                                  .out = oa};
        lkv_decode_batch_io db = da;
        db.out = ob;
        TU_OK(lkv_cache_decode_batch(a, l, &da));
        TU_OK(lkv_cache_decode_batch(b, l, &db));
        cr_assert(!memcmp(oa, ob, sizeof(float) * (size_t)n * QH * D),
                  "%s step %d layer %d: outputs differ", what, t, l);
    }
}

void twin_run(lkv_cache *a, lkv_cache *b, uint64_t seed, int32_t steps, const char *what)
{
    uint64_t rng = seed;
    int32_t seqs[SEQS] = {0, 1, 2}, n_tok[SEQS] = {PROMPT, PROMPT - 7, PROMPT + 5};
    size_t total = 3 * PROMPT - 2;
    float *q = tu_alloc_normal(total * QH * D, &rng, 2.0);
    float *k = tu_alloc_normal(total * KVH * D, &rng, 1.0);
    float *v = tu_alloc_normal(total * KVH * D, &rng, 1.0);
    for (int32_t l = 0; l < LAYERS; l++) {
        lkv_prefill_batch_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok,
                                  .q = q, .k = k, .v = v};
        TU_OK(lkv_cache_prefill_batch(a, l, &p));
        TU_OK(lkv_cache_prefill_batch(b, l, &p));
    }
    for (int32_t t = 1; t <= steps; t++) {
        int32_t n = t % 4 == 3 ? 2 : 3;
        tu_fill_normal(q, (size_t)n * QH * D, &rng, 2.0);
        tu_fill_normal(k, (size_t)n * KVH * D, &rng, 1.0);
        tu_fill_normal(v, (size_t)n * KVH * D, &rng, 1.0);
        twin_step(a, b, n, q, k, v, what, t);
        if (t % 10 == 0)
            twin_same_state(a, b, what, t);
    }
    twin_same_state(a, b, what, steps);
    free(q);
    free(k);
    free(v);
}
