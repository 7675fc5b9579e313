/* H2O: every slot accumulates the probability it receives (from the prompt's
 * queries too, when prefill is given them); over budget, keep the last R and
 * the B - R heaviest. Evicts every step, as the reference does. */
#include "policy.h"

#include "error.h"

static const char *const keys[] = {"budget", "recent", NULL};

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    lkv_status st = lkv_check_budget("h2o", p->budget, capacity, (int64_t)p->budget + 1);
    if (st == LKV_OK && p->recent != -1)
        st = lkv_check_range("h2o", "recent", p->recent, 0, p->budget);
    return st;
}

static void defaults(lkv_policy_params *p) { p->recent = -1; }

static void resolve(lkv_policy_params *p)
{
    if (p->recent == -1)
        p->recent = p->budget / 2;
}

static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    (void)t;
    if (n <= p->budget)
        return 0;
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_STATE,
                             .protect_tail = p->recent};
    return 1;
}

static int early_plan(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    return lkv_plan_room_for_one(decode_plan, p, n, plan);
}

static int prefill_votes(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes)
{
    (void)p;
    (void)n;
    *votes = (lkv_vote_plan){.first = 0, .causal = 1, .required = 0};
    return 1;
}

const lkv_policy_rules lkv_policy_h2o = {
    .kind = LKV_POLICY_H2O,
    .name = "h2o",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .defaults = defaults,
    .check = check,
    .resolve = resolve,
    .observes = 1,
    .observe_kind = LKV_OBSERVE_ACCUMULATE,
    .decode_plan = decode_plan,
    .early_plan = early_plan,
    .prefill_votes = prefill_votes,
};
