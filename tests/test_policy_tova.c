/* TOVA: one decision per layer from the head-averaged current attention. */
#include <stdlib.h>

#include "test_util.h"

/* Head 0 would drop id 0, head 1 id 1; their mean is lowest for id 2. */
Test(policy_tova, decision_is_shared_by_the_layer)
{
    const char *trace = "{\"prompt\": 3, \"heads\": 2, \"budget\": 3, \"policy\": \"tova\"}\n"
                        "{\"t\": 1, \"p\": [[0.0, 0.5, 0.2, 0.3], [0.5, 0.0, 0.2, 0.3]]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 1, 3], \"p\": [0, 0.5, 0.300000012]}, "
                          "{\"ids\": [0, 1, 3], \"p\": [0.5, 0, 0.300000012]}]}\n");
    free(got);
}

Test(policy_tova, every_head_of_a_layer_keeps_the_same_tokens)
{
    lkv_cache_config cfg = tu_config(2, 8, 4, 16, 32);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_TOVA));
    cfg.policy.budget = 16;
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 13;
    for (int32_t t = 1; t <= 50; t++)
        tu_decode_random(c, &rng);
    for (int32_t l = 0; l < 2; l++) {
        int32_t n0, n;
        int32_t *p0 = tu_positions(c, 0, l, 0, &n0);
        cr_assert_eq(n0, 16);
        for (int32_t h = 1; h < 4; h++) {
            int32_t *p = tu_positions(c, 0, l, h, &n);
            cr_assert_arr_eq(p, p0, sizeof(int32_t) * 16, "layer %d head %d differs", l, h);
            free(p);
        }
        free(p0);
    }
    lkv_cache_destroy(c);
}
