/* Defaults and the list options of `lazykv eval`: policies, budgets, GQA. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval.h"

void lkv_eval_settings_init(lkv_eval_settings *s)
{
    memset(s, 0, sizeof *s);
    static const lkv_policy_kind policies[] = {LKV_POLICY_LAZY, LKV_POLICY_STREAMING,
                                               LKV_POLICY_H2O,  LKV_POLICY_TOVA,
                                               LKV_POLICY_SNAPKV, LKV_POLICY_NACL};
    s->n_policies = (int)(sizeof policies / sizeof policies[0]);
    memcpy(s->policies, policies, sizeof policies);
    s->n_budgets = 2;
    s->budgets[0] = (lkv_eval_budget){.fraction = 0.25, .label = "25%"};
    s->budgets[1] = (lkv_eval_budget){.fraction = 0.50, .label = "50%"};
    s->n_gqa = 1;
    s->gqa[0] = LKV_GQA_GROUPED;
    s->max_tokens = 1024;
    s->alpha = -1.0;
    s->dtype = LKV_DTYPE_F16;
}

/* Calls fn on each comma-separated entry (copied, NUL-terminated); stops at
 * the first failure. Empty entries and lists are errors. */
static lkv_status each_entry(const char *flag, const char *list,
                             lkv_status (*fn)(void *ctx, const char *entry), void *ctx)
{
    if (!list || !*list)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s is empty: give at least one entry", flag);
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        char entry[64];
        if (n == 0 || n >= sizeof entry)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s': empty or overlong entry", flag, list);
        memcpy(entry, p, n);
        entry[n] = '\0';
        lkv_status st = fn(ctx, entry);
        if (st != LKV_OK)
            return st;
        if (!p[n])
            return LKV_OK;
        p += n + 1;
    }
}

typedef struct policy_list {
    int n;
    lkv_policy_kind kinds[LKV_EVAL_MAX_POLICIES];
} policy_list;

static lkv_status add_policy(void *ctx, const char *entry)
{
    policy_list *l = ctx;
    lkv_policy_kind kind;
    if (lkv_policy_from_name(entry, &kind) != LKV_OK)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "--policies entry '%s' is not a policy (full, lazy, streaming, h2o, tova, "
                        "snapkv, nacl)", entry);
    for (int i = 0; i < l->n; i++)
        if (l->kinds[i] == kind)
            return lkv_fail(LKV_INVALID_ARGUMENT, "--policies names '%s' twice", entry);
    if (l->n == LKV_EVAL_MAX_POLICIES)
        return lkv_fail(LKV_INVALID_ARGUMENT, "--policies: at most %d policies",
                        LKV_EVAL_MAX_POLICIES);
    l->kinds[l->n++] = kind;
    return LKV_OK;
}

lkv_status lkv_eval_parse_policies(const char *list, lkv_eval_settings *s)
{
    policy_list l = {0};
    lkv_status st = each_entry("--policies", list, add_policy, &l);
    if (st != LKV_OK)
        return st;
    s->n_policies = l.n;
    memcpy(s->policies, l.kinds, sizeof l.kinds);
    return LKV_OK;
}

typedef struct budget_list {
    int n;
    lkv_eval_budget items[LKV_EVAL_MAX_BUDGETS];
} budget_list;

static lkv_status parse_budget(const char *entry, lkv_eval_budget *out)
{
    size_t len = strlen(entry);
    char *end = NULL;
    errno = 0;
    memset(out, 0, sizeof *out);
    if (len >= sizeof out->label)
        return lkv_fail(LKV_INVALID_ARGUMENT, "--budgets entry '%s' is too long", entry);
    if (len > 1 && entry[len - 1] == '%') {
        double pct = strtod(entry, &end);
        if (errno || end != entry + len - 1 || !isfinite(pct) || pct <= 0.0 || pct > 100.0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "--budgets entry '%s' is not a percentage in (0%%, 100%%]", entry);
        out->fraction = pct / 100.0;
    } else {
        long v = strtol(entry, &end, 10);
        if (errno || end == entry || *end || v < 1 || v > INT32_MAX)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "--budgets entry '%s' is neither a percentage like 25%% nor a slot "
                            "count >= 1", entry);
        out->tokens = (int32_t)v;
    }
    memcpy(out->label, entry, len + 1);
    return LKV_OK;
}

static lkv_status add_budget(void *ctx, const char *entry)
{
    budget_list *l = ctx;
    lkv_eval_budget b;
    lkv_status st = parse_budget(entry, &b);
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < l->n; i++)
        if (l->items[i].fraction == b.fraction && l->items[i].tokens == b.tokens)
            return lkv_fail(LKV_INVALID_ARGUMENT, "--budgets names '%s' twice", entry);
    if (l->n == LKV_EVAL_MAX_BUDGETS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "--budgets: at most %d budgets",
                        LKV_EVAL_MAX_BUDGETS);
    l->items[l->n++] = b;
    return LKV_OK;
}

lkv_status lkv_eval_parse_budgets(const char *list, lkv_eval_settings *s)
{
    budget_list l = {0};
    lkv_status st = each_entry("--budgets", list, add_budget, &l);
    if (st != LKV_OK)
        return st;
    s->n_budgets = l.n;
    memcpy(s->budgets, l.items, sizeof l.items);
    return LKV_OK;
}

lkv_status lkv_eval_parse_gqa(const char *text, lkv_eval_settings *s)
{
    if (!strcmp(text, "grouped")) {
        s->n_gqa = 1;
        s->gqa[0] = LKV_GQA_GROUPED;
    } else if (!strcmp(text, "expanded")) {
        s->n_gqa = 1;
        s->gqa[0] = LKV_GQA_EXPANDED;
    } else if (!strcmp(text, "both")) {
        s->n_gqa = 2;
        s->gqa[0] = LKV_GQA_GROUPED;
        s->gqa[1] = LKV_GQA_EXPANDED;
    } else {
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "--gqa '%s' is not one of grouped, expanded, both", text);
    }
    return LKV_OK;
}

int32_t lkv_eval_budget_slots(const lkv_eval_budget *b, int32_t total)
{
    int64_t slots = b->tokens;
    if (b->fraction > 0.0)
        /* 30% of 200 is 60, though 0.3 * 200 rounds to 60.000000000000007 */
        slots = (int64_t)ceil(b->fraction * (double)total - 1e-9);
    if (slots > total)
        slots = total;
    return slots < 1 ? 1 : (int32_t)slots;
}
