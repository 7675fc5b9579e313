/* Time and the ETA of a run. A step costs one pass over the weights plus a
 * share per lane, so each phase keeps its own measured seconds per position
 * (free-running runs the lanes of teacher-forced, so each stands in for the
 * other until measured); a reference length not known yet is the mean so
 * far, else --max-tokens. */
#include <time.h>

#include "eval_run.h"
#include "clock.h"

void lkv_eval_count_step(lkv_eval_state *R, int pi, lkv_eval_phase ph, int64_t lane_tokens)
{
    R->r->prompts[pi].phase[ph].steps++;
    R->r->prompts[pi].phase[ph].lane_tokens += lane_tokens;
}

/* Seconds per position of a phase, over the prompts done and the current
 * one so far; -1 when not seen yet. */
static double phase_rate(const lkv_eval_state *R, int pi, lkv_eval_phase ph, lkv_eval_phase now,
                         double now_elapsed)
{
    double sec = ph == now ? now_elapsed : 0.0;
    int64_t pos = 0;
    for (int i = 0; i <= pi; i++) {
        const lkv_eval_phase_time *t = &R->r->prompts[i].phase[ph];
        if (i < pi || ph < now)
            sec += t->seconds;
        if (i < pi || ph <= now)
            pos += t->steps;
    }
    return pos ? sec / (double)pos : -1.0;
}

/* The reference length of prompt pi, or its best guess. */
static double length_guess(const lkv_eval_state *R, int pi, double *out_later)
{
    int64_t g_sum = 0;
    for (int i = 0; i < pi; i++)
        g_sum += R->r->prompts[i].generated;
    *out_later = pi ? (double)g_sum / pi : R->s->max_tokens;
    return R->r->prompts[pi].generated ? R->r->prompts[pi].generated : *out_later;
}

static double eta(const lkv_eval_state *R, int pi, lkv_eval_phase now, int32_t step,
                  int32_t steps, double now_elapsed)
{
    double rate[LKV_EVAL_PHASES];
    for (int ph = 0; ph < LKV_EVAL_PHASES; ph++)
        rate[ph] = phase_rate(R, pi, (lkv_eval_phase)ph, now, now_elapsed);
    if (rate[LKV_EVAL_FREE] < 0.0)
        rate[LKV_EVAL_FREE] = rate[LKV_EVAL_TEACHER];
    if (rate[LKV_EVAL_TEACHER] < 0.0)
        rate[LKV_EVAL_TEACHER] = rate[LKV_EVAL_FREE];
    if (rate[now] < 0.0 || rate[LKV_EVAL_TEACHER] < 0.0)
        return -1.0;
    double later, g_now = length_guess(R, pi, &later);
    double left = (double)(steps - step) * rate[now];
    for (int ph = now + 1; ph < LKV_EVAL_PHASES; ph++)
        left += g_now * rate[ph];
    for (int i = pi + 1; i < R->r->n_prompts; i++)
        for (int ph = 0; ph < LKV_EVAL_PHASES; ph++)
            left += later * rate[ph];
    return left;
}

void lkv_eval_report(const lkv_eval_state *R, int pi, lkv_eval_phase ph, int32_t step,
                     int32_t steps, int lanes, int done, double phase_t0)
{
    if (!R->env->progress)
        return;
    const lkv_eval_phase_time *pt = &R->r->prompts[pi].phase[ph];
    double t = lkv_clock_seconds();
    lkv_eval_progress p = {
        .prompt = pi, .n_prompts = R->r->n_prompts, .phase = ph, .step = step, .steps = steps,
        .lanes = lanes, .phase_done = done, .eta_s = eta(R, pi, ph, step, steps, t - phase_t0),
        .elapsed_s = t - R->t0, .phase_elapsed_s = t - phase_t0,
        .phase_lane_tokens = pt->lane_tokens};
    R->env->progress(R->env->progress_user, &p);
}
