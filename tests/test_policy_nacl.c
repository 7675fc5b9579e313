/* NACL: proxy-score top-k plus reproducible random sampling at prefill. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { N = 64, KEPT = 8 + 16 + 16 };

/* A trace whose prefill votes put ids 8..23 on top (30), ids 24..39 next (20)
 * and the rest at 0; 4 sinks and 4 recent protected (protect 1/8 of 64). */
static char *nacl_trace(unsigned long long seed, int spread)
{
    static char buf[8192];
    int at = snprintf(buf, sizeof buf,
                      "{\"prompt\": %d, \"heads\": 1, \"policy\": \"nacl\", \"min_length\": 32, "
                      "\"proxy_ratio\": 0.1, \"proxy_keep_ratio\": 0.25, \"random_keep_ratio\": "
                      "0.25, \"protect_ratio\": 0.125, \"sinks\": 4, \"seed\": %llu}\n{\"prefill\": [",
                      N, seed);
    for (int i = 0; i < N; i++) {
        int vote = spread ? (i >= 8 && i < 24 ? 30 : i >= 24 && i < 40 ? 20 : 0) : (i >= 8 && i < 24 ? 30 : 0);
        at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%d", i ? ", " : "", vote);
    }
    at += snprintf(buf + at, sizeof buf - (size_t)at, "]}\n{\"t\": 1, \"p\": [");
    for (int i = 0; i <= N; i++)
        at += snprintf(buf + at, sizeof buf - (size_t)at, "%s0", i ? ", " : "");
    snprintf(buf + at, sizeof buf - (size_t)at, "]}\n");
    return buf;
}

/* Parses the ids of the first head from a replay line. */
static int ids_of(const char *line, int *ids)
{
    const char *p = strstr(line, "\"ids\": [");
    cr_assert_not_null(p);
    p += 8;
    int n = 0;
    while (*p && *p != ']') {
        ids[n++] = (int)strtol(p, (char **)&p, 10);
        if (*p == ',')
            p += 2;
    }
    return n;
}

static int replay_ids(unsigned long long seed, int spread, int *ids)
{
    char *got = tu_replay(nacl_trace(seed, spread), NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    int n = ids_of(got, ids);
    free(got);
    return n;
}

Test(policy_nacl, keeps_sinks_recent_and_the_proxy_top_k)
{
    int ids[N + 1];
    int n = replay_ids(1, 0, ids);
    cr_assert_eq(n, KEPT + 1, "kept %d (+ the decoded token)", n);
    int has[N + 1] = {0};
    for (int i = 0; i < n; i++)
        has[ids[i]] = 1;
    for (int i = 0; i < 4; i++)
        cr_assert(has[i], "sink %d evicted", i);
    for (int i = 60; i <= 64; i++)
        cr_assert(has[i], "recent %d evicted", i);
    for (int i = 8; i < 24; i++)
        cr_assert(has[i], "proxy top-k id %d evicted", i);
}

Test(policy_nacl, same_seed_same_choice)
{
    int a[N + 1], b[N + 1];
    int na = replay_ids(42, 0, a), nb = replay_ids(42, 0, b);
    cr_assert_eq(na, nb);
    cr_assert_arr_eq(a, b, sizeof(int) * (size_t)na);
}

Test(policy_nacl, different_seed_different_choice)
{
    int a[N + 1], b[N + 1];
    int na = replay_ids(42, 0, a), nb = replay_ids(43, 0, b);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(a, b, sizeof(int) * (size_t)na) != 0,
              "16 random picks out of 24 equal-score candidates matched for two seeds");
}

/* Sampling is proportional to exp(score): a 20-point lead is never beaten by
 * Gumbel noise, so the random stage picks exactly ids 24..39 for any seed. */
Test(policy_nacl, random_stage_samples_proportional_to_exp_score)
{
    for (unsigned long long seed = 0; seed < 8; seed++) {
        int ids[N + 1];
        int n = replay_ids(seed, 1, ids);
        int has[N + 1] = {0};
        for (int i = 0; i < n; i++)
            has[ids[i]] = 1;
        for (int i = 24; i < 40; i++)
            cr_assert(has[i], "seed %llu: high-score id %d not sampled", seed, i);
    }
}

Test(policy_nacl, short_prompts_are_not_evicted)
{
    lkv_cache_config cfg = tu_config(1, 1, 1, 4, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_NACL));
    lkv_cache *c = tu_cache(&cfg); /* min_length 2048 by default */
    float kv[40 * 4] = {0};
    lkv_prefill_io io = {.n_tokens = 40, .k = kv, .v = kv, .q = kv};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    int32_t n;
    TU_OK(lkv_cache_sequence_info(c, 0, &n, NULL));
    cr_assert_eq(n, 40);
    lkv_cache_destroy(c);
}

/* No sinks, no recent region, no proxy share: the whole choice is random
 * and must still follow the seed. */
Test(policy_nacl, random_only_choice_follows_the_seed)
{
    const char *fmt = "{\"prompt\": 8, \"heads\": 1, \"policy\": \"nacl\", \"min_length\": 1, "
                      "\"proxy_keep_ratio\": 0, \"protect_ratio\": 0, \"random_keep_ratio\": 0.5, "
                      "\"seed\": %d}\n{\"prefill\": [0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6]}\n"
                      "{\"t\": 1, \"p\": [0, 0, 0, 0, 0, 0, 0, 0, 1]}\n";
    char first[256] = "";
    int differs = 0;
    for (int seed = 1; seed <= 6; seed++) {
        char trace[512];
        snprintf(trace, sizeof trace, fmt, seed);
        char *got = tu_replay(trace, NULL, NULL);
        cr_assert_not_null(got, "%s", lkv_last_error());
        int ids[16];
        cr_assert_eq(ids_of(got, ids), 5, "4 sampled + the decoded token: %s", got);
        if (seed == 1)
            snprintf(first, sizeof first, "%s", got);
        else
            differs |= strcmp(first, got) != 0;
        free(got);
    }
    cr_assert(differs, "six seeds all kept the same 4 of 8: the random stage was skipped");
}
