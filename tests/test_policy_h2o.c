/* H2O: accumulation of received attention, recent window, budget. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

Test(policy_h2o, accumulates_every_probability_a_slot_receives)
{
    const char *trace = "{\"prompt\": 2, \"heads\": 1, \"budget\": 10, \"policy\": \"h2o\"}\n"
                        "{\"t\": 1, \"p\": [0.5, 0.25, 0.25]}\n"
                        "{\"t\": 2, \"p\": [0.125, 0.5, 0.25, 0.125]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 1, 2], \"acc\": [0.5, 0.25, 0.25]}]}\n"
                          "{\"t\": 2, \"heads\": [{\"ids\": [0, 1, 2, 3], \"acc\": [0.625, 0.75, 0.5, 0.125]}]}\n");
    free(got);
}

/* Budget 3 with recent 1: after step 2 (4 slots) the lightest non-recent
 * accumulated slot (id 2: 0.5 vs 0.625 and 0.75) goes; the newest stays
 * although its own accumulation is the smallest. */
Test(policy_h2o, evicts_the_lightest_outside_the_recent_window)
{
    const char *trace = "{\"prompt\": 2, \"heads\": 1, \"budget\": 3, \"recent\": 1}\n"
                        "{\"t\": 1, \"p\": [0.5, 0.25, 0.25]}\n"
                        "{\"t\": 2, \"p\": [0.125, 0.5, 0.25, 0.125]}\n";
    char *got = tu_replay(trace, "h2o", NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 1, 2], \"acc\": [0.5, 0.25, 0.25]}]}\n"
                          "{\"t\": 2, \"heads\": [{\"ids\": [0, 1, 3], \"acc\": [0.625, 0.75, 0.125]}]}\n");
    free(got);
}

Test(policy_h2o, holds_the_budget_every_step_with_default_recent_half)
{
    lkv_cache_config cfg = tu_config(1, 4, 2, 16, 40);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_H2O));
    cfg.policy.budget = 20;
    lkv_cache *c = tu_cache(&cfg);
    lkv_cache_config got;
    TU_OK(lkv_cache_get_config(c, &got));
    cr_assert_eq(got.policy.recent, 10, "recent defaults to budget / 2");
    uint64_t rng = 11;
    for (int32_t t = 1; t <= 60; t++) {
        tu_decode_random(c, &rng);
        int32_t n;
        int32_t *pos = tu_positions(c, 0, 0, 1, &n);
        cr_assert_eq(n, t < 20 ? t : 20);
        if (t > 20)
            for (int32_t i = 0; i < 10; i++)
                cr_assert_eq(pos[n - 10 + i], t - 10 + i, "recent kept at t=%d", t);
        free(pos);
    }
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.peak_slots, 21 * 2, "one in, one out: peak budget + 1 per head");
    cr_assert_eq(s.tokens_evicted, 40 * 2);
    lkv_cache_destroy(c);
}

/* Prompt queries passed at prefill count toward the accumulation. */
Test(policy_h2o, prefill_queries_accumulate_causally)
{
    lkv_cache_config cfg = tu_config(1, 1, 1, 4, 16);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_H2O));
    cfg.policy.budget = 8;
    lkv_cache *c = tu_cache(&cfg);
    float k[3 * 4] = {0}, v[3 * 4] = {0}, q[3 * 4] = {0}; /* all-zero: uniform attention */
    lkv_prefill_io io = {.n_tokens = 3, .k = k, .v = v, .q = q};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    float acc[16];
    lkv_slot_view view = {16, NULL, NULL, NULL, acc};
    int32_t n;
    TU_OK(lkv_cache_read_slots(c, 0, 0, 0, &view, &n));
    cr_assert_eq(n, 3);
    /* token 0 sees 1 + 1/2 + 1/3, token 1 sees 1/2 + 1/3, token 2 sees 1/3 */
    cr_assert_float_eq(acc[0], 1.0f + 0.5f + 1.0f / 3, 1e-6);
    cr_assert_float_eq(acc[1], 0.5f + 1.0f / 3, 1e-6);
    cr_assert_float_eq(acc[2], 1.0f / 3, 1e-6);
    lkv_cache_destroy(c);
}
