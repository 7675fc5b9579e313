/* What each lane is for one prompt: its cache configuration, its budget in
 * slots and the peak its policy promises; and the bookkeeping of a lane's
 * cache after a phase. */
#ifndef LKV_EVAL_LANES_H
#define LKV_EVAL_LANES_H

#include "eval.h"

typedef struct lkv_eval_lane_plan {
    lkv_cache_config cfg;
    int32_t budget;                 /* B, slots per cache head; 0 for full caches */
    int32_t bound;                  /* promised peak (LKV_EVAL_BOUND_PEAK) or B (PREFILL) */
    lkv_eval_bound_kind bound_kind;
    /* --at peak: the peak target in slots per cache head; `beyond` when no
     * budget reaches it (below the prompt, which every cache holds whole at
     * prefill), and the lane is then skipped, saying so. */
    int32_t target;
    int beyond;
} lkv_eval_lane_plan;

/* The plan of `spec` for a prompt of `prompt` tokens whose reference has
 * `generated` tokens. Fails only on a model shape lazykv cannot hold. */
lkv_status lkv_eval_lane_plan_make(const lkv_model *m, const lkv_eval_settings *s,
                                   const lkv_eval_lane_spec *spec, int32_t prompt,
                                   int32_t generated, lkv_eval_lane_plan *out);

/* Creates the lane's cache. A configuration the runtime refuses
 * (INVALID_ARGUMENT: a budget below the lazy window, say) marks the lane
 * skipped in `res` and returns LKV_OK with *out_cache NULL; any other failure
 * is returned with the lane's name in the message. */
lkv_status lkv_eval_lane_open(lkv_runtime *rt, const lkv_eval_lane_plan *plan,
                              const lkv_eval_lane_spec *spec, lkv_eval_lane_result *res,
                              lkv_cache **out_cache);

/* Folds a phase's cache statistics into `res`: the peak slots per cache head
 * (the larger of the phases'), and with `count_evictions` the evictions and
 * bytes; then re-judges the bound. */
void lkv_eval_lane_account(const lkv_cache *c, const lkv_eval_lane_plan *plan,
                           int count_evictions, lkv_eval_lane_result *res);

#endif
