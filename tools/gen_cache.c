/* The cache a `lazykv generate` run gets: the model's shape, the policy with
 * its budget and the parameters given by name, and a capacity just large
 * enough for the policy's peak on this sequence, so the bytes it reserves are
 * what the policy really needs. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gen.h"

static const char *const cmd = "generate";

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Slots one cache head can hold at once for `prompt` tokens followed by
 * `total - prompt` decode steps (tokens fed back). Prefill keeps the whole prompt except for
 * snapkv (down to the budget) and nacl (whose share cannot be known before
 * it runs, so it gets the full sequence). The policies that evict every step
 * run one slot above their budget; lazy grows W slots between evictions. */
static int64_t policy_peak(const lkv_policy_params *p, int64_t prompt, int64_t total)
{
    int64_t b = p->budget, above = max64(prompt, b);
    switch (p->kind) {
    case LKV_POLICY_LAZY:
        return min64(total, above + p->window);
    case LKV_POLICY_STREAMING:
    case LKV_POLICY_H2O:
    case LKV_POLICY_TOVA:
        return min64(total, above + 1);
    case LKV_POLICY_SNAPKV: {
        int64_t every = p->interval == 0 ? p->window : p->interval;
        int64_t after_prefill = min64(prompt, b);
        if (every < 0) /* no decode-time eviction */
            return after_prefill + (total - prompt);
        return min64(after_prefill + (total - prompt), b + every);
    }
    default:
        return total;
    }
}

/* What lkv_cache_create demands of the capacity whatever the sequence (the
 * checks of core/policy_*.c): a sequence shorter than that still pays it. */
static int64_t policy_minimum(const lkv_policy_params *p)
{
    switch (p->kind) {
    case LKV_POLICY_LAZY:
        return (int64_t)p->budget + p->window;
    case LKV_POLICY_STREAMING:
    case LKV_POLICY_H2O:
    case LKV_POLICY_TOVA:
        return (int64_t)p->budget + 1;
    case LKV_POLICY_SNAPKV: {
        int64_t every = p->interval == 0 ? p->window : p->interval;
        return (int64_t)p->budget + (every > 0 ? every : 1);
    }
    default:
        return 1;
    }
}

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
    int64_t b = spec->budget ? spec->budget : total * spec->budget_pct / 100;
    if (b < 1)
        b = 1;
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)b);
    lkv_status st = lkv_policy_set(p, "budget", text);
    return st == LKV_OK ? 0 : cli_error(cmd, "--budget: %s", lkv_last_error());
}

/* The policy with its budget (for `total` tokens) and the named parameters. */
static int policy_params(const gen_cache_spec *spec, int64_t total, lkv_policy_params *out)
{
    lkv_policy_kind kind;
    if (lkv_policy_from_name(spec->policy, &kind) != LKV_OK)
        return cli_error(cmd, "--policy '%s' is not one of full, lazy, streaming, h2o, tova, "
                              "snapkv, nacl", spec->policy);
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
    int64_t total = (int64_t)prompt + max_tokens;
    int rc = policy_params(spec, total, &cfg.policy);
    if (rc)
        return rc;
    const lkv_policy_params *p = &cfg.policy;
    if ((p->kind == LKV_POLICY_LAZY || p->kind == LKV_POLICY_SNAPKV) && p->budget < p->window) {
        char from[64] = "";
        if (!spec->budget)
            snprintf(from, sizeof from, " (%d%% of %lld tokens)", spec->budget_pct,
                     (long long)total);
        return cli_error(cmd, "budget %d%s is below %s's window %d, which is always kept: raise "
                              "--budget or --max-tokens, or lower --window",
                         p->budget, from, lkv_policy_name(p->kind), p->window);
    }
    /* the last generated token is never fed back, so it takes no slot */
    int64_t cached = (int64_t)prompt + (max_tokens > 0 ? max_tokens - 1 : 0);
    int64_t cap = max64(policy_peak(&cfg.policy, prompt, cached), policy_minimum(&cfg.policy));
    cap = max64(cap, prompt);
    if (cap > INT32_MAX)
        return cli_error(cmd, "a capacity of %lld slots does not fit the cache's int32 range",
                         (long long)cap);
    cfg.capacity = (int32_t)cap;
    *out_cfg = cfg;
    return 0;
}

void gen_policy_line(const lkv_cache_config *cfg, char *buf, size_t len)
{
    const lkv_policy_params *p = &cfg->policy;
    snprintf(buf, len, "%s", lkv_policy_name(p->kind));
    char part[192];
    switch (p->kind) {
    case LKV_POLICY_FULL:
        snprintf(part, sizeof part, ": no eviction");
        break;
    case LKV_POLICY_LAZY:
        snprintf(part, sizeof part, ": budget %d, window %d, alpha %g", p->budget, p->window,
                 (double)p->alpha);
        break;
    case LKV_POLICY_STREAMING:
        snprintf(part, sizeof part, ": budget %d, sinks %d", p->budget, p->sinks);
        break;
    case LKV_POLICY_H2O:
        snprintf(part, sizeof part, ": budget %d, recent %d", p->budget, p->recent);
        break;
    case LKV_POLICY_TOVA:
        snprintf(part, sizeof part, ": budget %d", p->budget);
        break;
    case LKV_POLICY_SNAPKV:
        snprintf(part, sizeof part, ": budget %d, window %d, interval %d", p->budget, p->window,
                 p->interval);
        break;
    default:
        snprintf(part, sizeof part,
                 ": sinks %d, proxy %g, proxy keep %g, random keep %g, protect %g, "
                 "min length %d, seed %llu",
                 p->sinks, (double)p->proxy_ratio, (double)p->proxy_keep_ratio,
                 (double)p->random_keep_ratio, (double)p->protect_ratio, p->min_length,
                 (unsigned long long)p->seed);
        break;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, len > used ? len - used : 0, "%s", part);
    if (p->kind != LKV_POLICY_FULL && cfg->gqa == LKV_GQA_GROUPED &&
        cfg->q_heads != cfg->kv_heads) {
        used = strlen(buf);
        snprintf(buf + used, len > used ? len - used : 0, ", group reduce %s",
                 p->group_reduce == LKV_REDUCE_MEAN ? "mean" : "max");
    }
}
