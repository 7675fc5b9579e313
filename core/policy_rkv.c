/* R-KV (Cai et al. 2025, "Redundancy-aware KV cache compression for
 * reasoning models"), as its reference code runs it (docs/policy-rkv.md
 * gives every choice and where lazykv differs): every `interval` (buffer,
 * 128) decode steps a row over its budget is compressed to B. The last
 * `window` (8) queries score the older slots: their attention, summed over
 * the window and divided by it, max-pooled over 7 neighbours, is the
 * importance I; the keys' cosine similarity gives a redundancy R (the
 * backend's redundancy op); the B - window highest lambda * I - (1 -
 * lambda) * R are kept with the window. A prompt over the budget is
 * compressed at prefill the same way, its last `window` queries voting. */
#include "policy.h"

#include "error.h"

static const char *const keys[] = {"budget", "window", "interval", "mix_lambda", NULL};

#define RKV_POOL_KERNEL 7

static void defaults(lkv_policy_params *p)
{
    p->window = 8;
    p->interval = 128;
    p->mix_lambda = 0.1f;
}

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    if (p->window < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "window %d is invalid for rkv: at least one query must score", p->window);
    if (p->interval < p->window)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "interval %d is below window %d for rkv: the scoring queries must fit "
                        "in one buffer", p->interval, p->window);
    lkv_status st = lkv_check_budget("rkv", p->budget, capacity,
                                     (int64_t)p->budget + p->interval);
    if (st == LKV_OK && p->budget < p->window)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "budget %d is below window %d for rkv: the window is always kept",
                      p->budget, p->window);
    if (st == LKV_OK)
        st = lkv_check_range("rkv", "mix_lambda", p->mix_lambda, 0.0, 1.0);
    return st;
}

/* The last `window` steps of each buffer score; the first of them resets. */
static int observe_at(const lkv_policy_params *p, int32_t t, lkv_observe_kind *kind)
{
    int32_t phase = (t - 1) % p->interval, start = p->interval - p->window;
    if (phase < start)
        return 0;
    *kind = phase == start ? LKV_OBSERVE_ASSIGN : LKV_OBSERVE_ACCUMULATE;
    return 1;
}

static void compress(const lkv_policy_params *p, lkv_evict_plan *plan)
{
    *plan = (lkv_evict_plan){.keep = p->budget, .score = LKV_SCORE_POOL_MAX,
                             .protect_tail = p->window, .pool_kernel = RKV_POOL_KERNEL,
                             .redundancy = 1, .mix_lambda = p->mix_lambda,
                             .importance_scale = 1.0f / (float)p->window};
}

/* Also run early when a step would not fit, which the creation check makes
 * unreachable (n <= B after prefill, B + interval <= capacity) but which
 * keeps the rule the same for every policy. */
static int evict_to_budget(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (n <= p->budget)
        return 0;
    compress(p, plan);
    return 1;
}

static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    return t % p->interval == 0 && evict_to_budget(p, n, plan);
}

static int prefill_votes(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes)
{
    if (n <= p->budget)
        return 0;
    *votes = (lkv_vote_plan){.first = n - p->window, .causal = 1, .required = 1};
    return 1;
}

const lkv_policy_rules lkv_policy_rkv = {
    .kind = LKV_POLICY_RKV,
    .name = "rkv",
    .keys = keys,
    .reduce = LKV_REDUCE_MAX,
    .defaults = defaults,
    .check = check,
    .observe_at = observe_at,
    .decode_plan = decode_plan,
    .early_plan = evict_to_budget,
    .prefill_votes = prefill_votes,
    .prefill_plan = evict_to_budget,
};
