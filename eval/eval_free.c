/* Phase 3: every lane, the full cache included, generates greedily for up to
 * G tokens, stopping at an end token unless --ignore-eos; a lane that is done
 * leaves the batch. Then each generation is compared with R: the common
 * prefix and the final answer. */
#include <string.h>

#include "eval_run.h"
#include "eval_text.h"

static void take_token(const lkv_eval_state *R, lkv_eval_run_lane *l, int32_t tok, int32_t limit)
{
    l->gen[l->n_gen++] = tok;
    if (l->n_gen == limit || lkv_eval_is_end(R, tok))
        l->done = 1;
}

lkv_status lkv_eval_free_steps(lkv_eval_state *R, int pi, double t0)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    int32_t first = lkv_eval_argmax(R->logits, R->vocab), n_batch = 0;
    for (int k = 0; k < R->n; k++)
        if (R->lanes[k].cache) {
            take_token(R, &R->lanes[k], first, pr->generated);
            n_batch++;
        }
    lkv_eval_count_step(R, pi, LKV_EVAL_FREE, n_batch);
    for (int32_t t = 1; (n_batch = lkv_eval_batch_gather(R)) > 0; t++) {
        for (int b = 0; b < n_batch; b++) {
            const lkv_eval_run_lane *l = &R->lanes[R->batch_of[b]];
            R->tokens[b] = l->gen[l->n_gen - 1];
        }
        lkv_status st = lkv_forward_step(R->fw, R->batch, n_batch, R->tokens, R->logits);
        if (st != LKV_OK)
            return lkv_eval_step_failed(R, st, pi, LKV_EVAL_FREE, t, n_batch);
        lkv_eval_batch_scatter(R, n_batch);
        for (int b = 0; b < n_batch; b++)
            take_token(R, &R->lanes[R->batch_of[b]],
                       lkv_eval_argmax(R->logits + (size_t)b * (size_t)R->vocab, R->vocab),
                       pr->generated);
        lkv_eval_count_step(R, pi, LKV_EVAL_FREE, n_batch);
        lkv_eval_report(R, pi, LKV_EVAL_FREE, t + 1, pr->generated, n_batch, 0, t0);
    }
    return LKV_OK;
}

lkv_status lkv_eval_grade(lkv_eval_state *R, int pi, int k)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    lkv_eval_run_lane *l = &R->lanes[k];
    lkv_eval_lane_result *res = &pr->lanes[k];
    res->tokens = l->gen;
    res->generated = l->n_gen;
    l->gen = NULL;
    res->common_prefix = lkv_eval_common_prefix(res->tokens, res->generated, pr->reference,
                                                pr->generated);
    if (R->env->tok) {
        lkv_status st = lkv_eval_decode(R->env->tok, res->tokens, res->generated, &res->text);
        if (st != LKV_OK)
            return st;
    }
    lkv_eval_final_answer(res->text, res->tokens, res->generated, res->answer, sizeof res->answer);
    res->answer_match = !strcmp(res->answer, pr->ref_answer);
    res->correct = pr->dataset_answer[0] ? !strcmp(res->answer, pr->dataset_answer) : -1;
    return LKV_OK;
}
