/* LazyEviction (spec/policies.md, section 1): observe every step, evict every
 * W steps when over budget, keeping the last W slots and the B - W best
 * MRI scores, and early when a step would not fit (docs/policies-admission.md).
 * Grouped GQA combines a group's probabilities by max before the threshold
 * test, a documented deviation from the per-query-head reference.
 *
 * schedule = peak is lazykv's own variant (README "Policies",
 * docs/policies-admission.md), never the
 * paper's: the same score and cadence, down to B - W (the last W slots and
 * the B - 2W best scores), and at once whenever a step leaves B or more,
 * so that decode holds at most B where the paper's schedule peaks at
 * B + W. */
#include "policy.h"

#include "error.h"

static const char *const keys[] = {"budget", "window", "alpha", "schedule", NULL};

static void defaults(lkv_policy_params *p)
{
    p->window = 101; /* the authors' W for a 7B Qwen model on GSM8K */
    p->alpha = 1e-4f;
}

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    if (p->window < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "window %d is invalid for lazy: the eviction period W must be >= 1",
                        p->window);
    if (!lkv_lazy_schedule_name(p->schedule))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "schedule %d is not LKV_LAZY_FAITHFUL or LKV_LAZY_PEAK for lazy",
                        (int)p->schedule);
    int peak = p->schedule == LKV_LAZY_PEAK;
    /* a prompt of B tokens and the first step's: B + 1 with the peak schedule */
    lkv_status st = lkv_check_budget("lazy", p->budget, capacity,
                                     (int64_t)p->budget + (peak ? 1 : p->window));
    if (st == LKV_OK && !peak && p->budget < p->window)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "budget %d is below window %d for lazy: the last W slots are always kept",
                      p->budget, p->window);
    if (st == LKV_OK && peak && (int64_t)p->budget < 2 * (int64_t)p->window)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "budget %d is below twice window %d for lazy with schedule peak: it keeps "
                      "B - W slots, the last W among them",
                      p->budget, p->window);
    if (st == LKV_OK)
        st = lkv_check_range("lazy", "alpha", p->alpha, 0.0, 1.0);
    return st;
}

/* The eviction itself; also run early, before a step's append, when the
 * cache is full before the period comes (a prompt longer than the budget). */
/* What an eviction keeps: B, or B - W with the peak schedule. */
static int32_t kept_of(const lkv_policy_params *p)
{
    return p->schedule == LKV_LAZY_PEAK ? p->budget - p->window : p->budget;
}

static int evict_to_budget(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (n <= kept_of(p))
        return 0;
    *plan = (lkv_evict_plan){.keep = kept_of(p), .score = LKV_SCORE_RECURRENCE,
                             .protect_tail = p->window};
    return 1;
}

/* Every W steps; with the peak schedule also whenever the next step's
 * token would take the layer past B. */
static int decode_plan(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan)
{
    int due = t % p->window == 0 || (p->schedule == LKV_LAZY_PEAK && n >= p->budget);
    return due && evict_to_budget(p, n, plan);
}

const lkv_policy_rules lkv_policy_lazy = {
    .kind = LKV_POLICY_LAZY,
    .name = "lazy",
    .keys = keys,
    .reduce = LKV_REDUCE_MAX,
    .defaults = defaults,
    .check = check,
    .observes = 1,
    .observe_kind = LKV_OBSERVE_RECURRENCE,
    .decode_plan = decode_plan,
    .early_plan = evict_to_budget,
};
