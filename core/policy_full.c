/* full: never evict. The reference point for every fidelity figure. */
#include "policy.h"

static const char *const keys[] = {NULL};

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    (void)p;
    (void)capacity;
    return LKV_OK;
}

const lkv_policy_rules lkv_policy_full = {
    .kind = LKV_POLICY_FULL,
    .name = "full",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .check = check,
};
