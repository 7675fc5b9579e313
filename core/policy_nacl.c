/* NACL: one eviction at the end of prefill. The last proxy_ratio * N prompt
 * queries score every key (non-causal); sinks and a recent region are kept,
 * then the top proxy_keep_ratio * N of the middle, then random_keep_ratio * N
 * more sampled without replacement with probability proportional to
 * exp(score): the top-k of score + Gumbel noise, the noise counter-based so
 * every backend draws the same.
 *
 * "protect_ratio * N tokens including the sinks" is read as: P = ceil(ratio
 * * N) protected tokens, of which min(sinks, P / 2) at the start and the rest
 * at the end; that is how the sink count scales down for short prompts. */
#include <math.h>

#include "policy.h"

#include "error.h"

static const char *const keys[] = {"sinks",         "proxy_ratio", "proxy_keep_ratio",
                                   "random_keep_ratio", "protect_ratio", "min_length",
                                   "seed",          NULL};

static void defaults(lkv_policy_params *p)
{
    p->proxy_ratio = 0.01f;
    p->proxy_keep_ratio = 0.12f;
    p->random_keep_ratio = 0.07f;
    p->protect_ratio = 0.01f;
    p->sinks = 256;
    p->min_length = 2048;
}

static lkv_status check(const lkv_policy_params *p, int32_t capacity)
{
    (void)capacity;
    lkv_status st = lkv_check_range("nacl", "proxy_ratio", p->proxy_ratio, 0.0, 1.0);
    if (st == LKV_OK)
        st = lkv_check_range("nacl", "proxy_keep_ratio", p->proxy_keep_ratio, 0.0, 1.0);
    if (st == LKV_OK)
        st = lkv_check_range("nacl", "random_keep_ratio", p->random_keep_ratio, 0.0, 1.0);
    if (st == LKV_OK)
        st = lkv_check_range("nacl", "protect_ratio", p->protect_ratio, 0.0, 1.0);
    if (st == LKV_OK && p->proxy_ratio <= 0.0f)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "proxy_ratio %g is invalid for nacl: at least one "
                      "proxy query must vote", p->proxy_ratio);
    if (st == LKV_OK && p->sinks < 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "sinks %d is invalid for nacl: expected >= 0", p->sinks);
    if (st == LKV_OK && p->min_length < 1)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "min_length %d is invalid for nacl: expected >= 1",
                      p->min_length);
    return st;
}

/* ratio * n rounded down (or up), forgiving the float error of the ratio
 * itself: 0.12f * 100 is 11.9999997 but means 12. */
static int32_t share_of(float ratio, int32_t n, int up)
{
    double x = (double)ratio * n;
    double tol = 1e-5 * (x > 1.0 ? x : 1.0);
    return (int32_t)(up ? ceil(x - tol) : floor(x + tol));
}

typedef struct nacl_split {
    int32_t sinks, recent, by_score, by_chance;
} nacl_split;

static nacl_split split_of(const lkv_policy_params *p, int32_t n)
{
    nacl_split s;
    int32_t protect = share_of(p->protect_ratio, n, 1);
    if (protect > n)
        protect = n;
    s.sinks = p->sinks < protect / 2 ? p->sinks : protect / 2;
    s.recent = protect - s.sinks;
    int32_t middle = n - protect;
    s.by_score = share_of(p->proxy_keep_ratio, n, 0);
    if (s.by_score > middle)
        s.by_score = middle;
    s.by_chance = share_of(p->random_keep_ratio, n, 0);
    if (s.by_chance > middle - s.by_score)
        s.by_chance = middle - s.by_score;
    return s;
}

static int prefill_votes(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes)
{
    if (n < p->min_length)
        return 0;
    int32_t proxies = share_of(p->proxy_ratio, n, 1);
    if (proxies < 1)
        proxies = 1;
    *votes = (lkv_vote_plan){.first = n - proxies, .causal = 0, .required = 1};
    return 1;
}

static int prefill_plan(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan)
{
    if (n < p->min_length)
        return 0;
    nacl_split s = split_of(p, n);
    int32_t stage1 = s.sinks + s.recent + s.by_score;
    /* With nothing kept by rank (no sinks, recent or proxy share) the whole
     * choice is the random stage. */
    *plan = (lkv_evict_plan){.keep = stage1 + s.by_chance,
                             .score = stage1 > 0 ? LKV_SCORE_STATE : LKV_SCORE_GUMBEL_NOISE,
                             .protect_head = s.sinks, .protect_tail = s.recent,
                             .stage1_keep = stage1, .stage2 = LKV_SCORE_GUMBEL_NOISE};
    return plan->keep < n;
}

const lkv_policy_rules lkv_policy_nacl = {
    .kind = LKV_POLICY_NACL,
    .name = "nacl",
    .keys = keys,
    .reduce = LKV_REDUCE_MEAN,
    .defaults = defaults,
    .check = check,
    .prefill_votes = prefill_votes,
    .prefill_plan = prefill_plan,
};
