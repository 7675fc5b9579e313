/* Defaults and the list options of `lazykv eval`: policies, budgets, GQA. */
#include <stdio.h>
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
    s->budgets[0] = (lkv_budget){.fraction = 0.25, .label = "25%"};
    s->budgets[1] = (lkv_budget){.fraction = 0.50, .label = "50%"};
    s->n_gqa = 1;
    s->gqa[0] = LKV_GQA_GROUPED;
    s->n_granularity = 1;
    s->granularity[0] = LKV_GRANULARITY_HEAD;
    s->max_tokens = 1024;
    s->alpha = -1.0;
    s->dtype = LKV_DTYPE_F16;
}

const char *lkv_eval_policy_name(lkv_policy_kind kind, lkv_lazy_schedule schedule)
{
    return kind == LKV_POLICY_LAZY && schedule == LKV_LAZY_PEAK ? "lazy-peak"
                                                                : lkv_policy_name(kind);
}

/* A policies entry: the kind and, for lazy, its schedule. */
typedef struct eval_policy {
    lkv_policy_kind kind;
    lkv_lazy_schedule schedule;
} eval_policy;

/* One entry of a list option. */
typedef union list_item {
    eval_policy policy;
    lkv_budget budget;
    lkv_granularity granularity;
} list_item;

#define LIST_MAX (LKV_EVAL_MAX_BUDGETS > LKV_EVAL_MAX_POLICIES ? LKV_EVAL_MAX_BUDGETS \
                                                                : LKV_EVAL_MAX_POLICIES)

/* A list option: `parse` reads one entry, `same` says whether two entries
 * name one thing; `size` bytes of each item are its member's. */
typedef struct list_kind {
    const char *flag;
    size_t size;
    int max;
    lkv_status (*parse)(const char *entry, list_item *out);
    int (*same)(const list_item *a, const list_item *b);
} list_kind;

static lkv_status add_entry(const list_kind *k, const char *entry, list_item *items, int *n)
{
    list_item item;
    lkv_status st = k->parse(entry, &item);
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < *n; i++)
        if (k->same(&items[i], &item))
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s names '%s' twice", k->flag, entry);
    if (*n == k->max)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: at most %d entries", k->flag, k->max);
    items[(*n)++] = item;
    return LKV_OK;
}

/* Parses the comma-separated `list` into `out` [*out_n], which change only
 * on success. Empty entries and lists are errors. */
static lkv_status parse_list(const list_kind *k, const char *list, void *out, int *out_n)
{
    if (!list || !*list)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s is empty: give at least one entry", k->flag);
    list_item items[LIST_MAX];
    int n = 0;
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        char entry[64];
        if (len == 0 || len >= sizeof entry)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s': empty or overlong entry", k->flag,
                            list);
        memcpy(entry, p, len);
        entry[len] = '\0';
        lkv_status st = add_entry(k, entry, items, &n);
        if (st != LKV_OK)
            return st;
        if (!p[len])
            break;
        p += len + 1;
    }
    for (int i = 0; i < n; i++)
        memcpy((unsigned char *)out + (size_t)i * k->size, &items[i], k->size);
    *out_n = n;
    return LKV_OK;
}

static lkv_status parse_policy(const char *entry, list_item *out)
{
    out->policy.schedule = LKV_LAZY_FAITHFUL;
    if (!strcmp(entry, "lazy-peak")) {
        out->policy = (eval_policy){LKV_POLICY_LAZY, LKV_LAZY_PEAK};
        return LKV_OK;
    }
    if (lkv_policy_from_name(entry, &out->policy.kind) != LKV_OK)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "--policies entry '%s' is not a policy (full, lazy, lazy-peak, streaming, "
                        "h2o, tova, snapkv, nacl, rkv)", entry);
    return LKV_OK;
}

static int same_policy(const list_item *a, const list_item *b)
{
    return a->policy.kind == b->policy.kind && a->policy.schedule == b->policy.schedule;
}

static lkv_status parse_budget(const char *entry, list_item *out)
{
    return lkv_budget_parse(entry, "--budgets entry", &out->budget);
}

static int same_budget(const list_item *a, const list_item *b)
{
    return a->budget.fraction == b->budget.fraction && a->budget.tokens == b->budget.tokens;
}

lkv_status lkv_eval_parse_policies(const char *list, lkv_eval_settings *s)
{
    static const list_kind kind = {"--policies", sizeof(eval_policy), LKV_EVAL_MAX_POLICIES,
                                   parse_policy, same_policy};
    eval_policy got[LKV_EVAL_MAX_POLICIES];
    int n = 0;
    lkv_status st = parse_list(&kind, list, got, &n);
    for (int i = 0; st == LKV_OK && i < n; i++) {
        s->policies[i] = got[i].kind;
        s->schedules[i] = got[i].schedule;
    }
    if (st == LKV_OK)
        s->n_policies = n;
    return st;
}

lkv_status lkv_eval_parse_at(const char *text, lkv_eval_settings *s)
{
    if (strcmp(text, "budget") && strcmp(text, "peak"))
        return lkv_fail(LKV_INVALID_ARGUMENT, "--at '%s' is not budget or peak", text);
    s->at_peak = !strcmp(text, "peak");
    return LKV_OK;
}

lkv_status lkv_eval_parse_budgets(const char *list, lkv_eval_settings *s)
{
    static const list_kind kind = {"--budgets", sizeof(lkv_budget), LKV_EVAL_MAX_BUDGETS,
                                   parse_budget, same_budget};
    return parse_list(&kind, list, s->budgets, &s->n_budgets);
}

static lkv_status parse_granularity(const char *entry, list_item *out)
{
    if (lkv_granularity_from_name(entry, &out->granularity) != LKV_OK)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "--granularity entry '%s' is not head, layer or token", entry);
    return LKV_OK;
}

static int same_granularity(const list_item *a, const list_item *b)
{
    return a->granularity == b->granularity;
}

lkv_status lkv_eval_parse_granularity(const char *list, lkv_eval_settings *s)
{
    static const list_kind kind = {"--granularity", sizeof(lkv_granularity), 3,
                                   parse_granularity, same_granularity};
    return parse_list(&kind, list && !strcmp(list, "all") ? "head,layer,token" : list,
                      s->granularity, &s->n_granularity);
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
