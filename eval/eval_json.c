/* `--json FILE`: the settings, each lane's summary over prompts and every
 * prompt's per-lane details (texts or tokens included), for plotting and
 * diffing runs. NaN, which JSON lacks, is written as null; numbers keep nine
 * significant digits, enough to tell two runs' KL apart. */
#include <math.h>
#include <stdio.h>

#include "eval.h"
#include "json_writer.h"

static void settings(lkv_jw *w, const lkv_eval_results *r)
{
    const lkv_eval_settings *s = &r->settings;
    lkv_jw_begin_object(w, "settings", 0);
    lkv_jw_begin_array(w, "policies", 0);
    for (int i = 0; i < s->n_policies; i++)
        lkv_jw_string(w, NULL, lkv_eval_policy_name(s->policies[i], s->schedules[i]));
    lkv_jw_end_array(w);
    lkv_jw_string(w, "at", s->at_peak ? "peak" : "budget");
    lkv_jw_begin_array(w, "budgets", 0);
    for (int i = 0; i < s->n_budgets; i++)
        lkv_jw_string(w, NULL, s->budgets[i].label);
    lkv_jw_end_array(w);
    lkv_jw_begin_array(w, "gqa", 0);
    for (int i = 0; i < s->n_gqa; i++)
        lkv_jw_string(w, NULL, s->gqa[i] == LKV_GQA_GROUPED ? "grouped" : "expanded");
    lkv_jw_end_array(w);
    lkv_jw_begin_array(w, "granularity", 0);
    for (int i = 0; i < s->n_granularity; i++)
        lkv_jw_string(w, NULL, lkv_granularity_name(s->granularity[i]));
    lkv_jw_end_array(w);
    lkv_jw_int(w, "max_tokens", s->max_tokens);
    lkv_jw_bool(w, "ignore_eos", s->ignore_eos);
    lkv_jw_number(w, "window", s->window > 0 ? s->window : NAN);
    lkv_jw_number(w, "alpha", s->alpha >= 0.0 ? s->alpha : NAN);
    lkv_jw_number(w, "rkv_buffer", s->buffer > 0 ? s->buffer : NAN);
    lkv_jw_string(w, "dtype", lkv_dtype_name(s->dtype));
    lkv_jw_end_object(w);
}

static void model(lkv_jw *w, const lkv_eval_results *r)
{
    lkv_jw_begin_object(w, "model", 0);
    lkv_jw_string(w, "name", r->model);
    lkv_jw_int(w, "layers", r->shape.layers);
    lkv_jw_int(w, "q_heads", r->shape.q_heads);
    lkv_jw_int(w, "kv_heads", r->shape.kv_heads);
    lkv_jw_int(w, "head_dim", r->shape.head_dim);
    lkv_jw_int(w, "vocab", r->shape.vocab);
    lkv_jw_bool(w, "tokenizer", r->tokenized);
    lkv_jw_end_object(w);
}

/* Phase times summed over prompts first .. first + n - 1. */
static void phase_times(lkv_jw *w, const lkv_eval_results *r, int first, int n)
{
    lkv_jw_begin_object(w, "phases", 0);
    for (int ph = 0; ph < LKV_EVAL_PHASES; ph++) {
        double sec = 0.0;
        long long steps = 0, lane_tokens = 0;
        for (int i = first; i < first + n; i++) {
            const lkv_eval_phase_time *t = &r->prompts[i].phase[ph];
            sec += t->seconds;
            steps += t->steps;
            lane_tokens += t->lane_tokens;
        }
        lkv_jw_begin_object(w, lkv_eval_phase_name((lkv_eval_phase)ph), 0);
        lkv_jw_number(w, "seconds", sec);
        lkv_jw_int(w, "steps", steps);
        lkv_jw_int(w, "lane_tokens", lane_tokens);
        lkv_jw_number(w, "lane_tokens_per_s", sec > 0.0 ? lane_tokens / sec : NAN);
        lkv_jw_end_object(w);
    }
    lkv_jw_end_object(w);
}

static void summary(lkv_jw *w, const lkv_eval_results *r, int k)
{
    lkv_eval_summary s;
    lkv_eval_summarize(r, k, &s);
    lkv_jw_begin_object(w, "summary", 0);
    lkv_jw_int(w, "prompts", s.prompts);
    lkv_jw_int(w, "skipped", s.skipped);
    lkv_jw_int(w, "positions", s.positions);
    lkv_jw_number(w, "budget_mean", r->lanes[k].policy == LKV_POLICY_FULL ? NAN : s.budget_mean);
    lkv_jw_number(w, "window_mean", s.window_mean);
    lkv_jw_number(w, "memory_fraction", s.fraction_mean);
    lkv_jw_number(w, "peak_mean", s.peak_mean);
    lkv_jw_number(w, "peak_memory_fraction", s.memory_mean);
    lkv_jw_number(w, "bound_mean", s.bound_mean);
    lkv_jw_int(w, "over_bound", s.over_bound);
    lkv_jw_number(w, "kl_mean", s.kl_mean);
    lkv_jw_number(w, "kl_max", s.kl_max);
    lkv_jw_number(w, "top1", s.top1);
    lkv_jw_number(w, "reference_top1", s.ref_top1);
    lkv_jw_number(w, "ppl_ratio", s.ppl_ratio);
    lkv_jw_number(w, "common_prefix_mean", s.prefix_mean);
    lkv_jw_number(w, "common_prefix_share", s.prefix_share);
    lkv_jw_number(w, "answer_match", s.answer_match);
    lkv_jw_number(w, "accuracy", s.accuracy);
    lkv_jw_int(w, "graded", s.graded);
    lkv_jw_int(w, "evictions", s.evictions);
    lkv_jw_int(w, "tokens_evicted", s.tokens_evicted);
    lkv_jw_end_object(w);
}

static void lanes(lkv_jw *w, const lkv_eval_results *r)
{
    lkv_jw_begin_array(w, "lanes", 0);
    for (int k = 0; k < r->n_lanes; k++) {
        const lkv_eval_lane_spec *l = &r->lanes[k];
        lkv_jw_begin_object(w, NULL, 0);
        lkv_jw_string(w, "name", l->name);
        lkv_jw_string(w, "policy", lkv_eval_policy_name(l->policy, l->schedule));
        lkv_jw_string(w, "gqa", l->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded");
        lkv_jw_string(w, "granularity", lkv_granularity_name(l->granularity));
        lkv_jw_string(w, "budget", l->budget >= 0 ? r->settings.budgets[l->budget].label : NULL);
        lkv_jw_bool(w, "reference", l->reference);
        summary(w, r, k);
        lkv_jw_end_object(w);
    }
    lkv_jw_end_array(w);
}

static void tokens(lkv_jw *w, const char *key, const int32_t *ids, int32_t n)
{
    lkv_jw_begin_array(w, key, 1);
    for (int32_t i = 0; i < n; i++)
        lkv_jw_int(w, NULL, ids[i]);
    lkv_jw_end_array(w);
}

/* What the lane's cache was and held. */
static void lane_cache(lkv_jw *w, const lkv_eval_results *r, const lkv_eval_prompt_result *p,
                       const lkv_eval_lane_result *l)
{
    lkv_jw_int(w, "budget", l->budget);
    if (l->window > 0)
        lkv_jw_int(w, "window", l->window);
    lkv_jw_int(w, "cache_heads", l->cache_heads);
    lkv_jw_int(w, "capacity", l->capacity);
    lkv_jw_int(w, "prefill_kept", l->prefill_kept);
    lkv_jw_int(w, "peak", l->peak);
    lkv_jw_number(w, "peak_memory_fraction", lkv_eval_memory_share(r, p, l));
    lkv_jw_int(w, "bound", l->bound);
    lkv_jw_string(w, "bound_kind", l->bound_kind == LKV_EVAL_BOUND_PEAK ? "peak" : "prefill_only");
    lkv_jw_bool(w, "within_bound", l->within_bound);
    lkv_jw_int(w, "evictions", l->evictions);
    lkv_jw_int(w, "tokens_evicted", l->tokens_evicted);
    lkv_jw_int(w, "kv_bytes_peak", l->kv_bytes_peak);
}

static void lane_detail(lkv_jw *w, const lkv_eval_results *r, const lkv_eval_prompt_result *p, int k)
{
    const lkv_eval_lane_result *l = &p->lanes[k];
    lkv_jw_begin_object(w, NULL, 0);
    lkv_jw_string(w, "name", r->lanes[k].name);
    lkv_jw_string(w, "status", l->status == LKV_OK ? "ok" : "skipped");
    if (l->status != LKV_OK) {
        lkv_jw_string(w, "error", l->error);
        lkv_jw_end_object(w);
        return;
    }
    lane_cache(w, r, p, l);
    lkv_jw_int(w, "positions", l->positions);
    double pos = l->positions ? l->positions : NAN;
    lkv_jw_number(w, "kl_mean", l->kl_sum / pos);
    lkv_jw_number(w, "kl_max", l->kl_max);
    lkv_jw_number(w, "top1", l->top1 / pos);
    lkv_jw_number(w, "reference_top1", l->ref_top1 / pos);
    lkv_jw_number(w, "nll_mean", l->nll_sum / pos);
    lkv_jw_number(w, "ppl_ratio", exp((l->nll_sum - p->lanes[0].nll_sum) / pos));
    lkv_jw_int(w, "generated", l->generated);
    lkv_jw_int(w, "common_prefix", l->common_prefix);
    lkv_jw_string(w, "answer", l->answer);
    lkv_jw_bool(w, "answer_match", l->answer_match);
    if (l->correct >= 0)
        lkv_jw_bool(w, "correct", l->correct);
    if (l->text)
        lkv_jw_string(w, "text", l->text);
    else
        tokens(w, "tokens", l->tokens, l->generated);
    lkv_jw_end_object(w);
}

static void prompt(lkv_jw *w, const lkv_eval_results *r, int i)
{
    const lkv_eval_prompt_result *p = &r->prompts[i];
    lkv_jw_begin_object(w, NULL, 0);
    lkv_jw_int(w, "prompt_tokens", p->prompt_tokens);
    lkv_jw_int(w, "generated", p->generated);
    lkv_jw_int(w, "total", p->total);
    if (p->reference_text)
        lkv_jw_string(w, "reference_text", p->reference_text);
    else
        tokens(w, "reference_tokens", p->reference, p->generated);
    lkv_jw_string(w, "reference_answer", p->ref_answer);
    lkv_jw_string(w, "dataset_answer", p->dataset_answer[0] ? p->dataset_answer : NULL);
    if (p->ref_correct >= 0)
        lkv_jw_bool(w, "reference_correct", p->ref_correct);
    phase_times(w, r, i, 1);
    lkv_jw_begin_array(w, "lanes", 0);
    for (int k = 0; k < r->n_lanes; k++)
        lane_detail(w, r, p, k);
    lkv_jw_end_array(w);
    lkv_jw_end_object(w);
}

int lkv_eval_write_json(FILE *f, const lkv_eval_results *r)
{
    lkv_jw w;
    lkv_jw_init(&w, f);
    w.digits = 9;
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_string(&w, "tool", "lazykv eval");
    model(&w, r);
    lkv_jw_string(&w, "backend", r->backend);
    lkv_jw_int(&w, "threads", r->threads);
    settings(&w, r);
    lkv_jw_number(&w, "seconds", r->seconds);
    phase_times(&w, r, 0, r->n_prompts);
    lanes(&w, r);
    lkv_jw_begin_array(&w, "prompts", 0);
    for (int i = 0; i < r->n_prompts; i++)
        prompt(&w, r, i);
    lkv_jw_end_array(&w);
    lkv_jw_end_object(&w);
    return lkv_jw_finish(&w);
}
