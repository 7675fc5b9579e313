/* Phase 1: the full cache decodes the prompt greedily until an end token or
 * --max-tokens: the reference R that every lane is measured against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval_run.h"
#include "eval_text.h"
#include "clock.h"

/* R's text, its final answer, and the dataset's. */
static lkv_status reference_text(lkv_eval_state *R, lkv_eval_prompt_result *pr, int pi)
{
    if (R->env->tok) {
        lkv_status st = lkv_eval_decode(R->env->tok, pr->reference, pr->generated,
                                        &pr->reference_text);
        if (st != LKV_OK)
            return st;
    }
    lkv_eval_final_answer(pr->reference_text, pr->reference, pr->generated, pr->ref_answer,
                          sizeof pr->ref_answer);
    const char *want = R->prompts->items[pi].answer;
    snprintf(pr->dataset_answer, sizeof pr->dataset_answer, "%s", want);
    pr->ref_correct = want[0] ? !strcmp(want, pr->ref_answer) : -1;
    return LKV_OK;
}

/* The reference lane: its cache, filled with the prompt; R->logits holds the
 * first position's logits. */
static lkv_status open_reference(lkv_eval_state *R, int pi, lkv_lane *out_lane)
{
    const lkv_eval_prompt *p = &R->prompts->items[pi];
    lkv_eval_lane_plan plan;
    lkv_lane lane = {NULL, 0, 0};
    lkv_status st = lkv_eval_lane_plan_make(R->env->model, R->s, &R->r->lanes[0], p->n_ids,
                                            R->s->max_tokens, &plan);
    if (st == LKV_OK && (st = lkv_cache_create(R->env->rt, &plan.cfg, &lane.cache)) != LKV_OK)
        st = lkv_fail_context(st, "prompt %d, reference cache", pi + 1);
    if (st == LKV_OK &&
        (st = lkv_forward_prefill(R->fw, &lane, 1, p->ids, p->n_ids, R->logits)) != LKV_OK)
        st = lkv_fail_context(st, "prompt %d, reference prefill", pi + 1);
    if (st != LKV_OK) {
        lkv_cache_destroy(lane.cache);
        return st;
    }
    *out_lane = lane;
    return LKV_OK;
}

/* Greedy tokens into ref[] until an end token or --max-tokens; *out_g of
 * them. */
static lkv_status decode(lkv_eval_state *R, int pi, lkv_lane *lane, int32_t *ref, int32_t *out_g,
                         double t0)
{
    const int32_t max = R->s->max_tokens;
    for (int32_t g = 0;;) {
        int32_t tok = lkv_eval_argmax(R->logits, R->vocab);
        ref[g++] = tok;
        lkv_eval_count_step(R, pi, LKV_EVAL_REFERENCE, 1);
        lkv_eval_report(R, pi, LKV_EVAL_REFERENCE, g, max, 1, 0, t0);
        *out_g = g;
        if (g == max || lkv_eval_is_end(R, tok))
            return LKV_OK;
        lkv_status st = lkv_forward_step(R->fw, lane, 1, &tok, R->logits);
        if (st != LKV_OK)
            return lkv_fail_context(st, "prompt %d, reference, position %d", pi + 1, g);
    }
}

lkv_status lkv_eval_reference(lkv_eval_state *R, int pi)
{
    const lkv_eval_prompt *p = &R->prompts->items[pi];
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    double t0 = lkv_clock_seconds();
    int32_t g = 0, *ref = malloc(sizeof *ref * (size_t)R->s->max_tokens);
    if (!ref)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a %d-token reference",
                        R->s->max_tokens);
    pr->phase[LKV_EVAL_REFERENCE].prompt_tokens = p->n_ids;
    lkv_lane lane = {NULL, 0, 0};
    lkv_status st = open_reference(R, pi, &lane);
    if (st == LKV_OK)
        st = decode(R, pi, &lane, ref, &g, t0);
    lkv_cache_destroy(lane.cache);
    if (st != LKV_OK) {
        free(ref);
        return st;
    }
    pr->reference = ref;
    pr->generated = g;
    pr->prompt_tokens = p->n_ids;
    pr->total = p->n_ids + g;
    pr->phase[LKV_EVAL_REFERENCE].seconds = lkv_clock_seconds() - t0;
    lkv_eval_report(R, pi, LKV_EVAL_REFERENCE, g, g, 1, 1, t0);
    return reference_text(R, pr, pi);
}
