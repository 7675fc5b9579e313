/* The lanes of a phase: their caches opened for one prompt, the batch of
 * those still stepping, the shared prefill, and a failed step named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval_run.h"

int lkv_eval_is_end(const lkv_eval_state *R, int32_t id)
{
    return !R->s->ignore_eos && R->env->tok && lkv_tokenizer_is_end(R->env->tok, id);
}

void lkv_eval_lanes_close(lkv_eval_state *R)
{
    for (int k = 0; k < R->n; k++) {
        lkv_cache_destroy(R->lanes[k].cache);
        free(R->lanes[k].gen);
    }
    memset(R->lanes, 0, sizeof *R->lanes * (size_t)R->n);
}

lkv_status lkv_eval_lanes_open(lkv_eval_state *R, int pi, int free_running)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    lkv_status st = LKV_OK;
    for (int k = 0; k < R->n && st == LKV_OK; k++) {
        lkv_eval_run_lane *l = &R->lanes[k];
        lkv_eval_lane_result *res = &pr->lanes[k];
        st = lkv_eval_lane_plan_make(R->env->model, R->s, &R->r->lanes[k], pr->prompt_tokens,
                                     pr->generated, &l->plan);
        if (st == LKV_OK)
            st = lkv_eval_lane_open(R->env->rt, &l->plan, &R->r->lanes[k], res, &l->cache);
        if (st == LKV_OK && l->cache && free_running &&
            !(l->gen = malloc(sizeof *l->gen * (size_t)pr->generated)))
            st = lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for lane %s",
                          R->r->lanes[k].name);
        l->lane = (lkv_lane){.cache = l->cache, .sequence = 0, .position = 0};
    }
    if (st != LKV_OK)
        lkv_eval_lanes_close(R);
    return st;
}

int lkv_eval_batch_gather(lkv_eval_state *R)
{
    int n = 0;
    for (int k = 0; k < R->n; k++)
        if (R->lanes[k].cache && !R->lanes[k].done) {
            R->batch[n] = R->lanes[k].lane;
            R->batch_of[n++] = k;
        }
    return n;
}

void lkv_eval_batch_scatter(lkv_eval_state *R, int n_batch)
{
    for (int b = 0; b < n_batch; b++)
        R->lanes[R->batch_of[b]].lane = R->batch[b];
}

lkv_status lkv_eval_batch_prefill(lkv_eval_state *R, int pi, int n_batch)
{
    const lkv_eval_prompt *p = &R->prompts->items[pi];
    lkv_status st = lkv_forward_prefill(R->fw, R->batch, n_batch, p->ids, p->n_ids, R->logits);
    if (st != LKV_OK)
        return lkv_fail_context(st, "prompt %d, prefill", pi + 1);
    lkv_eval_batch_scatter(R, n_batch);
    for (int b = 0; b < n_batch; b++) {
        int32_t len = 0, step = 0;
        lkv_cache_sequence_info(R->lanes[R->batch_of[b]].cache, 0, &len, &step);
        R->r->prompts[pi].lanes[R->batch_of[b]].prefill_kept = len;
    }
    return LKV_OK;
}

/* The message is saved first, since the queries below start from a clean
 * error. */
lkv_status lkv_eval_step_failed(const lkv_eval_state *R, lkv_status st, int pi,
                                lkv_eval_phase ph, int32_t position, int n_batch)
{
    char msg[512], names[256] = "";
    snprintf(msg, sizeof msg, "%s", lkv_last_error());
    size_t used = 0;
    for (int b = 0; b < n_batch; b++) {
        const lkv_eval_run_lane *l = &R->lanes[R->batch_of[b]];
        int32_t len = 0, step = 0;
        if (lkv_cache_sequence_info(l->cache, 0, &len, &step) == LKV_OK &&
            len >= l->plan.cfg.capacity && used + 1 < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                     R->r->lanes[R->batch_of[b]].name);
    }
    if (!names[0])
        snprintf(names, sizeof names, "%s (or another of the %d stepping)",
                 R->r->lanes[R->batch_of[0]].name, n_batch);
    return lkv_fail(st, "prompt %d, %s phase, position %d, lane %s: %s", pi + 1,
                    lkv_eval_phase_name(ph), position, names, msg);
}
