/* SnapKV: at prefill the last w prompt queries vote (summed probabilities
 * over the prefix, average-pooled with kernel 5, zero padding counted), keep
 * the top B - w and the window. Decode-time variant, as reasoning papers run
 * it: every `interval` steps the last w decode queries vote, max pooling with
 * kernel 7. */
#include "policy.h"

#include "error.h"

static const char *const keys[] = {"budget", "window", "interval", NULL};

#define SNAPKV_PREFILL_KERNEL 5
#define SNAPKV_DECODE_KERNEL 7

static void defaults(lkv_policy_params *p) { p->window = 32; }

static int32_t interval_of(const lkv_policy_params *p)
{
    return p->interval == 0 ? p->window : p->interval;
}

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    if (p->window < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "window %d is invalid for snapkv: at least one query must vote", p->window);
    int32_t every = interval_of(p);
    if (every != -1 && every < p->window)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "interval %d is below window %d for snapkv: the voting queries must fit "
                        "in one interval (or -1 disables decode-time eviction)",
                        every, p->window);
    lkv_status st = lkv_check_budget("snapkv", p->budget, capacity,
                                     (int64_t)p->budget + (every > 0 ? every : 1));
    if (st == LKV_OK && p->budget < p->window)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "budget %d is below window %d for snapkv: the window is always kept",
                      p->budget, p->window);
    return st;
}

static void resolve(lkv_policy_params *p) { p->interval = interval_of(p); }

/* The last `window` steps of each interval vote; the first of them resets. */
static int observe_at(const lkv_policy_params *p, int32_t t, lkv_observe_kind *kind)
{
    if (p->interval <= 0)
        return 0;
    int32_t phase = (t - 1) % p->interval, start = p->interval - p->window;
    if (phase < start)
        return 0;
    *kind = phase == start ? LKV_OBSERVE_ASSIGN : LKV_OBSERVE_ACCUMULATE;
    return 1;
}

/* The decode-time eviction; also run early when a step would not fit, which
 * the creation check makes unreachable (n <= B after prefill, B + interval
 * <= capacity) but which keeps the rule the same for every policy. */
static int evict_to_budget(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (p->interval <= 0 || n <= p->budget)
        return 0;
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_POOL_MAX,
                             .protect_tail = p->window, .pool_kernel = SNAPKV_DECODE_KERNEL};
    return 1;
}

static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    return p->interval > 0 && t % p->interval == 0 && evict_to_budget(p, n, plan);
}

static int prefill_votes(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes)
{
    if (n <= p->budget)
        return 0;
    *votes = (lkv_vote_plan){.first = n - p->window, .causal = 1, .required = 1};
    return 1;
}

static int prefill_plan(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (n <= p->budget)
        return 0;
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_POOL_AVG,
                             .protect_tail = p->window, .pool_kernel = SNAPKV_PREFILL_KERNEL};
    return 1;
}

const lkv_policy_rules lkv_policy_snapkv = {
    .kind = LKV_POLICY_SNAPKV,
    .name = "snapkv",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .defaults = defaults,
    .check = check,
    .resolve = resolve,
    .observe_at = observe_at,
    .decode_plan = decode_plan,
    .early_plan = evict_to_budget,
    .prefill_votes = prefill_votes,
    .prefill_plan = prefill_plan,
};
