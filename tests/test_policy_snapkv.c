/* SnapKV: prefill votes of the window queries, pooled; decode-time variant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "window_votes.h"

enum { N = 40, WIN = 4, BUDGET = 16, DIM = 8, QH = 2 };

/* Reference in float64: summed causal softmax of the last WIN queries (mean
 * over the two query heads of the group), average-pooled (kernel 5, zero
 * padding counted) over the prefix, top BUDGET - WIN, ties to the older. */
static void reference_keep(const float *q, const float *k, int *keep)
{
    double votes[N], pooled[N];
    wv_window_votes(q, k, N, N - WIN, QH, DIM, 0, votes);
    for (int i = 0; i < N - WIN; i++) {
        pooled[i] = 0;
        for (int j = i - 2; j <= i + 2; j++)
            if (j >= 0 && j < N - WIN)
                pooled[i] += votes[j];
        pooled[i] /= 5;
    }
    memset(keep, 0, sizeof(int) * N);
    for (int i = N - WIN; i < N; i++)
        keep[i] = 1;
    for (int picked = 0; picked < BUDGET - WIN; picked++) {
        int best = -1;
        for (int i = 0; i < N - WIN; i++)
            if (!keep[i] && (best < 0 || pooled[i] > pooled[best]))
                best = i;
        keep[best] = 1;
    }
}

Test(policy_snapkv, prefill_keeps_the_pooled_window_votes_and_the_window)
{
    lkv_cache_config cfg = tu_config(1, QH, 1, DIM, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_SNAPKV));
    cfg.policy.budget = BUDGET;
    cfg.policy.window = WIN;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 17;
    float *k = tu_alloc_normal(N * DIM, &rng, 1.0), *v = tu_alloc_normal(N * DIM, &rng, 1.0);
    float *q = tu_alloc_normal(N * QH * DIM, &rng, 2.0);
    lkv_prefill_io io = {.n_tokens = N, .k = k, .v = v, .q = q};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    int keep[N];
    reference_keep(q, k, keep);
    int32_t n;
    int32_t *pos = tu_positions(c, 0, 0, 0, &n);
    cr_assert_eq(n, BUDGET);
    for (int32_t i = 0, j = 0; i < N; i++) {
        if (!keep[i])
            continue;
        cr_assert_eq(pos[j], i, "kept slot %d is position %d, reference says %d", j, pos[j], i);
        j++;
    }
    free(pos);
    free(k);
    free(v);
    free(q);
    lkv_cache_destroy(c);
}

Test(policy_snapkv, prefill_without_queries_is_refused)
{
    lkv_cache_config cfg = tu_config(1, 1, 1, 4, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_SNAPKV));
    cfg.policy.budget = 8;
    cfg.policy.window = 2;
    lkv_cache *c = tu_cache(&cfg);
    float kv[20 * 4] = {0};
    lkv_prefill_io io = {.n_tokens = 20, .k = kv, .v = kv};
    cr_assert_eq(lkv_cache_prefill(c, 0, 0, &io), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "needs q"), "%s", lkv_last_error());
    lkv_cache_destroy(c);
}

Test(policy_snapkv, decode_evicts_to_budget_every_interval_keeping_the_window)
{
    lkv_cache_config cfg = tu_config(2, 2, 1, 8, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_SNAPKV));
    cfg.policy.budget = 20;
    cfg.policy.window = 4;
    cfg.policy.interval = 10;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 19;
    for (int32_t t = 1; t <= 80; t++) {
        tu_decode_random(c, &rng);
        int32_t n;
        int32_t *pos = tu_positions(c, 0, 1, 0, &n);
        if (t > 20 && t % 10 == 0) {
            cr_assert_eq(n, 20, "budget after the eviction at t=%d", t);
            for (int32_t i = 0; i < 4; i++)
                cr_assert_eq(pos[16 + i], t - 4 + i, "window token kept at t=%d", t);
        } else {
            cr_assert_leq(n, 30);
        }
        free(pos);
    }
    lkv_cache_destroy(c);
}

/* Votes given on the trace's prefill line: pooled [1, 0, 0, 9, 0, 0, 0, 0]
 * over the prefix ids 0..7 (kernel 5, /5) ranks 3, then 1/2/4/5 (9/5 each;
 * older first) ...; with budget 5 and window 2 the top 3 are 1, 2, 3. */
Test(policy_snapkv, trace_prefill_votes_are_pooled)
{
    const char *trace =
        "{\"prompt\": 10, \"heads\": 1, \"budget\": 5, \"window\": 2, \"policy\": \"snapkv\"}\n"
        "{\"prefill\": [1, 0, 0, 9, 0, 0, 0, 0, 5, 5]}\n"
        "{\"t\": 1, \"p\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert(strncmp(got, "{\"t\": 1, \"heads\": [{\"ids\": [1, 2, 3, 8, 9, 10]", 44) == 0, "%s", got);
    free(got);
}
