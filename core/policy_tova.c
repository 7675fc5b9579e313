/* TOVA: over budget, drop the slot with the lowest current-step probability
 * averaged over all heads of the layer; every head drops the same token. In
 * grouped GQA the mean over cache heads of the group means is the mean over
 * all query heads, so the default reduction is the mean. */
#include "policy.h"

static const char *const keys[] = {"budget", NULL};

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    return lkv_check_budget("tova", p->budget, capacity, (int64_t)p->budget + 1);
}

static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    (void)t;
    if (n <= p->budget)
        return 0;
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_GROUP_MEAN};
    return 1;
}

static int early_plan(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    return lkv_plan_room_for_one(decode_plan, p, n, plan);
}

/* Given the prompt's queries, the last one's attention is the current
 * probability at the end of prefill: what an early eviction before step 1
 * ranks by (step 1 itself overwrites it). Without them it ranks ties. */
static int prefill_votes(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes)
{
    (void)p;
    *votes = (lkv_vote_plan){.first = n - 1, .causal = 1, .required = 0};
    return 1;
}

const lkv_policy_rules lkv_policy_tova = {
    .kind = LKV_POLICY_TOVA,
    .name = "tova",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .check = check,
    .observes = 1,
    .observe_kind = LKV_OBSERVE_ASSIGN,
    .decode_plan = decode_plan,
    .early_plan = early_plan,
    .prefill_votes = prefill_votes,
};
