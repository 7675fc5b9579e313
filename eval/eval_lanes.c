/* Lanes: which caches run, how big, and what peak each policy promises.
 * Budgets, default windows and bounds are policy_budget.c's, shared with
 * `lazykv generate`. Every cache holds the whole prompt at prefill before any
 * policy can act, so no peak is below the prompt length P. nacl evicts once,
 * at prefill, to at most B and grows after that, so what is judged for it is
 * the prefill kept <= B. Expanded GQA keeps q_heads / kv_heads cache heads
 * per KV head; at equal budget memory each gets B * kv_heads / q_heads slots
 * (its peak, window or one new token on top of B, is then not equal). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval_lanes.h"

static void set_name(lkv_eval_lane_spec *l, const char *budget)
{
    int head = l->granularity == LKV_GRANULARITY_HEAD;
    snprintf(l->name, sizeof l->name, "%s %s%s%s%s%s", lkv_eval_policy_name(l->policy, l->schedule),
             l->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded", head ? "" : " per-",
             head ? "" : lkv_granularity_name(l->granularity), budget ? " " : "",
             budget ? budget : "");
}

lkv_status lkv_eval_lane_specs(const lkv_eval_settings *s, lkv_eval_lane_spec **out_specs,
                               int *out_n)
{
    int n = 1;
    for (int p = 0; p < s->n_policies; p++)
        n += s->policies[p] == LKV_POLICY_FULL ? s->n_gqa
                                               : s->n_gqa * s->n_granularity * s->n_budgets;
    lkv_eval_lane_spec *l = calloc((size_t)n, sizeof *l);
    if (!l)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d lanes", n);
    l[0] = (lkv_eval_lane_spec){.policy = LKV_POLICY_FULL, .gqa = LKV_GQA_GROUPED, .budget = -1,
                                .reference = 1, .name = "full (reference)"};
    int k = 1;
    for (int p = 0; p < s->n_policies; p++)
        for (int g = 0; g < s->n_gqa; g++) {
            int full = s->policies[p] == LKV_POLICY_FULL;
            for (int u = 0; u < (full ? 1 : s->n_granularity); u++)
                for (int b = 0; b < (full ? 1 : s->n_budgets); b++, k++) {
                    l[k] = (lkv_eval_lane_spec){
                        .policy = s->policies[p], .schedule = s->schedules[p],
                        .gqa = s->gqa[g], .budget = full ? -1 : b,
                        .granularity = full ? LKV_GRANULARITY_HEAD : s->granularity[u]};
                    set_name(&l[k], full ? NULL : s->budgets[b].label);
                }
        }
    *out_specs = l;
    *out_n = n;
    return LKV_OK;
}

static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

/* NACL keeps shares of the prompt, not a slot count: scale its default
 * proxy-keep, random-keep and protect shares together so they add up to
 * B / P of the prompt (rounding in nacl only rounds down overall). */
static void nacl_shares(lkv_policy_params *p, int32_t prompt, int32_t budget)
{
    p->min_length = 1;
    if (budget >= prompt) {
        p->min_length = prompt + 1; /* nothing to evict */
        return;
    }
    double sum = (double)p->proxy_keep_ratio + p->random_keep_ratio + p->protect_ratio;
    double scale = (double)budget / prompt / sum;
    p->proxy_keep_ratio = (float)(p->proxy_keep_ratio * scale);
    p->random_keep_ratio = (float)(p->random_keep_ratio * scale);
    p->protect_ratio = (float)(p->protect_ratio * scale);
}

/* Budget b and the window that goes with it: the one --window gives lazy,
 * else lkv_budget_default_window. */
static void budget_and_window(lkv_policy_params *p, const lkv_eval_settings *s, int32_t b)
{
    p->budget = b;
    if (p->kind == LKV_POLICY_LAZY && s->window > 0)
        p->window = s->window;
    else if (lkv_budget_has_window(p->kind))
        p->window = lkv_budget_default_window(p->kind, b);
}

/* --at peak: the largest B whose peak bound over this prompt and its steps
 * is at most `target` (bounds grow with B, so a bisection finds it).
 * *beyond when none is, as when the target is below the prompt, which every
 * cache holds whole at prefill. nacl holds B after its prefill eviction and
 * grows by one slot a step, so its B is the target less the steps (beyond
 * reach when that is below 1, or not below the prompt: nothing evicted). */
static int32_t budget_for_peak(lkv_policy_params p, const lkv_eval_settings *s, int32_t prompt,
                               int32_t steps, int32_t target, int *beyond)
{
    *beyond = 0;
    if (p.kind == LKV_POLICY_NACL) {
        *beyond = target - steps < 1 || target - steps >= prompt;
        return max32(1, target - steps);
    }
    int32_t lo = 1, hi = max32(1, target);
    budget_and_window(&p, s, lo);
    if (lkv_budget_peak_bound(&p, prompt, steps) > target) {
        *beyond = 1;
        return 1;
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        budget_and_window(&p, s, mid);
        if (lkv_budget_peak_bound(&p, prompt, steps) <= target)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The budget and window of a lane that evicts: B of the prompt's T (its
 * equal-memory share when expanded), or with --at peak the B whose peak
 * bound is that share; then the window --window gives lazy, else
 * lkv_budget_default_window. */
static void set_budget(lkv_eval_lane_plan *pl, const lkv_eval_settings *s,
                       const lkv_eval_lane_spec *spec, int32_t prompt, int32_t total,
                       int32_t steps)
{
    lkv_policy_params *p = &pl->cfg.policy;
    p->schedule = spec->schedule;
    if (spec->policy == LKV_POLICY_LAZY && s->alpha >= 0.0)
        p->alpha = (float)s->alpha;
    if (spec->policy == LKV_POLICY_RKV && s->buffer > 0)
        p->interval = s->buffer; /* before the peak bisection: the bound depends on it */
    int32_t b = lkv_budget_slots(&s->budgets[spec->budget], total);
    if (spec->gqa == LKV_GQA_EXPANDED)
        b = max32(1, (int32_t)((int64_t)b * pl->cfg.kv_heads / pl->cfg.q_heads));
    if (s->at_peak) {
        pl->target = b;
        b = budget_for_peak(*p, s, prompt, steps, b, &pl->beyond);
    }
    pl->budget = b;
    if (spec->policy == LKV_POLICY_NACL) {
        nacl_shares(p, prompt, b);
        return;
    }
    budget_and_window(p, s, b);
}

lkv_status lkv_eval_lane_plan_make(const lkv_model *m, const lkv_eval_settings *s,
                                   const lkv_eval_lane_spec *spec, int32_t prompt,
                                   int32_t generated, lkv_eval_lane_plan *out)
{
    lkv_eval_lane_plan pl;
    memset(&pl, 0, sizeof pl);
    lkv_cache_config_init(&pl.cfg);
    lkv_model_cache_shape(m, &pl.cfg);
    pl.cfg.sequences = 1;
    pl.cfg.dtype = s->dtype;
    pl.cfg.gqa = spec->gqa;
    pl.cfg.granularity = spec->granularity;
    lkv_status st = lkv_policy_init(&pl.cfg.policy, spec->policy);
    if (st != LKV_OK)
        return st;
    int32_t total = prompt + generated;
    /* the last token of the G is never fed back: P + G - 1 are cached */
    int32_t steps = generated > 0 ? generated - 1 : 0;
    if (spec->policy != LKV_POLICY_FULL)
        set_budget(&pl, s, spec, prompt, total, steps);
    pl.bound_kind = spec->policy == LKV_POLICY_NACL ? LKV_EVAL_BOUND_PREFILL : LKV_EVAL_BOUND_PEAK;
    pl.bound = spec->policy == LKV_POLICY_NACL
                   ? pl.budget
                   : (int32_t)lkv_budget_peak_bound(&pl.cfg.policy, prompt, steps);
    /* room for anything the policy may do, and never less than the sequence */
    int64_t cap = lkv_budget_capacity(&pl.cfg.policy, prompt, steps);
    if (cap > INT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lane %s: a capacity of %lld slots exceeds int32",
                        spec->name, (long long)cap);
    pl.cfg.capacity = max32((int32_t)cap, total);
    *out = pl;
    return LKV_OK;
}

lkv_status lkv_eval_lane_open(lkv_runtime *rt, const lkv_eval_lane_plan *plan,
                              const lkv_eval_lane_spec *spec, lkv_eval_lane_result *res,
                              lkv_cache **out_cache)
{
    *out_cache = NULL;
    res->budget = plan->budget;
    res->window = lkv_budget_has_window(plan->cfg.policy.kind) ? plan->cfg.policy.window : 0;
    res->bound = plan->bound;
    res->bound_kind = plan->bound_kind;
    res->capacity = plan->cfg.capacity;
    if (plan->beyond) {
        res->status = LKV_INVALID_ARGUMENT;
        snprintf(res->error, sizeof res->error,
                 "no budget gives %s a peak within %d slots per cache head on this prompt (%s)",
                 lkv_eval_policy_name(spec->policy, spec->schedule), plan->target,
                 spec->policy == LKV_POLICY_NACL
                     ? "nacl evicts only at prefill, then holds one more slot a step"
                     : "every cache holds the whole prompt at prefill");
        return LKV_OK;
    }
    lkv_status st = lkv_cache_create(rt, &plan->cfg, out_cache);
    if (st == LKV_INVALID_ARGUMENT) {
        res->status = st;
        snprintf(res->error, sizeof res->error, "%s", lkv_last_error());
        return LKV_OK;
    }
    if (st != LKV_OK)
        return lkv_fail_context(st, "lane %s", spec->name);
    res->cache_heads = lkv_cache_heads(*out_cache);
    return LKV_OK;
}

void lkv_eval_lane_account(const lkv_cache *c, const lkv_eval_lane_plan *plan,
                           int count_evictions, lkv_eval_lane_result *res)
{
    lkv_cache_stats stats;
    if (lkv_cache_get_stats(c, &stats) != LKV_OK)
        return;
    /* Every row of a cache holds the same number of slots once a step or a
     * prefill is complete, and the sum over rows peaks at such a moment, so
     * this division is the exact per-head peak. */
    int64_t rows = (int64_t)plan->cfg.layers * lkv_cache_heads(c);
    int32_t peak = (int32_t)(stats.peak_slots / rows);
    if (peak > res->peak)
        res->peak = peak;
    if (stats.kv_bytes_peak > res->kv_bytes_peak)
        res->kv_bytes_peak = stats.kv_bytes_peak;
    if (count_evictions) {
        res->evictions = stats.evictions;
        res->tokens_evicted = stats.tokens_evicted;
    }
    res->within_bound = plan->bound_kind == LKV_EVAL_BOUND_PEAK ? res->peak <= res->bound
                                                                 : res->prefill_kept <= res->bound;
}
