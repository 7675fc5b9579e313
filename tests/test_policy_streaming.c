/* StreamingLLM: sinks and the most recent tokens, nothing else. */
#include <stdlib.h>

#include "test_util.h"

Test(policy_streaming, keeps_sinks_and_most_recent_every_step)
{
    lkv_cache_config cfg = tu_config(2, 2, 1, 8, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_STREAMING));
    cfg.policy.budget = 12;
    cfg.policy.sinks = 3;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 7;
    for (int32_t t = 1; t <= 40; t++) {
        tu_decode_random(c, &rng);
        int32_t n;
        int32_t *pos = tu_positions(c, 0, 1, 0, &n);
        int32_t seen = t;
        cr_assert_eq(n, seen < 12 ? seen : 12, "budget held at t=%d", t);
        if (seen > 12) {
            for (int32_t i = 0; i < 3; i++)
                cr_assert_eq(pos[i], i, "sink %d kept", i);
            for (int32_t i = 3; i < 12; i++)
                cr_assert_eq(pos[i], seen - 12 + i, "recent slot %d at t=%d", i, t);
        }
        free(pos);
    }
    lkv_cache_destroy(c);
}
