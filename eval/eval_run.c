/* The eval loop: per prompt, the reference, then every lane teacher-forced on
 * it, then every lane free-running (eval_run.h says which file does what);
 * and the run's set-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval_run.h"
#include "clock.h"

const char *lkv_eval_phase_name(lkv_eval_phase p)
{
    static const char *const names[] = {"reference", "teacher-forced", "free-running"};
    return (unsigned)p < LKV_EVAL_PHASES ? names[p] : "?";
}

/* Teacher-forced or free-running: open the lanes, prefill them together,
 * step, then fold each lane's cache statistics (and for free-running its
 * generation) into its result. */
static lkv_status run_phase(lkv_eval_state *R, int pi, lkv_eval_phase ph)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    int teacher = ph == LKV_EVAL_TEACHER;
    double t0 = lkv_clock_seconds();
    lkv_status st = lkv_eval_lanes_open(R, pi, !teacher);
    if (st != LKV_OK)
        return st;
    int n_batch = lkv_eval_batch_gather(R);
    pr->phase[ph].prompt_tokens = pr->prompt_tokens;
    if ((st = lkv_eval_batch_prefill(R, pi, n_batch)) == LKV_OK)
        st = teacher ? lkv_eval_teacher_steps(R, pi, n_batch, t0) : lkv_eval_free_steps(R, pi, t0);
    for (int k = 0; k < R->n && st == LKV_OK; k++)
        if (R->lanes[k].cache) {
            lkv_eval_lane_account(R->lanes[k].cache, &R->lanes[k].plan, teacher, &pr->lanes[k]);
            if (!teacher)
                st = lkv_eval_grade(R, pi, k);
        }
    lkv_eval_lanes_close(R);
    pr->phase[ph].seconds = lkv_clock_seconds() - t0;
    if (st == LKV_OK)
        lkv_eval_report(R, pi, ph, pr->generated, pr->generated, teacher ? n_batch : 0, 1, t0);
    return st;
}

/* ---- set-up ---- */

void lkv_eval_results_free(lkv_eval_results *r)
{
    if (!r)
        return;
    for (int i = 0; r->prompts && i < r->n_prompts; i++) {
        lkv_eval_prompt_result *p = &r->prompts[i];
        free(p->reference);
        free(p->reference_text);
        for (int k = 0; p->lanes && k < r->n_lanes; k++) {
            free(p->lanes[k].tokens);
            free(p->lanes[k].text);
        }
        free(p->lanes);
    }
    free(r->prompts);
    free(r->lanes);
    memset(r, 0, sizeof *r);
}

static lkv_status init_results(const lkv_eval_env *env, const lkv_eval_settings *s,
                               const lkv_eval_prompts *prompts, lkv_eval_results *r)
{
    memset(r, 0, sizeof *r);
    r->settings = *s;
    snprintf(r->model, sizeof r->model, "%s", env->model->name);
    r->shape = env->model->cfg;
    r->tokenized = env->tok != NULL;
    lkv_runtime_info info;
    if (lkv_runtime_get_info(env->rt, &info) == LKV_OK)
        snprintf(r->backend, sizeof r->backend, "%s:%d", info.backend, info.device);
    r->threads = env->pool ? lkv_pool_threads(env->pool) : 1;
    lkv_status st = lkv_eval_lane_specs(s, &r->lanes, &r->n_lanes);
    if (st != LKV_OK)
        return st;
    r->n_prompts = prompts->count;
    r->prompts = calloc((size_t)prompts->count, sizeof *r->prompts);
    for (int i = 0; r->prompts && i < prompts->count; i++) {
        lkv_eval_prompt_result *p = &r->prompts[i];
        p->ref_correct = -1;
        if (!(p->lanes = calloc((size_t)r->n_lanes, sizeof *p->lanes)))
            break;
        for (int k = 0; k < r->n_lanes; k++)
            p->lanes[k].correct = -1;
    }
    if (!r->prompts || !r->prompts[prompts->count - 1].lanes) {
        lkv_eval_results_free(r);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the results");
    }
    return LKV_OK;
}

static lkv_status init_run(lkv_eval_state *R)
{
    int32_t max_prompt = 1;
    for (int i = 0; i < R->prompts->count; i++)
        if (R->prompts->items[i].n_ids > max_prompt)
            max_prompt = R->prompts->items[i].n_ids;
    R->n = R->r->n_lanes;
    R->vocab = R->env->model->cfg.vocab;
    size_t n = (size_t)R->n;
    R->lanes = calloc(n, sizeof *R->lanes);
    R->batch = calloc(n, sizeof *R->batch);
    R->batch_of = calloc(n, sizeof *R->batch_of);
    R->tokens = calloc(n, sizeof *R->tokens);
    R->logits = malloc(sizeof *R->logits * n * (size_t)R->vocab);
    R->lane_logits = calloc(n, sizeof *R->lane_logits);
    R->p_full = malloc(sizeof *R->p_full * (size_t)R->vocab);
    if (!R->lanes || !R->batch || !R->batch_of || !R->tokens || !R->logits || !R->lane_logits ||
        !R->p_full)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d lanes", R->n);
    return lkv_forward_create(R->env->model, R->env->pool, R->n, max_prompt, &R->fw);
}

static void free_run(lkv_eval_state *R)
{
    if (R->lanes)
        lkv_eval_lanes_close(R);
    lkv_forward_free(R->fw);
    free(R->lanes);
    free(R->batch);
    free(R->batch_of);
    free(R->tokens);
    free(R->logits);
    free(R->lane_logits);
    free(R->p_full);
}

static lkv_status check_settings(const lkv_eval_settings *s)
{
    if (s->max_tokens < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "max_tokens %d: expected >= 1", s->max_tokens);
    if (s->n_policies < 0 || s->n_policies > LKV_EVAL_MAX_POLICIES || s->n_gqa < 1 ||
        s->n_gqa > 2 || s->n_granularity < 1 || s->n_granularity > 3 || s->n_budgets < 0 || s->n_budgets > LKV_EVAL_MAX_BUDGETS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "settings: %d policies, %d budgets, %d GQA modes "
                        "out of range", s->n_policies, s->n_budgets, s->n_gqa);
    for (int p = 0; p < s->n_policies; p++)
        if (s->policies[p] != LKV_POLICY_FULL && s->n_budgets < 1)
            return lkv_fail(LKV_INVALID_ARGUMENT, "policy %s needs at least one budget",
                            lkv_policy_name(s->policies[p]));
    return LKV_OK;
}

lkv_status lkv_eval_run(const lkv_eval_env *env, const lkv_eval_settings *s,
                        const lkv_eval_prompts *prompts, lkv_eval_results *out)
{
    if (!env || !env->model || !env->rt || !s || !prompts || !out)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_eval_run: model, runtime, settings, prompts "
                        "and results are required");
    lkv_status st = check_settings(s);
    if (st == LKV_OK)
        st = lkv_eval_prompts_check(prompts, env->model->cfg.vocab);
    if (st == LKV_OK)
        st = lkv_eval_prompts_fit(prompts, s->max_tokens, env->model->cfg.context);
    if (st != LKV_OK)
        return st;
    lkv_eval_results r;
    if ((st = init_results(env, s, prompts, &r)) != LKV_OK)
        return st;
    lkv_eval_state R = {.env = env, .s = s, .prompts = prompts, .r = &r,
                        .t0 = lkv_clock_seconds()};
    st = init_run(&R);
    for (int i = 0; i < prompts->count && st == LKV_OK; i++) {
        st = lkv_eval_reference(&R, i);
        if (st == LKV_OK)
            st = run_phase(&R, i, LKV_EVAL_TEACHER);
        if (st == LKV_OK)
            st = run_phase(&R, i, LKV_EVAL_FREE);
    }
    free_run(&R);
    if (st != LKV_OK) {
        lkv_eval_results_free(&r);
        return st;
    }
    r.seconds = lkv_clock_seconds() - R.t0;
    *out = r;
    return LKV_OK;
}
