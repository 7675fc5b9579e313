/* GQA storage modes. With one query head per group, `expanded` stores
 * exactly what `grouped` stores, so both must give the same bits and, under
 * evicting policies, keep the same positions per head. With four query heads
 * per KV head, expanded holds one cache head (a copy of its KV head) per
 * query head: four times the memory, the same attention. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Expanded vs grouped outputs with 4 query heads per group: the cpu backend
 * computes each query head the same way over the same K/V and gives equal
 * bits; 1e-6 * max(1, |x|) is the brief's bound, room for a backend whose
 * kernels order a group's work differently. */
#define MODE_TOL 1e-6

typedef struct pair {
    lkv_cache *grouped, *expanded;
    int32_t q_heads, kv_heads, dim, layers;
} pair;

static pair pair_make(lkv_cache_config cfg)
{
    pair p = {.q_heads = cfg.q_heads, .kv_heads = cfg.kv_heads, .dim = cfg.head_dim,
              .layers = cfg.layers};
    cfg.gqa = LKV_GQA_GROUPED;
    p.grouped = tu_cache(&cfg);
    cfg.gqa = LKV_GQA_EXPANDED;
    p.expanded = tu_cache(&cfg);
    return p;
}

static void pair_free(pair *p)
{
    lkv_cache_destroy(p->grouped);
    lkv_cache_destroy(p->expanded);
}

/* Largest |a - b| / max(1, |b|) over n floats; *identical = same bits. */
static double rel_diff(const float *a, const float *b, size_t n, int *identical)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]) / fmax(1.0, fabs((double)b[i])));
    *identical = memcmp(a, b, n * sizeof(float)) == 0;
    return worst;
}

/* Same prompt (k, v, q, causal out) into both caches, every layer;
 * returns the worst relative output difference, *identical as rel_diff. */
static double prefill_both(pair *p, int32_t n_tokens, uint64_t *rng, int *identical)
{
    size_t qn = (size_t)n_tokens * (size_t)p->q_heads * (size_t)p->dim;
    size_t kvn = (size_t)n_tokens * (size_t)p->kv_heads * (size_t)p->dim;
    float *out_g = malloc(sizeof(float) * qn), *out_e = malloc(sizeof(float) * qn);
    cr_assert(out_g && out_e);
    double worst = 0.0;
    *identical = 1;
    for (int32_t l = 0; l < p->layers; l++) {
        float *q = tu_alloc_normal(qn, rng, 2.0), *k = tu_alloc_normal(kvn, rng, 1.0);
        float *v = tu_alloc_normal(kvn, rng, 1.0);
        lkv_prefill_io io = {.n_tokens = n_tokens, .k = k, .v = v, .q = q, .out = out_g};
        TU_OK(lkv_cache_prefill(p->grouped, 0, l, &io));
        io.out = out_e;
        TU_OK(lkv_cache_prefill(p->expanded, 0, l, &io));
        int same;
        worst = fmax(worst, rel_diff(out_e, out_g, qn, &same));
        *identical &= same;
        free(q);
        free(k);
        free(v);
    }
    free(out_g);
    free(out_e);
    return worst;
}

/* `steps` decode steps of every layer with the same random q/k/v in both
 * caches; returns the worst relative output difference over all of them. */
static double decode_both(pair *p, int steps, uint64_t *rng, int *identical)
{
    size_t qn = (size_t)p->q_heads * (size_t)p->dim, kvn = (size_t)p->kv_heads * (size_t)p->dim;
    float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kvn);
    float *v = malloc(sizeof(float) * kvn), *out_g = malloc(sizeof(float) * qn);
    float *out_e = malloc(sizeof(float) * qn);
    cr_assert(q && k && v && out_g && out_e);
    double worst = 0.0;
    *identical = 1;
    for (int t = 0; t < steps; t++) {
        for (int32_t l = 0; l < p->layers; l++) {
            tu_fill_normal(q, qn, rng, 2.0); /* peaky attention: uneven scores */
            tu_fill_normal(k, kvn, rng, 1.0);
            tu_fill_normal(v, kvn, rng, 1.0);
            lkv_decode_io io = {q, k, v, out_g, LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(p->grouped, 0, l, &io));
            io.out = out_e;
            TU_OK(lkv_cache_decode(p->expanded, 0, l, &io));
            int same;
            worst = fmax(worst, rel_diff(out_e, out_g, qn, &same));
            *identical &= same;
        }
    }
    free(q);
    free(k);
    free(v);
    free(out_g);
    free(out_e);
    return worst;
}

/* Index of the first (layer, head) whose positions differ, or -1. */
static int first_position_mismatch(const pair *p, int32_t *n_g, int32_t *n_e)
{
    for (int32_t l = 0; l < p->layers; l++) {
        for (int32_t h = 0; h < p->kv_heads; h++) {
            int32_t *a = tu_positions(p->grouped, 0, l, h, n_g);
            int32_t *b = tu_positions(p->expanded, 0, l, h, n_e);
            int differ = *n_g != *n_e || memcmp(a, b, sizeof(int32_t) * (size_t)*n_g) != 0;
            free(a);
            free(b);
            if (differ)
                return (int)(l * p->kv_heads + h);
        }
    }
    return -1;
}

/* Whether some two heads of layer 0 kept different positions: without that
 * a per-head comparison could not tell heads apart. */
static int heads_disagree(const lkv_cache *c, int32_t heads)
{
    int32_t n0, n;
    int32_t *first = tu_positions(c, 0, 0, 0, &n0);
    int differ = 0;
    for (int32_t h = 1; h < heads && !differ; h++) {
        int32_t *pos = tu_positions(c, 0, 0, h, &n);
        differ = n != n0 || memcmp(pos, first, sizeof(int32_t) * (size_t)n) != 0;
        free(pos);
    }
    free(first);
    return differ;
}

static void assert_same_stats(const pair *p)
{
    lkv_cache_stats g, e;
    TU_OK(lkv_cache_get_stats(p->grouped, &g));
    TU_OK(lkv_cache_get_stats(p->expanded, &e));
    cr_assert_gt(g.evictions, 0, "no eviction happened: the test would check nothing");
    cr_assert_eq(g.evictions, e.evictions, "evictions: grouped %lld, expanded %lld",
                 (long long)g.evictions, (long long)e.evictions);
    cr_assert_eq(g.tokens_evicted, e.tokens_evicted);
    cr_assert_eq(g.slots_in_use, e.slots_in_use);
}

/* Prompt + many steps under cfg with q_heads == kv_heads; asserts equal
 * bits at every step, the same survivors per head, and that evictions ran. */
static void check_one_head_groups_evict_alike(lkv_cache_config cfg, int steps)
{
    uint64_t rng = 0x6a5u + (uint64_t)cfg.policy.kind;
    pair p = pair_make(cfg);
    cr_assert_eq(lkv_cache_heads(p.grouped), lkv_cache_heads(p.expanded));
    int same_prefill, same_decode;
    prefill_both(&p, 20, &rng, &same_prefill);
    decode_both(&p, steps, &rng, &same_decode);
    cr_assert(same_prefill, "prefill outputs differ between grouped and expanded");
    cr_assert(same_decode, "decode outputs differ between grouped and expanded");
    assert_same_stats(&p);
    int32_t n_g, n_e;
    int bad = first_position_mismatch(&p, &n_g, &n_e);
    cr_assert_eq(bad, -1, "layer %d head %d: positions differ (grouped %d slots, expanded %d)",
                 bad / p.kv_heads, bad % p.kv_heads, n_g, n_e);
    cr_assert(heads_disagree(p.grouped, p.kv_heads), "all heads kept the same positions");
    pair_free(&p);
}

Test(gqa, one_head_groups_give_identical_outputs_under_full)
{
    lkv_cache_config cfg = tu_config(2, 4, 4, 64, 256);
    uint64_t rng = 0x6a51u;
    pair p = pair_make(cfg);
    int same_prefill, same_decode;
    prefill_both(&p, 50, &rng, &same_prefill);
    decode_both(&p, 100, &rng, &same_decode);
    cr_assert(same_prefill, "prefill outputs differ between grouped and expanded");
    cr_assert(same_decode, "decode outputs differ between grouped and expanded");
    pair_free(&p);
}

Test(gqa, one_head_groups_keep_identical_positions_under_lazy)
{
    lkv_cache_config cfg = tu_config(2, 4, 4, 32, 128);
    lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    cfg.policy.budget = 32;
    cfg.policy.window = 8;
    cfg.policy.alpha = 0.02f; /* high enough that heads score slots differently */
    check_one_head_groups_evict_alike(cfg, 300);
}

Test(gqa, one_head_groups_keep_identical_positions_under_h2o)
{
    lkv_cache_config cfg = tu_config(2, 4, 4, 32, 128);
    lkv_policy_init(&cfg.policy, LKV_POLICY_H2O);
    cfg.policy.budget = 32;
    check_one_head_groups_evict_alike(cfg, 300);
}

Test(gqa, cache_heads_are_q_heads_expanded_and_kv_heads_grouped)
{
    pair p = pair_make(tu_config(1, 8, 2, 64, 64));
    cr_assert_eq(lkv_cache_heads(p.expanded), 8);
    cr_assert_eq(lkv_cache_heads(p.grouped), 2);
    pair_free(&p);
}

Test(gqa, expanded_output_matches_grouped_with_4_query_heads_per_kv_head)
{
    /* full policy: the same K/V behind every query head, so attention is
     * mathematically identical in both modes */
    uint64_t rng = 0x6a52u;
    pair p = pair_make(tu_config(2, 8, 2, 64, 256));
    int same;
    double d_prefill = prefill_both(&p, 30, &rng, &same);
    double d_decode = decode_both(&p, 50, &rng, &same);
    cr_assert_leq(d_prefill, MODE_TOL, "prefill outputs differ by %.3g", d_prefill);
    cr_assert_leq(d_decode, MODE_TOL, "decode outputs differ by %.3g", d_decode);
    pair_free(&p);
}

Test(gqa, expanded_reserves_4x_the_kv_bytes_of_grouped)
{
    pair p = pair_make(tu_config(2, 8, 2, 64, 300));
    lkv_cache_stats g, e;
    TU_OK(lkv_cache_get_stats(p.grouped, &g));
    TU_OK(lkv_cache_get_stats(p.expanded, &e));
    /* grouped: 2 layers x 2 heads x 300 slots x (K + V) x 64 x 4 bytes */
    cr_assert_eq(g.kv_bytes_reserved, 2LL * 2 * 300 * 2 * 64 * 4);
    cr_assert_eq(e.kv_bytes_reserved, 4 * g.kv_bytes_reserved, "expanded %lld, grouped %lld",
                 (long long)e.kv_bytes_reserved, (long long)g.kv_bytes_reserved);
    pair_free(&p);
}
