/* The scheduler batches an eviction over every due layer and head into one
 * call per op. A counting backend wraps the CPU backend to see the calls. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "test_util.h"

static lkv_cache *counting_cache(lkv_runtime *rt, const lkv_cache_config *cfg)
{
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, cfg, &c));
    return c;
}

static void counting_close(lkv_cache *c, lkv_runtime *rt)
{
    lkv_cache_destroy(c);
    tu_counting_close(rt);
}

Test(scheduler, one_call_per_op_for_an_eviction_over_all_layers_and_heads)
{
    lkv_runtime *rt = tu_counting_runtime();
    lkv_cache_config cfg = tu_config(6, 8, 4, 8, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.budget = 16;
    cfg.policy.window = 8;
    lkv_cache *c = counting_cache(rt, &cfg);
    uint64_t rng = 29;
    for (int32_t t = 1; t <= 23; t++)
        tu_decode_random(c, &rng);
    cr_assert_eq(tu_counted.score, 0, "no eviction before step 24");
    tu_counted.attend = 0;
    tu_decode_random(c, &rng); /* t = 24: n = 24 > 16 and 24 % 8 == 0 */
    cr_assert_eq(tu_counted.attend, 6, "one attend per layer");
    cr_assert_eq(tu_counted.score, 1);
    cr_assert_eq(tu_counted.select, 1);
    cr_assert_eq(tu_counted.compact, 1);
    cr_assert_eq(tu_counted.rows_seen, 6 * 4, "every layer and KV head in the one batch");
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.evictions, 6);
    cr_assert_eq(s.tokens_evicted, (24 - 16) * 6 * 4);
    counting_close(c, rt);
}

Test(scheduler, nacl_uses_two_selections_in_one_batch)
{
    lkv_runtime *rt = tu_counting_runtime();
    lkv_cache_config cfg = tu_config(3, 2, 2, 4, 128);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_NACL));
    cfg.policy.min_length = 16;
    cfg.policy.sinks = 2;
    cfg.policy.protect_ratio = 0.125f;
    lkv_cache *c = counting_cache(rt, &cfg);
    uint64_t rng = 31;
    float *k = tu_alloc_normal(100 * 2 * 4, &rng, 1.0), *q = tu_alloc_normal(100 * 2 * 4, &rng, 1.0);
    for (int32_t l = 0; l < 3; l++) {
        lkv_prefill_io io = {.n_tokens = 100, .k = k, .v = k, .q = q};
        TU_OK(lkv_cache_prefill(c, 0, l, &io));
        if (l < 2)
            cr_assert_eq(tu_counted.score, 0, "eviction waits for the last layer");
    }
    cr_assert_eq(tu_counted.score, 2);
    cr_assert_eq(tu_counted.select, 2);
    cr_assert_eq(tu_counted.compact, 1);
    cr_assert_eq(tu_counted.rows_seen, 3 * 2);
    int32_t n;
    TU_OK(lkv_cache_sequence_info(c, 0, &n, NULL));
    /* protect ceil(12.5) = 13 (2 sinks + 11 recent), 12 by score, 7 by chance */
    cr_assert_eq(n, 13 + 12 + 7);
    free(k);
    free(q);
    counting_close(c, rt);
}
