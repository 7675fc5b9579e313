/* The pass/fail verdict of `lazykv eval --check` (run in CI on stories260K).
 * Exact comparisons on purpose: a full cache computes the very same numbers
 * as the reference whatever the batch it steps in, so anything but KL 0,
 * agreement 1 and a reproduced reference is a bug, not noise. */
#include <stdio.h>

#include "eval.h"

static int fail(char *why, size_t len, int prompt, const char *lane, const char *what)
{
    snprintf(why, len, "prompt %d, lane %s: %s", prompt + 1, lane, what);
    return 0;
}

/* The reference lane against R: teacher-forced it picks R's every token,
 * free-running it writes R again. */
static int check_reference(const lkv_eval_results *r, int i, char *why, size_t len)
{
    const lkv_eval_prompt_result *p = &r->prompts[i];
    const lkv_eval_lane_result *ref = &p->lanes[0];
    char what[160];
    if (ref->positions != p->generated || ref->ref_top1 != ref->positions) {
        snprintf(what, sizeof what, "teacher-forced argmax equals the reference at %d of %d "
                 "positions, expected all", ref->ref_top1, p->generated);
        return fail(why, len, i, r->lanes[0].name, what);
    }
    if (ref->generated != p->generated || ref->common_prefix != p->generated) {
        snprintf(what, sizeof what, "free-running it shares %d of %d reference tokens, expected "
                 "all", ref->common_prefix, p->generated);
        return fail(why, len, i, r->lanes[0].name, what);
    }
    return 1;
}

static int check_lane(const lkv_eval_results *r, int i, int k, char *why, size_t len)
{
    const lkv_eval_prompt_result *p = &r->prompts[i];
    const lkv_eval_lane_result *res = &p->lanes[k];
    const char *name = r->lanes[k].name;
    char what[LKV_EVAL_ERROR_LEN + 32];
    if (res->status != LKV_OK) {
        snprintf(what, sizeof what, "skipped: %s", res->error);
        return fail(why, len, i, name, what);
    }
    if (!res->within_bound) {
        if (res->bound_kind == LKV_EVAL_BOUND_PREFILL)
            snprintf(what, sizeof what, "kept %d slots at prefill, above its budget %d",
                     res->prefill_kept, res->bound);
        else
            snprintf(what, sizeof what, "peak %d slots per head exceeds its bound %d", res->peak,
                     res->bound);
        return fail(why, len, i, name, what);
    }
    if (r->lanes[k].policy != LKV_POLICY_FULL)
        return 1;
    if (res->kl_sum != 0.0 || res->top1 != res->positions || res->nll_sum != p->lanes[0].nll_sum) {
        snprintf(what, sizeof what, "a full cache differs from the reference: KL sum %.3g, "
                 "top-1 %d of %d, NLL sum %.17g vs %.17g", res->kl_sum, res->top1,
                 res->positions, res->nll_sum, p->lanes[0].nll_sum);
        return fail(why, len, i, name, what);
    }
    return 1;
}

int lkv_eval_check(const lkv_eval_results *r, char *why, size_t len)
{
    for (int i = 0; i < r->n_prompts; i++) {
        if (!check_reference(r, i, why, len))
            return 0;
        for (int k = 0; k < r->n_lanes; k++)
            if (!check_lane(r, i, k, why, len))
                return 0;
    }
    snprintf(why, len, "ok");
    return 1;
}
