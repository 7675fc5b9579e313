/* R-KV through the public API: the prompt's compression against a float64
 * reimplementation written from the formulas (docs/policy-rkv.md), the
 * decode cadence and its peak, and bad parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "window_votes.h"

enum { N = 40, WIN = 4, BUDGET = 16, DIM = 8, QH = 2 };

/* The redundancy softmax over all N slots: unit keys, S with its diagonal
 * and each row's newest near-copy (> 0.5, else slot 0) zeroed, column means. */
static void redundancy(const float *k, double *red)
{
    double u[N][DIM], col[N] = {0}, m = -INFINITY, z = 0;
    for (int j = 0; j < N; j++) {
        double norm = 0;
        for (int d = 0; d < DIM; d++)
            norm += (double)k[j * DIM + d] * k[j * DIM + d];
        for (int d = 0; d < DIM; d++)
            u[j][d] = k[j * DIM + d] / (sqrt(norm) + 1e-8);
    }
    for (int i = 0; i < N; i++) {
        double s[N];
        int spared = 0;
        for (int j = 0; j < N; j++) {
            s[j] = 0;
            for (int d = 0; d < DIM && j != i; d++)
                s[j] += u[i][d] * u[j][d];
            if (s[j] > 0.5)
                spared = j;
        }
        s[spared] = 0;
        for (int j = 0; j < N; j++)
            col[j] += s[j];
    }
    for (int j = 0; j < N; j++)
        m = fmax(m, col[j] / N);
    for (int j = 0; j < N; j++)
        z += exp(col[j] / N - m);
    for (int j = 0; j < N; j++)
        red[j] = exp(col[j] / N - m) / z;
}

/* Which prompt slots R-KV keeps: the top BUDGET - WIN of lambda * I - (1 -
 * lambda) * R over the candidates (I: the window votes / WIN, max-pooled
 * over 7 candidate neighbours), ties to the older, and the window. */
static void reference_keep(const float *q, const float *k, double lambda, int *keep)
{
    double votes[N], red[N], score[N];
    wv_window_votes(q, k, N, N - WIN, QH, DIM, 1, votes); /* rkv combines by max */
    redundancy(k, red);
    for (int i = 0; i < N - WIN; i++) {
        double best = -INFINITY;
        for (int j = i - 3; j <= i + 3; j++)
            if (j >= 0 && j < N - WIN)
                best = fmax(best, votes[j] / WIN);
        score[i] = lambda * best - (1 - lambda) * red[i];
    }
    memset(keep, 0, sizeof(int) * N);
    for (int i = N - WIN; i < N; i++)
        keep[i] = 1;
    for (int picked = 0; picked < BUDGET - WIN; picked++) {
        int best = -1;
        for (int i = 0; i < N - WIN; i++)
            if (!keep[i] && (best < 0 || score[i] > score[best]))
                best = i;
        keep[best] = 1;
    }
}

/* Random keys with near-copies: 5, 6, 7 and 20, 21 repeat slot 4's and
 * slot 19's key up to a small perturbation (cosine ~0.99). */
static void keys_with_copies(float *k, uint64_t *rng)
{
    tu_fill_normal(k, N * DIM, rng, 1.0);
    for (int d = 0; d < DIM; d++) {
        for (int c = 5; c <= 7; c++)
            k[c * DIM + d] = k[4 * DIM + d] + 0.05f * (float)tu_normal(rng);
        for (int c = 20; c <= 21; c++)
            k[c * DIM + d] = k[19 * DIM + d] + 0.05f * (float)tu_normal(rng);
    }
}

static void expect_prompt_kept(const char *lambda)
{
    lkv_cache_config cfg = tu_config(1, QH, 1, DIM, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_RKV));
    cfg.policy.budget = BUDGET;
    cfg.policy.window = WIN;
    cfg.policy.interval = 16;
    TU_OK(lkv_policy_set(&cfg.policy, "mix_lambda", lambda));
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 23;
    float k[N * DIM];
    keys_with_copies(k, &rng);
    float *v = tu_alloc_normal(N * DIM, &rng, 1.0), *q = tu_alloc_normal(N * QH * DIM, &rng, 2.0);
    lkv_prefill_io io = {.n_tokens = N, .k = k, .v = v, .q = q};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    int keep[N];
    reference_keep(q, k, atof(lambda), keep);
    int32_t n;
    int32_t *pos = tu_positions(c, 0, 0, 0, &n);
    cr_assert_eq(n, BUDGET);
    for (int32_t i = 0, j = 0; i < N; i++) {
        if (!keep[i])
            continue;
        cr_assert_eq(pos[j], i, "lambda %s: kept slot %d is position %d, reference says %d",
                     lambda, j, pos[j], i);
        j++;
    }
    free(pos);
    free(v);
    free(q);
    lkv_cache_destroy(c);
}

Test(policy_rkv, prompt_compression_matches_the_float64_reference)
{
    expect_prompt_kept("0.1");
    expect_prompt_kept("0.5");
    expect_prompt_kept("0");
}

/* Redundancy alone (lambda 0) on one-hot keys where slots 2, 3 and 4 hold
 * the same key: row 2 and row 3 spare slot 4 (their newest copy), row 4
 * spares slot 3, so the columns sum to 2 (slot 2), 1 (slot 3) and 0 (slot 4
 * and every other slot). With room for 5 of the 7 candidates the two older
 * copies go and the newest stays. */
Test(policy_rkv, redundancy_alone_evicts_the_older_copies)
{
    enum { P = 8 };
    const int axis[P] = {0, 1, 2, 2, 2, 3, 4, 5};
    float k[P * DIM] = {0}, v[P * DIM] = {0}, q[P * QH * DIM] = {0};
    for (int j = 0; j < P; j++)
        k[j * DIM + axis[j]] = 1.0f;
    lkv_cache_config cfg = tu_config(1, QH, 1, DIM, 160);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_RKV));
    cfg.policy.budget = 6;
    cfg.policy.window = 1;
    cfg.policy.mix_lambda = 0.0f;
    lkv_cache *c = tu_cache(&cfg);
    lkv_prefill_io io = {.n_tokens = P, .k = k, .v = v, .q = q};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    int32_t n;
    int32_t *pos = tu_positions(c, 0, 0, 0, &n);
    const int32_t want[] = {0, 1, 4, 5, 6, 7};
    cr_assert_eq(n, 6);
    for (int32_t j = 0; j < n; j++)
        cr_assert_eq(pos[j], want[j], "kept slot %d is position %d, expected %d", j, pos[j],
                     want[j]);
    free(pos);
    lkv_cache_destroy(c);
}

Test(policy_rkv, decode_compresses_every_buffer_to_the_budget_within_the_peak)
{
    lkv_cache_config cfg = tu_config(2, 2, 1, 8, 1);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_RKV));
    cfg.policy.budget = 20;
    cfg.policy.window = 4;
    cfg.policy.interval = 12;
    const int32_t steps = 90;
    int64_t peak = 0, cap = 0;
    TU_OK(lkv_policy_peak_slots(&cfg.policy, 1, steps - 1, &peak, &cap));
    cfg.capacity = (int32_t)cap;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 29;
    int evictions = 0;
    for (int32_t t = 1; t <= steps; t++) {
        tu_decode_random(c, &rng);
        int32_t n;
        int32_t *pos = tu_positions(c, 0, 1, 0, &n);
        if (t > 20 && t % 12 == 0) {
            cr_assert_eq(n, 20, "budget after the compression at t=%d", t);
            for (int32_t i = 0; i < 4; i++)
                cr_assert_eq(pos[16 + i], t - 4 + i, "window token kept at t=%d", t);
            evictions++;
        } else {
            cr_assert_leq(n, 20 + 12);
        }
        free(pos);
    }
    cr_assert_gt(evictions, 4);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    int64_t rows = (int64_t)lkv_cache_heads(c) * cfg.layers;
    cr_assert_eq(s.peak_slots / rows, peak, "measured peak %lld, promised %lld",
                 (long long)(s.peak_slots / rows), (long long)peak);
    lkv_cache_destroy(c);
}

Test(policy_rkv, bad_parameters_and_an_engine_owned_cache_are_refused_by_name)
{
    struct { const char *key, *value, *says; } bad[] = {
        {"window", "0", "window 0"},
        {"interval", "3", "interval 3 is below window 8"},
        {"mix_lambda", "1.5", "mix_lambda 1.5"},
        {"budget", "5", "budget 5 is below window 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_cache_config cfg = tu_config(1, 1, 1, 4, 256);
        TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_RKV));
        cfg.policy.budget = 64;
        TU_OK(lkv_policy_set(&cfg.policy, bad[i].key, bad[i].value));
        lkv_cache *c = NULL;
        cr_assert_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT, "%s",
                     bad[i].key);
        cr_assert(strstr(lkv_last_error(), bad[i].says), "%s", lkv_last_error());
        cr_assert_null(c);
    }
    lkv_cache_config cfg = tu_config(1, 1, 1, 4, 256);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_RKV));
    cfg.policy.budget = 64;
    cfg.kv_owner = LKV_KV_ENGINE;
    lkv_cache *c = NULL;
    cr_assert_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "engine-owned"), "%s", lkv_last_error());
    cr_assert_null(c);
}

/* A trace's prompt votes (the summed attention of the window queries): the
 * replay's keys are zeros, so the redundancy is the same for every slot and
 * the pooled votes decide. Pooled max over 7 candidate neighbours of
 * [0, 0, 0, 0, 0, 0, 0, 3] ranks 4..7 first (ties to the older), so with
 * budget 5 and window 2 the prompt keeps 4, 5, 6 and the window 8, 9. */
Test(policy_rkv, trace_prefill_votes_are_pooled_by_max)
{
    const char *trace =
        "{\"prompt\": 10, \"heads\": 1, \"budget\": 5, \"window\": 2, \"interval\": 4, "
        "\"policy\": \"rkv\"}\n"
        "{\"prefill\": [0, 0, 0, 0, 0, 0, 0, 3, 1, 1]}\n"
        "{\"t\": 1, \"p\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert(strncmp(got, "{\"t\": 1, \"heads\": [{\"ids\": [4, 5, 6, 8, 9, 10]", 44) == 0, "%s",
              got);
    free(got);
}
