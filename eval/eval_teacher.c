/* Phase 2: every lane reads the reference R teacher-forced, and at each
 * position its next-token distribution is compared with the full lane's:
 * KL(p_full || p_lane), top-1 agreement, NLL of R's token. */
#include <math.h>

#include "eval_run.h"

typedef struct metric_job {
    const lkv_eval_state *R;
    lkv_eval_prompt_result *pr;
    const float *full;
    double full_lse;
    int32_t full_top;
    int32_t target;
} metric_job;

static void metric_range(void *ctx, int64_t begin, int64_t end)
{
    const metric_job *j = ctx;
    const lkv_eval_state *R = j->R;
    for (int64_t b = begin; b < end; b++) {
        const float *x = R->lane_logits[b];
        lkv_eval_lane_result *res = &j->pr->lanes[R->batch_of[b]];
        double lse = lkv_eval_logsumexp(x, R->vocab);
        double kl = lkv_eval_kl(j->full, j->full_lse, R->p_full, x, lse, R->vocab);
        int32_t top = lkv_eval_argmax(x, R->vocab);
        res->kl_sum += kl;
        if (kl > res->kl_max)
            res->kl_max = kl;
        res->top1 += top == j->full_top;
        res->ref_top1 += top == j->target;
        res->nll_sum += lkv_eval_nll(x, lse, j->target);
        res->positions++;
    }
}

/* Every lane's measures at one position; batch entry 0 is the full lane. */
static void measure(lkv_eval_state *R, lkv_eval_prompt_result *pr, int n_batch, int32_t target)
{
    metric_job j = {R, pr, R->lane_logits[0], 0.0, 0, target};
    j.full_lse = lkv_eval_logsumexp(j.full, R->vocab);
    j.full_top = lkv_eval_argmax(j.full, R->vocab);
    for (int32_t i = 0; i < R->vocab; i++)
        R->p_full[i] = exp((double)j.full[i] - j.full_lse);
    if (R->env->pool)
        lkv_pool_run(R->env->pool, n_batch, metric_range, &j);
    else
        metric_range(&j, 0, n_batch);
}

lkv_status lkv_eval_teacher_steps(lkv_eval_state *R, int pi, int n_batch, double t0)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    for (int b = 0; b < n_batch; b++)
        R->lane_logits[b] = R->logits; /* the prefill's logits are every lane's */
    measure(R, pr, n_batch, pr->reference[0]);
    lkv_eval_count_step(R, pi, LKV_EVAL_TEACHER, n_batch);
    for (int32_t t = 1; t < pr->generated; t++) {
        for (int b = 0; b < n_batch; b++) {
            R->tokens[b] = pr->reference[t - 1];
            R->lane_logits[b] = R->logits + (size_t)b * (size_t)R->vocab;
        }
        lkv_status st = lkv_forward_step(R->fw, R->batch, n_batch, R->tokens, R->logits);
        if (st != LKV_OK)
            return lkv_eval_step_failed(R, st, pi, LKV_EVAL_TEACHER, t, n_batch);
        measure(R, pr, n_batch, pr->reference[t]);
        lkv_eval_count_step(R, pi, LKV_EVAL_TEACHER, n_batch);
        lkv_eval_report(R, pi, LKV_EVAL_TEACHER, t + 1, pr->generated, n_batch, 0, t0);
    }
    lkv_eval_batch_scatter(R, n_batch);
    return LKV_OK;
}
