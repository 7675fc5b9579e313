/* Budgets, default windows and peak bounds: policy_budget.h says the rules. */
#include "policy_budget.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

lkv_status lkv_budget_parse(const char *text, const char *what, lkv_budget *out)
{
    size_t len = strlen(text);
    char *end = NULL;
    lkv_budget b;
    memset(&b, 0, sizeof b);
    if (len >= sizeof b.label)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is too long", what, text);
    errno = 0;
    if (len > 1 && text[len - 1] == '%') {
        double pct = strtod(text, &end);
        if (errno || end != text + len - 1 || !isfinite(pct) || pct <= 0.0 || pct > 100.0)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not a percentage in (0%%, 100%%]",
                            what, text);
        b.fraction = pct / 100.0;
    } else {
        long v = strtol(text, &end, 10);
        if (errno || end == text || *end || v < 1 || v > INT32_MAX)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s '%s' is neither a percentage like 25%% nor a slot count >= 1",
                            what, text);
        b.tokens = (int32_t)v;
    }
    memcpy(b.label, text, len + 1);
    *out = b;
    return LKV_OK;
}

int32_t lkv_budget_slots(const lkv_budget *b, int64_t length)
{
    int64_t slots = b->tokens;
    if (b->fraction > 0.0)
        /* 30% of 200 is 60, though 0.3 * 200 rounds to 60.000000000000007 */
        slots = (int64_t)ceil(b->fraction * (double)length - 1e-9);
    slots = min64(slots, min64(length, INT32_MAX));
    return slots < 1 ? 1 : (int32_t)slots;
}

int lkv_budget_has_window(lkv_policy_kind kind)
{
    return kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV || kind == LKV_POLICY_RKV;
}

int32_t lkv_budget_default_window(lkv_policy_kind kind, int32_t budget)
{
    if (!lkv_budget_has_window(kind))
        return 0;
    lkv_policy_params p;
    lkv_policy_init(&p, kind);
    int32_t half = budget / 2 > 1 ? budget / 2 : 1;
    return p.window < half ? p.window : half;
}

/* snapkv's decode-time period: the interval, its window when 0, none when -1. */
static int64_t snapkv_every(const lkv_policy_params *p)
{
    return p->interval == 0 ? p->window : p->interval;
}

/* Down to B at prefill, then up to `every` above it between compressions. */
static int64_t compress_bound(int64_t b, int64_t every, int64_t prompt, int64_t steps)
{
    int64_t after_prefill = (prompt < b ? prompt : b) + steps;
    if (every > 0)
        after_prefill = min64(after_prefill, b + every);
    return max64(prompt, after_prefill);
}

int64_t lkv_budget_peak_bound(const lkv_policy_params *p, int64_t prompt, int64_t steps)
{
    int64_t b = p->budget, all = prompt + steps, above = max64(prompt, b);
    switch (p->kind) {
    case LKV_POLICY_LAZY:
        if (p->schedule == LKV_LAZY_PEAK) /* B, or a long prompt and one step's token */
            return max64(prompt, min64(all, prompt >= b ? prompt + 1 : b));
        return min64(all, above + p->window);
    case LKV_POLICY_STREAMING:
    case LKV_POLICY_H2O:
    case LKV_POLICY_TOVA:
        return min64(all, above + 1);
    case LKV_POLICY_SNAPKV:
        return compress_bound(b, snapkv_every(p), prompt, steps);
    case LKV_POLICY_RKV:
        return compress_bound(b, p->interval, prompt, steps);
    default:
        return all;
    }
}

int64_t lkv_budget_min_capacity(const lkv_policy_params *p)
{
    switch (p->kind) {
    case LKV_POLICY_LAZY:
        return (int64_t)p->budget + (p->schedule == LKV_LAZY_PEAK ? 1 : p->window);
    case LKV_POLICY_STREAMING:
    case LKV_POLICY_H2O:
    case LKV_POLICY_TOVA:
        return (int64_t)p->budget + 1;
    case LKV_POLICY_SNAPKV: {
        int64_t every = snapkv_every(p);
        return (int64_t)p->budget + (every > 0 ? every : 1);
    }
    case LKV_POLICY_RKV:
        return (int64_t)p->budget + p->interval;
    default:
        return 1;
    }
}

int64_t lkv_budget_capacity(const lkv_policy_params *p, int64_t prompt, int64_t steps)
{
    return max64(max64(lkv_budget_peak_bound(p, prompt, steps), lkv_budget_min_capacity(p)),
                 prompt);
}
