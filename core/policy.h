/* What a policy decides, as data the core's scheduler acts on. One file per
 * policy (policy_<name>.c) fills an lkv_policy_rules table; the mechanics
 * (appending, batching, running the ops) are shared. */
#ifndef LKV_POLICY_H
#define LKV_POLICY_H

#include "backend.h"

/* One eviction: keep `keep` slots per cache head. With `stage1_keep` > 0 the
 * choice has two stages (nacl): keep stage1_keep by `score`, then fill up to
 * `keep` by `stage2`, the first stage's picks ranked above everything. */
typedef struct lkv_evict_plan {
    int32_t keep;
    lkv_score_kind score;
    int32_t protect_head;
    int32_t protect_tail;
    int32_t pool_kernel;
    int32_t stage1_keep;
    lkv_score_kind stage2;
    /* rkv: after `score`, the backend's redundancy op turns each unprotected
     * score s into mix_lambda * importance_scale * s - (1 - mix_lambda) *
     * the slot's key redundancy */
    int32_t redundancy;
    float mix_lambda;
    float importance_scale;
} lkv_evict_plan;

/* rkv: the cosine similarity above which a key is another's near-copy (the
 * reference code's fixed 0.5). */
#define LKV_RKV_SIMILAR 0.5f

/* Which prompt queries vote at prefill (their probabilities are summed into
 * state_f): queries [first, n); each sees slots [0, i] when causal, else all. */
typedef struct lkv_vote_plan {
    int32_t first;
    int causal;
    int required; /* 1: prefill without queries is an error */
} lkv_vote_plan;

typedef struct lkv_policy_rules {
    lkv_policy_kind kind;
    const char *name;
    const char *const *keys; /* parameter names it reads, NULL-terminated */
    lkv_group_reduce reduce; /* default combination for grouped GQA */
    void (*defaults)(lkv_policy_params *p);
    /* Parameter and capacity checks; message names the bad value. */
    lkv_status (*check)(const lkv_policy_params *p, int32_t capacity);
    /* Fills derived defaults (h2o recent, snapkv interval). May be NULL. */
    void (*resolve)(lkv_policy_params *p);
    /* Observation at every decode step: `observes` and its kind; or, when
     * it depends on the step, `observe_at` (1 and *kind, or 0 for none). */
    int observes;
    lkv_observe_kind observe_kind;
    int (*observe_at)(const lkv_policy_params *p, int32_t t, lkv_observe_kind *kind);
    /* Eviction due after decode step t with n slots: 1 and *plan, or 0. */
    int (*decode_plan)(const lkv_policy_params *p, int32_t n, int32_t t, lkv_evict_plan *plan);
    /* Eviction a decode step runs before its append when the layer holds
     * n = capacity slots, so that the append fits (docs/policies-admission.md):
     * 1 and *plan (keep < n), or 0. NULL: the policy does not evict during
     * decode, and a step on a full layer is OUT_OF_MEMORY. */
    int (*early_plan)(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan);
    /* Prefill of n tokens: votes (may be NULL) and eviction (may be NULL). */
    int (*prefill_votes)(const lkv_policy_params *p, int32_t n, lkv_vote_plan *votes);
    int (*prefill_plan)(const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan);
} lkv_policy_rules;

const lkv_policy_rules *lkv_policy_rules_of(lkv_policy_kind kind);

/* "faithful" or "peak"; NULL for a value that is not a schedule. */
const char *lkv_lazy_schedule_name(lkv_lazy_schedule s);

extern const lkv_policy_rules lkv_policy_full;
extern const lkv_policy_rules lkv_policy_lazy;
extern const lkv_policy_rules lkv_policy_streaming;
extern const lkv_policy_rules lkv_policy_h2o;
extern const lkv_policy_rules lkv_policy_tova;
extern const lkv_policy_rules lkv_policy_snapkv;
extern const lkv_policy_rules lkv_policy_nacl;
extern const lkv_policy_rules lkv_policy_rkv;

/* The early plan of a policy that evicts every step: on a full cache
 * before a step (a prompt of capacity tokens), room for the step's token
 * only, by the step plan's own ranking; the step's own eviction then brings
 * n to the budget with this step's attention (docs/policies-admission.md). */
int lkv_plan_room_for_one(int (*step_plan)(const lkv_policy_params *p, int32_t n, int32_t t,
                                           lkv_evict_plan *plan),
                          const lkv_policy_params *p, int32_t n, lkv_evict_plan *plan);

/* Shared checks, each failing with a message that names the policy.
 * `peak`: the most slots the policy holds in decode from a prompt within its
 * budget; a longer prompt (up to capacity) is held within capacity by the
 * early eviction, which needs budget < capacity and so no further check. */
lkv_status lkv_check_budget(const char *policy, int32_t budget, int32_t capacity, int64_t peak);
lkv_status lkv_check_range(const char *policy, const char *key, double value, double lo, double hi);

#endif
