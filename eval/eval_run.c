/* The eval loop: per prompt, the reference, then every lane teacher-forced on
 * it, then every lane free-running. Lanes step together, so the forward pass
 * reads the weights once per position for all of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "eval_lanes.h"
#include "eval_text.h"
#include "forward.h"

typedef struct run_lane {
    lkv_eval_lane_plan plan;
    lkv_cache *cache;   /* NULL: skipped for this prompt */
    lkv_lane lane;
    int32_t *gen;       /* free-running tokens */
    int32_t n_gen;
    int done;
} run_lane;

typedef struct run {
    const lkv_eval_env *env;
    const lkv_eval_settings *s;
    const lkv_eval_prompts *prompts;
    lkv_eval_results *r;
    lkv_forward *fw;
    int32_t vocab;
    int n;                      /* lanes (specs) */
    run_lane *lanes;            /* [n] */
    lkv_lane *batch;            /* [n] lanes stepping now */
    int *batch_of;              /* [n] lane index of each batch entry */
    int32_t *tokens;            /* [n] */
    float *logits;              /* [n][vocab] */
    const float **lane_logits;  /* [n] */
    double *p_full;             /* [vocab] the full lane's probabilities */
    double t0;
} run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *lkv_eval_phase_name(lkv_eval_phase p)
{
    static const char *const names[] = {"reference", "teacher-forced", "free-running"};
    return (unsigned)p < LKV_EVAL_PHASES ? names[p] : "?";
}

static int is_end(const run *R, int32_t id)
{
    return !R->s->ignore_eos && R->env->tok && lkv_tokenizer_is_end(R->env->tok, id);
}

/* ---- progress ---- */

/* Seconds per position of a phase, over the prompts done and the current
 * one so far; -1 when not seen yet. */
static double phase_rate(const run *R, int pi, lkv_eval_phase ph, lkv_eval_phase now,
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

/* What is left, phase by phase: a step costs the weights' pass plus a share
 * per lane, so each phase keeps its own measured rate (free-running runs the
 * lanes of teacher-forced, so each stands in for the other until measured).
 * Unknown reference lengths are the mean so far, else max_tokens. */
static double eta(const run *R, int pi, lkv_eval_phase now, int32_t step, int32_t steps,
                  double now_elapsed)
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
    int64_t g_sum = 0;
    for (int i = 0; i < pi; i++)
        g_sum += R->r->prompts[i].generated;
    double guess = pi ? (double)g_sum / pi : R->s->max_tokens;
    double g_now = R->r->prompts[pi].generated ? R->r->prompts[pi].generated : guess;
    double left = (double)(steps - step) * rate[now];
    for (int ph = now + 1; ph < LKV_EVAL_PHASES; ph++)
        left += g_now * rate[ph];
    for (int i = pi + 1; i < R->r->n_prompts; i++)
        for (int ph = 0; ph < LKV_EVAL_PHASES; ph++)
            left += guess * rate[ph];
    return left;
}

static void report(run *R, int pi, lkv_eval_phase ph, int32_t step, int32_t steps, int lanes,
                   int done, double phase_t0)
{
    if (!R->env->progress)
        return;
    const lkv_eval_phase_time *pt = &R->r->prompts[pi].phase[ph];
    double t = now_s();
    lkv_eval_progress p = {
        .prompt = pi, .n_prompts = R->r->n_prompts, .phase = ph, .step = step, .steps = steps,
        .lanes = lanes, .phase_done = done, .eta_s = eta(R, pi, ph, step, steps, t - phase_t0),
        .elapsed_s = t - R->t0, .phase_elapsed_s = t - phase_t0,
        .phase_lane_tokens = pt->lane_tokens};
    R->env->progress(R->env->progress_user, &p);
}

static void count(run *R, int pi, lkv_eval_phase ph, int64_t lane_tokens)
{
    R->r->prompts[pi].phase[ph].steps++;
    R->r->prompts[pi].phase[ph].lane_tokens += lane_tokens;
}

/* ---- failures ---- */

/* A batched step failed: name the lanes whose cache is full (the usual
 * cause), else the batch. The message is saved first, since the queries
 * below start from a clean error. */
static lkv_status step_failed(run *R, lkv_status st, int pi, lkv_eval_phase ph, int32_t position,
                              int n_batch)
{
    char msg[512], names[256] = "";
    snprintf(msg, sizeof msg, "%s", lkv_last_error());
    size_t used = 0;
    for (int b = 0; b < n_batch; b++) {
        const run_lane *l = &R->lanes[R->batch_of[b]];
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

/* ---- lanes of a phase ---- */

static void close_lanes(run *R)
{
    for (int k = 0; k < R->n; k++) {
        lkv_cache_destroy(R->lanes[k].cache);
        free(R->lanes[k].gen);
    }
    memset(R->lanes, 0, sizeof *R->lanes * (size_t)R->n);
}

static lkv_status open_lanes(run *R, int pi, int free_running)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    lkv_status st = LKV_OK;
    for (int k = 0; k < R->n && st == LKV_OK; k++) {
        run_lane *l = &R->lanes[k];
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
        close_lanes(R);
    return st;
}

/* The lanes still stepping, in lane order (the reference first). */
static int gather_batch(run *R)
{
    int n = 0;
    for (int k = 0; k < R->n; k++)
        if (R->lanes[k].cache && !R->lanes[k].done) {
            R->batch[n] = R->lanes[k].lane;
            R->batch_of[n++] = k;
        }
    return n;
}

static void scatter_batch(run *R, int n)
{
    for (int b = 0; b < n; b++)
        R->lanes[R->batch_of[b]].lane = R->batch[b];
}

static lkv_status prefill(run *R, int pi, int n_batch)
{
    const lkv_eval_prompt *p = &R->prompts->items[pi];
    lkv_status st = lkv_forward_prefill(R->fw, R->batch, n_batch, p->ids, p->n_ids, R->logits);
    if (st != LKV_OK)
        return lkv_fail_context(st, "prompt %d, prefill", pi + 1);
    scatter_batch(R, n_batch);
    for (int b = 0; b < n_batch; b++) {
        int32_t len = 0, step = 0;
        lkv_cache_sequence_info(R->lanes[R->batch_of[b]].cache, 0, &len, &step);
        R->r->prompts[pi].lanes[R->batch_of[b]].prefill_kept = len;
    }
    return LKV_OK;
}

/* ---- phase 1: the reference ---- */

static lkv_status reference_text(run *R, lkv_eval_prompt_result *pr, int pi)
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

static lkv_status reference(run *R, int pi)
{
    const lkv_eval_prompt *p = &R->prompts->items[pi];
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    const int32_t max = R->s->max_tokens;
    double t0 = now_s();
    lkv_eval_lane_plan plan;
    lkv_cache *c = NULL;
    int32_t *ref = malloc(sizeof *ref * (size_t)max);
    if (!ref)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a %d-token reference", max);
    lkv_status st = lkv_eval_lane_plan_make(R->env->model, R->s, &R->r->lanes[0], p->n_ids, max,
                                            &plan);
    if (st == LKV_OK && (st = lkv_cache_create(R->env->rt, &plan.cfg, &c)) != LKV_OK)
        lkv_fail_context(st, "prompt %d, reference cache", pi + 1);
    lkv_lane lane = {c, 0, 0};
    if (st == LKV_OK && (st = lkv_forward_prefill(R->fw, &lane, 1, p->ids, p->n_ids,
                                                  R->logits)) != LKV_OK)
        lkv_fail_context(st, "prompt %d, reference prefill", pi + 1);
    int32_t g = 0;
    pr->phase[LKV_EVAL_REFERENCE].prompt_tokens = p->n_ids;
    while (st == LKV_OK) {
        int32_t tok = lkv_eval_argmax(R->logits, R->vocab);
        ref[g++] = tok;
        count(R, pi, LKV_EVAL_REFERENCE, 1);
        report(R, pi, LKV_EVAL_REFERENCE, g, max, 1, 0, t0);
        if (g == max || is_end(R, tok))
            break;
        if ((st = lkv_forward_step(R->fw, &lane, 1, &tok, R->logits)) != LKV_OK)
            lkv_fail_context(st, "prompt %d, reference, position %d", pi + 1, g);
    }
    lkv_cache_destroy(c);
    if (st != LKV_OK) {
        free(ref);
        return st;
    }
    pr->reference = ref;
    pr->generated = g;
    pr->prompt_tokens = p->n_ids;
    pr->total = p->n_ids + g;
    pr->phase[LKV_EVAL_REFERENCE].seconds = now_s() - t0;
    report(R, pi, LKV_EVAL_REFERENCE, g, g, 1, 1, t0);
    return reference_text(R, pr, pi);
}

/* ---- phase 2: teacher-forced ---- */

typedef struct metric_job {
    run *R;
    lkv_eval_prompt_result *pr;
    const float *full;
    double full_lse;
    int32_t full_top;
    int32_t target;
} metric_job;

static void metric_range(void *ctx, int64_t begin, int64_t end)
{
    const metric_job *j = ctx;
    const run *R = j->R;
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
static void measure(run *R, lkv_eval_prompt_result *pr, int n_batch, int32_t target)
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

static lkv_status teacher_steps(run *R, int pi, int n_batch, double t0)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    for (int b = 0; b < n_batch; b++)
        R->lane_logits[b] = R->logits; /* the prefill's logits are every lane's */
    measure(R, pr, n_batch, pr->reference[0]);
    count(R, pi, LKV_EVAL_TEACHER, n_batch);
    for (int32_t t = 1; t < pr->generated; t++) {
        for (int b = 0; b < n_batch; b++) {
            R->tokens[b] = pr->reference[t - 1];
            R->lane_logits[b] = R->logits + (size_t)b * (size_t)R->vocab;
        }
        lkv_status st = lkv_forward_step(R->fw, R->batch, n_batch, R->tokens, R->logits);
        if (st != LKV_OK)
            return step_failed(R, st, pi, LKV_EVAL_TEACHER, t, n_batch);
        measure(R, pr, n_batch, pr->reference[t]);
        count(R, pi, LKV_EVAL_TEACHER, n_batch);
        report(R, pi, LKV_EVAL_TEACHER, t + 1, pr->generated, n_batch, 0, t0);
    }
    scatter_batch(R, n_batch);
    return LKV_OK;
}

static lkv_status teacher(run *R, int pi)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    double t0 = now_s();
    lkv_status st = open_lanes(R, pi, 0);
    if (st != LKV_OK)
        return st;
    int n_batch = gather_batch(R);
    pr->phase[LKV_EVAL_TEACHER].prompt_tokens = pr->prompt_tokens;
    if ((st = prefill(R, pi, n_batch)) == LKV_OK)
        st = teacher_steps(R, pi, n_batch, t0);
    for (int k = 0; k < R->n && st == LKV_OK; k++)
        if (R->lanes[k].cache)
            lkv_eval_lane_account(R->lanes[k].cache, &R->lanes[k].plan, 1, &pr->lanes[k]);
    close_lanes(R);
    pr->phase[LKV_EVAL_TEACHER].seconds = now_s() - t0;
    if (st == LKV_OK)
        report(R, pi, LKV_EVAL_TEACHER, pr->generated, pr->generated, n_batch, 1, t0);
    return st;
}

/* ---- phase 3: free-running ---- */

static void take_token(run *R, run_lane *l, int32_t tok, int32_t limit)
{
    l->gen[l->n_gen++] = tok;
    if (l->n_gen == limit || is_end(R, tok))
        l->done = 1;
}

static lkv_status free_steps(run *R, int pi, double t0)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    int32_t first = lkv_eval_argmax(R->logits, R->vocab), n_batch = 0;
    for (int k = 0; k < R->n; k++)
        if (R->lanes[k].cache) {
            take_token(R, &R->lanes[k], first, pr->generated);
            n_batch++;
        }
    count(R, pi, LKV_EVAL_FREE, n_batch);
    for (int32_t t = 1; (n_batch = gather_batch(R)) > 0; t++) {
        for (int b = 0; b < n_batch; b++) {
            const run_lane *l = &R->lanes[R->batch_of[b]];
            R->tokens[b] = l->gen[l->n_gen - 1];
        }
        lkv_status st = lkv_forward_step(R->fw, R->batch, n_batch, R->tokens, R->logits);
        if (st != LKV_OK)
            return step_failed(R, st, pi, LKV_EVAL_FREE, t, n_batch);
        scatter_batch(R, n_batch);
        for (int b = 0; b < n_batch; b++)
            take_token(R, &R->lanes[R->batch_of[b]],
                       lkv_eval_argmax(R->logits + (size_t)b * (size_t)R->vocab, R->vocab),
                       pr->generated);
        count(R, pi, LKV_EVAL_FREE, n_batch);
        report(R, pi, LKV_EVAL_FREE, t + 1, pr->generated, n_batch, 0, t0);
    }
    return LKV_OK;
}

/* Hands a lane's generation to its result and grades it. */
static lkv_status grade(run *R, lkv_eval_prompt_result *pr, int k)
{
    run_lane *l = &R->lanes[k];
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

static lkv_status free_running(run *R, int pi)
{
    lkv_eval_prompt_result *pr = &R->r->prompts[pi];
    double t0 = now_s();
    lkv_status st = open_lanes(R, pi, 1);
    if (st != LKV_OK)
        return st;
    pr->phase[LKV_EVAL_FREE].prompt_tokens = pr->prompt_tokens;
    if ((st = prefill(R, pi, gather_batch(R))) == LKV_OK)
        st = free_steps(R, pi, t0);
    for (int k = 0; k < R->n && st == LKV_OK; k++)
        if (R->lanes[k].cache) {
            lkv_eval_lane_account(R->lanes[k].cache, &R->lanes[k].plan, 0, &pr->lanes[k]);
            st = grade(R, pr, k);
        }
    close_lanes(R);
    pr->phase[LKV_EVAL_FREE].seconds = now_s() - t0;
    if (st == LKV_OK)
        report(R, pi, LKV_EVAL_FREE, pr->generated, pr->generated, 0, 1, t0);
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

static lkv_status init_run(run *R)
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

static void free_run(run *R)
{
    if (R->lanes)
        close_lanes(R);
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
        s->n_gqa > 2 || s->n_budgets < 0 || s->n_budgets > LKV_EVAL_MAX_BUDGETS)
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
    if (st != LKV_OK)
        return st;
    lkv_eval_results r;
    if ((st = init_results(env, s, prompts, &r)) != LKV_OK)
        return st;
    run R = {.env = env, .s = s, .prompts = prompts, .r = &r, .t0 = now_s()};
    st = init_run(&R);
    for (int i = 0; i < prompts->count && st == LKV_OK; i++) {
        st = reference(&R, i);
        if (st == LKV_OK)
            st = teacher(&R, i);
        if (st == LKV_OK)
            st = free_running(&R, i);
    }
    free_run(&R);
    if (st != LKV_OK) {
        lkv_eval_results_free(&r);
        return st;
    }
    r.seconds = now_s() - R.t0;
    *out = r;
    return LKV_OK;
}
