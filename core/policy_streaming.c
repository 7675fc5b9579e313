/* StreamingLLM: the first `sinks` tokens and the most recent budget - sinks,
 * every step. Positions stay as cached (no re-rotation). */
#include "policy.h"

#include "error.h"

static const char *const keys[] = {"budget", "sinks", NULL};

static void defaults(lkv_policy_params *p) { p->sinks = 4; }

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    lkv_status st = lkv_check_budget("streaming", p->budget, capacity, (int64_t)p->budget + 1);
    if (st == LKV_OK)
        st = lkv_check_range("streaming", "sinks", p->sinks, 0, p->budget);
    return st;
}

static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    (void)t;
    if (n <= p->budget)
        return 0;
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_RECENCY,
                             .protect_head = p->sinks};
    return 1;
}

static int early_plan(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    return lkv_plan_room_for_one(decode_plan, p, n, plan);
}

const lkv_policy_rules lkv_policy_streaming = {
    .kind = LKV_POLICY_STREAMING,
    .name = "streaming",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .defaults = defaults,
    .check = check,
    .decode_plan = decode_plan,
    .early_plan = early_plan,
};
