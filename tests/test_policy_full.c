/* full: the reference never evicts. */
#include "test_util.h"

Test(policy_full, never_evicts)
{
    lkv_cache_config cfg = tu_config(2, 4, 2, 8, 300);
    lkv_cache *c = tu_cache(&cfg);
    uint64_t rng = 23;
    for (int32_t t = 1; t <= 300; t++)
        tu_decode_random(c, &rng);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.slots_in_use, 300 * 2 * 2);
    cr_assert_eq(s.evictions, 0);
    cr_assert_eq(s.tokens_evicted, 0);
    cr_assert_eq(s.kv_bytes_in_use, s.kv_bytes_reserved, "a full cache uses all it reserved");
    lkv_cache_destroy(c);
}
