/* The cache a `lazykv generate` run gets: the model's shape, the policy with
 * its budget, window and the parameters given by name, and a capacity just
 * large enough for the policy's peak on this sequence, so the bytes it
 * reserves are what the policy really needs. Budgets, default windows and
 * peaks follow core/policy_budget.h, as `lazykv eval` does. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gen.h"

static const char *const cmd = "generate";

static int uses_budget(lkv_policy_kind kind)
{
    lkv_policy_params p;
    lkv_policy_init(&p, kind);
    return lkv_policy_set(&p, "budget", "1") == LKV_OK;
}

static int set_budget(const gen_cache_spec *spec, int64_t total, lkv_policy_params *p)
{
    if (!uses_budget(p->kind)) {
        if (spec->budget_given)
            return cli_error(cmd, "--budget does not apply to policy %s: it keeps %s",
                             lkv_policy_name(p->kind),
                             p->kind == LKV_POLICY_FULL
                                 ? "every token"
                                 : "a share of the prompt set by its ratios");
        return 0;
    }
    p->budget = lkv_budget_slots(&spec->budget, total);
    return 0;
}

int gen_cache_window_given(const gen_cache_spec *spec)
{
    for (int i = 0; i < spec->n_params; i++)
        if (!strcmp(spec->params[i].key, "window"))
            return 1;
    return 0;
}

/* The policy with its budget (for `total` tokens), the named parameters, and
 * the default window where none was given. */
static int policy_params(const gen_cache_spec *spec, int64_t total, lkv_policy_params *out)
{
    lkv_policy_kind kind;
    if (lkv_policy_from_name(spec->policy, &kind) != LKV_OK)
        return cli_error(cmd, "--policy '%s' is not one of full, lazy, streaming, h2o, tova, "
                              "snapkv, nacl, rkv", spec->policy);
    lkv_policy_params p;
    lkv_policy_init(&p, kind);
    int rc = set_budget(spec, total, &p);
    for (int i = 0; rc == 0 && i < spec->n_params; i++) {
        const gen_param *g = &spec->params[i];
        int named = strcmp(g->flag, "--param") == 0;
        if (lkv_policy_set(&p, g->key, g->value) != LKV_OK)
            rc = cli_error(cmd, "%s %s%s%s: %s", g->flag, named ? g->key : "", named ? "=" : "",
                           g->value, lkv_last_error());
    }
    int32_t window = lkv_budget_default_window(kind, p.budget);
    if (rc == 0 && window > 0 && !gen_cache_window_given(spec))
        p.window = window;
    if (rc == 0)
        *out = p;
    return rc;
}

int gen_cache_check(const gen_cache_spec *spec)
{
    lkv_policy_params p;
    return policy_params(spec, 1, &p);
}

int gen_cache_config(const gen_cache_spec *spec, const lkv_model *m, int32_t prompt,
                     int32_t max_tokens, lkv_cache_config *out_cfg)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    lkv_model_cache_shape(m, &cfg);
    cfg.dtype = spec->dtype;
    cfg.gqa = spec->gqa;
    cfg.eviction = spec->eviction;
    cfg.placement = spec->placement;
    cfg.block_size = spec->block_size;
    int64_t total = (int64_t)prompt + max_tokens;
    int rc = policy_params(spec, total, &cfg.policy);
    if (rc)
        return rc;
    const lkv_policy_params *p = &cfg.policy;
    if (lkv_budget_has_window(p->kind) && p->budget < p->window) {
        char from[64] = "";
        if (spec->budget.fraction > 0.0)
            snprintf(from, sizeof from, " (%s of %lld tokens)", spec->budget.label,
                     (long long)total);
        return cli_error(cmd, "budget %d%s is below %s's window %d, which is always kept: raise "
                              "--budget or --max-tokens, or lower --window",
                         p->budget, from, lkv_policy_name(p->kind), p->window);
    }
    /* the last generated token is never fed back, so it takes no slot */
    int64_t cap = lkv_budget_capacity(p, prompt, max_tokens > 0 ? max_tokens - 1 : 0);
    if (cap > INT32_MAX)
        return cli_error(cmd, "a capacity of %lld slots does not fit the cache's int32 range",
                         (long long)cap);
    cfg.capacity = (int32_t)cap;
    *out_cfg = cfg;
    return 0;
}

/* The parameters `p` reads, after its name. */
static void policy_part(const lkv_policy_params *p, const char *fixed, char *part, size_t len)
{
    switch (p->kind) {
    case LKV_POLICY_FULL:
        snprintf(part, len, ": no eviction");
        break;
    case LKV_POLICY_LAZY:
        snprintf(part, len, ": budget %d, window %d%s, alpha %g%s", p->budget, p->window, fixed,
                 (double)p->alpha,
                 p->schedule == LKV_LAZY_PEAK ? ", schedule peak (lazykv's variant: at most B)"
                                              : "");
        break;
    case LKV_POLICY_STREAMING:
        snprintf(part, len, ": budget %d, sinks %d", p->budget, p->sinks);
        break;
    case LKV_POLICY_H2O:
        snprintf(part, len, ": budget %d, recent %d", p->budget, p->recent);
        break;
    case LKV_POLICY_TOVA:
        snprintf(part, len, ": budget %d", p->budget);
        break;
    case LKV_POLICY_SNAPKV:
        snprintf(part, len, ": budget %d, window %d%s, interval %d", p->budget, p->window, fixed,
                 p->interval);
        break;
    case LKV_POLICY_RKV:
        snprintf(part, len, ": budget %d, window %d%s, interval (buffer) %d, lambda %g",
                 p->budget, p->window, fixed, p->interval, (double)p->mix_lambda);
        break;
    default:
        snprintf(part, len,
                 ": sinks %d, proxy %g, proxy keep %g, random keep %g, protect %g, "
                 "min length %d, seed %llu",
                 p->sinks, (double)p->proxy_ratio, (double)p->proxy_keep_ratio,
                 (double)p->random_keep_ratio, (double)p->protect_ratio, p->min_length,
                 (unsigned long long)p->seed);
        break;
    }
}

void gen_policy_line(const lkv_cache_config *cfg, int window_given, char *buf, size_t len)
{
    const lkv_policy_params *p = &cfg->policy;
    char part[192];
    policy_part(p, window_given ? "" : " (default)", part, sizeof part);
    snprintf(buf, len, "%s%s", lkv_policy_name(p->kind), part);
    if (p->kind != LKV_POLICY_FULL && cfg->gqa == LKV_GQA_GROUPED &&
        cfg->q_heads != cfg->kv_heads) {
        size_t used = strlen(buf);
        snprintf(buf + used, len > used ? len - used : 0, ", group reduce %s",
                 p->group_reduce == LKV_REDUCE_MEAN ? "mean" : "max");
    }
}
