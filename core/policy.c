/* Policy parameters: names, defaults, setting by name, shared checks. */
#include "policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "policy_budget.h"

static const lkv_policy_rules *const all_rules[LKV_POLICY_COUNT_] = {
    [LKV_POLICY_FULL] = &lkv_policy_full,           [LKV_POLICY_LAZY] = &lkv_policy_lazy,
    [LKV_POLICY_STREAMING] = &lkv_policy_streaming, [LKV_POLICY_H2O] = &lkv_policy_h2o,
    [LKV_POLICY_TOVA] = &lkv_policy_tova,           [LKV_POLICY_SNAPKV] = &lkv_policy_snapkv,
    [LKV_POLICY_NACL] = &lkv_policy_nacl,           [LKV_POLICY_RKV] = &lkv_policy_rkv,
};

const lkv_policy_rules *lkv_policy_rules_of(lkv_policy_kind kind)
{
    if ((int)kind < 0 || kind >= LKV_POLICY_COUNT_)
        return NULL;
    return all_rules[kind];
}

const char *lkv_policy_name(lkv_policy_kind kind)
{
    const lkv_policy_rules *r = lkv_policy_rules_of(kind);
    return r ? r->name : "unknown";
}

lkv_status lkv_policy_from_name(const char *name, lkv_policy_kind *out_kind)
{
    lkv_clear_error();
    if (!name || !out_kind)
        return lkv_fail_null("lkv_policy_from_name", !name ? "name" : "out_kind");
    for (int k = 0; k < LKV_POLICY_COUNT_; k++) {
        if (strcmp(all_rules[k]->name, name) == 0) {
            *out_kind = (lkv_policy_kind)k;
            return LKV_OK;
        }
    }
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "unknown policy '%s': expected lazy, full, streaming, h2o, tova, snapkv, nacl or rkv",
                    name);
}

lkv_status lkv_policy_init(lkv_policy_params *params, lkv_policy_kind kind)
{
    lkv_clear_error();
    const lkv_policy_rules *r = lkv_policy_rules_of(kind);
    if (!params || !r)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_policy_init: %s",
                        params ? "unknown policy kind" : "params is NULL");
    memset(params, 0, sizeof *params);
    params->kind = kind;
    params->group_reduce = LKV_REDUCE_DEFAULT;
    if (r->defaults)
        r->defaults(params);
    return LKV_OK;
}

static int policy_reads(const lkv_policy_rules *r, const char *key)
{
    if (strcmp(key, "group_reduce") == 0)
        return 1;
    for (const char *const *k = r->keys; k && *k; k++)
        if (strcmp(*k, key) == 0)
            return 1;
    return 0;
}

static void list_keys(const lkv_policy_rules *r, char *buf, size_t len)
{
    buf[0] = '\0';
    for (const char *const *k = r->keys; k && *k; k++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s, ", *k);
    }
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "group_reduce");
}

static lkv_status parse_int(const char *key, const char *text, long long lo, long long hi,
                            long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not an integer in [%lld, %lld]", key,
                        text, lo, hi);
    *out = v;
    return LKV_OK;
}

static lkv_status parse_seed(const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end != '\0' || text[0] == '-')
        return lkv_fail(LKV_INVALID_ARGUMENT, "seed '%s' is not an integer in [0, 2^64)", text);
    *out = (uint64_t)v;
    return LKV_OK;
}

static lkv_status parse_real(const char *key, const char *text, float *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno == ERANGE && fabs(v) < 1.0)
        errno = 0; /* underflow to (almost) zero is a value, not an error */
    if (errno || end == text || *end != '\0' || !isfinite(v))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not a finite number", key, text);
    *out = (float)v;
    return LKV_OK;
}

/* A value named by one of `names`: its index (an enum's value) in *out. */
static lkv_status parse_choice(const char *key, const char *text, const char *const *names,
                               int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(text, names[i]) == 0) {
            *out = i;
            return LKV_OK;
        }
    return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not '%s' or '%s'", key, text,
                    names[n - 2], names[n - 1]);
}

static const char *const schedule_names[] = {[LKV_LAZY_FAITHFUL] = "faithful",
                                             [LKV_LAZY_PEAK] = "peak"};
static const char *const reduce_names[] = {[LKV_REDUCE_MAX] = "max", [LKV_REDUCE_MEAN] = "mean"};

const char *lkv_lazy_schedule_name(lkv_lazy_schedule s)
{
    return (unsigned)s < sizeof schedule_names / sizeof schedule_names[0] ? schedule_names[s]
                                                                          : NULL;
}

lkv_status lkv_policy_set(lkv_policy_params *params, const char *key, const char *value)
{
    lkv_clear_error();
    if (!params || !key || !value)
        return lkv_fail_null("lkv_policy_set", !params ? "params" : !key ? "key" : "value");
    const lkv_policy_rules *r = lkv_policy_rules_of(params->kind);
    if (!r)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_policy_set: params hold no valid policy kind");
    if (!policy_reads(r, key)) {
        char keys[256];
        list_keys(r, keys, sizeof keys);
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown parameter '%s' for policy %s: it takes %s",
                        key, r->name, keys);
    }
    lkv_policy_params p = *params;
    lkv_status st = LKV_OK;
    long long i = 0;
    const long long big = 1LL << 30;
    if (strcmp(key, "budget") == 0 && (st = parse_int(key, value, 0, big, &i)) == LKV_OK)
        p.budget = (int32_t)i;
    else if (strcmp(key, "window") == 0 && (st = parse_int(key, value, 0, big, &i)) == LKV_OK)
        p.window = (int32_t)i;
    else if (strcmp(key, "sinks") == 0 && (st = parse_int(key, value, 0, big, &i)) == LKV_OK)
        p.sinks = (int32_t)i;
    else if (strcmp(key, "recent") == 0 && (st = parse_int(key, value, -1, big, &i)) == LKV_OK)
        p.recent = (int32_t)i;
    else if (strcmp(key, "interval") == 0 && (st = parse_int(key, value, -1, big, &i)) == LKV_OK)
        p.interval = (int32_t)i;
    else if (strcmp(key, "min_length") == 0 && (st = parse_int(key, value, 0, big, &i)) == LKV_OK)
        p.min_length = (int32_t)i;
    else if (strcmp(key, "seed") == 0)
        st = parse_seed(value, &p.seed);
    else if (strcmp(key, "alpha") == 0)
        st = parse_real(key, value, &p.alpha);
    else if (strcmp(key, "proxy_ratio") == 0)
        st = parse_real(key, value, &p.proxy_ratio);
    else if (strcmp(key, "proxy_keep_ratio") == 0)
        st = parse_real(key, value, &p.proxy_keep_ratio);
    else if (strcmp(key, "random_keep_ratio") == 0)
        st = parse_real(key, value, &p.random_keep_ratio);
    else if (strcmp(key, "protect_ratio") == 0)
        st = parse_real(key, value, &p.protect_ratio);
    else if (strcmp(key, "mix_lambda") == 0)
        st = parse_real(key, value, &p.mix_lambda);
    int choice = 0;
    if (strcmp(key, "group_reduce") == 0 &&
        (st = parse_choice(key, value, reduce_names, 3, &choice)) == LKV_OK)
        p.group_reduce = (lkv_group_reduce)choice;
    else if (strcmp(key, "schedule") == 0 &&
             (st = parse_choice(key, value, schedule_names, 2, &choice)) == LKV_OK)
        p.schedule = (lkv_lazy_schedule)choice;
    if (st == LKV_OK)
        *params = p;
    return st;
}

int lkv_plan_room_for_one(int (*step_plan)(const lkv_policy_params *p, int32_t n, int32_t t,
                                           lkv_evict_plan *plan),
                          const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (!step_plan(p, n, 0, plan))
        return 0;
    plan->keep = n - 1;
    return 1;
}

lkv_status lkv_check_budget(const char *policy, int32_t budget, int32_t capacity, int64_t peak)
{
    if (budget < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "budget %d is invalid for %s: set a budget >= 1",
                        budget, policy);
    if (budget > capacity)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "budget %d exceeds capacity %d (%s): raise capacity or lower budget",
                        budget, capacity, policy);
    if (peak > capacity)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "capacity %d is below the peak of %lld slots that %s reaches with budget %d: "
                        "raise capacity to %lld",
                        capacity, (long long)peak, policy, budget, (long long)peak);
    return LKV_OK;
}

lkv_status lkv_check_range(const char *policy, const char *key, double value, double lo, double hi)
{
    if (!(value >= lo && value <= hi))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s %g is out of range for %s: expected [%g, %g]",
                        key, value, policy, lo, hi);
    return LKV_OK;
}

lkv_status lkv_policy_peak_slots(const lkv_policy_params *params, int64_t prompt_tokens,
                                 int64_t steps, int64_t *out_peak_slots, int64_t *out_capacity)
{
    lkv_clear_error();
    if (!params || !lkv_policy_rules_of(params->kind))
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_policy_peak_slots: %s",
                        params ? "params hold no valid policy kind" : "params is NULL");
    if (prompt_tokens < 1 || steps < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_policy_peak_slots: prompt_tokens %lld and steps %lld: need >= 1 and >= 0",
                        (long long)prompt_tokens, (long long)steps);
    lkv_policy_kind k = params->kind;
    int by_budget = k != LKV_POLICY_FULL && k != LKV_POLICY_NACL;
    if (by_budget && params->budget < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_policy_peak_slots: %s budget %d: need >= 1",
                        lkv_policy_name(k), params->budget);
    if (lkv_budget_has_window(k) && params->window < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_policy_peak_slots: %s window %d: need >= 1",
                        lkv_policy_name(k), params->window);
    if (out_peak_slots)
        *out_peak_slots = lkv_budget_peak_bound(params, prompt_tokens, steps);
    if (out_capacity)
        *out_capacity = lkv_budget_capacity(params, prompt_tokens, steps);
    return LKV_OK;
}
