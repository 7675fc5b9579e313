/* `--json FILE`: the settings, each lane's summary over prompts and every
 * prompt's per-lane details (texts or tokens included), for plotting and
 * diffing runs. NaN, which JSON lacks, is written as null. The writer is
 * eval's own: bench/'s lkv_jw lives in lazykv_bench, which lazykv_eval does
 * not link. */
#include <math.h>
#include <stdio.h>

#include "eval.h"
#include "json.h"

/* Separators and indentation: `first` is per object or array. */
typedef struct out {
    FILE *f;
    int depth;
    int first[16];
} out;

static void item(out *o, const char *key)
{
    fputs(o->first[o->depth] ? "\n" : ",\n", o->f);
    o->first[o->depth] = 0;
    fprintf(o->f, "%*s", 2 * o->depth, "");
    if (key) {
        lkv_json_write_string(o->f, key);
        fputs(": ", o->f);
    }
}

static void open_(out *o, const char *key, char bracket)
{
    item(o, key);
    fputc(bracket, o->f);
    o->first[++o->depth] = 1;
}

static void close_(out *o, char bracket)
{
    int empty = o->first[o->depth];
    o->depth--;
    if (!empty)
        fprintf(o->f, "\n%*s", 2 * o->depth, "");
    fputc(bracket, o->f);
}

static void str(out *o, const char *key, const char *v)
{
    item(o, key);
    if (v)
        lkv_json_write_string(o->f, v);
    else
        fputs("null", o->f);
}

static void num(out *o, const char *key, double v)
{
    item(o, key);
    if (isfinite(v))
        fprintf(o->f, "%.9g", v);
    else
        fputs("null", o->f);
}

static void integer(out *o, const char *key, long long v)
{
    item(o, key);
    fprintf(o->f, "%lld", v);
}

static void boolean(out *o, const char *key, int v)
{
    item(o, key);
    fputs(v ? "true" : "false", o->f);
}

static void settings(out *o, const lkv_eval_results *r)
{
    const lkv_eval_settings *s = &r->settings;
    open_(o, "settings", '{');
    open_(o, "policies", '[');
    for (int i = 0; i < s->n_policies; i++)
        str(o, NULL, lkv_policy_name(s->policies[i]));
    close_(o, ']');
    open_(o, "budgets", '[');
    for (int i = 0; i < s->n_budgets; i++)
        str(o, NULL, s->budgets[i].label);
    close_(o, ']');
    open_(o, "gqa", '[');
    for (int i = 0; i < s->n_gqa; i++)
        str(o, NULL, s->gqa[i] == LKV_GQA_GROUPED ? "grouped" : "expanded");
    close_(o, ']');
    integer(o, "max_tokens", s->max_tokens);
    boolean(o, "ignore_eos", s->ignore_eos);
    num(o, "window", s->window > 0 ? s->window : NAN);
    num(o, "alpha", s->alpha >= 0.0 ? s->alpha : NAN);
    str(o, "dtype", lkv_dtype_name(s->dtype));
    close_(o, '}');
}

static void model(out *o, const lkv_eval_results *r)
{
    open_(o, "model", '{');
    str(o, "name", r->model);
    integer(o, "layers", r->shape.layers);
    integer(o, "q_heads", r->shape.q_heads);
    integer(o, "kv_heads", r->shape.kv_heads);
    integer(o, "head_dim", r->shape.head_dim);
    integer(o, "vocab", r->shape.vocab);
    boolean(o, "tokenizer", r->tokenized);
    close_(o, '}');
}

/* Phase times summed over prompts first .. first + n - 1. */
static void phase_times(out *o, const lkv_eval_results *r, int first, int n)
{
    open_(o, "phases", '{');
    for (int ph = 0; ph < LKV_EVAL_PHASES; ph++) {
        double sec = 0.0;
        long long steps = 0, lane_tokens = 0;
        for (int i = first; i < first + n; i++) {
            const lkv_eval_phase_time *t = &r->prompts[i].phase[ph];
            sec += t->seconds;
            steps += t->steps;
            lane_tokens += t->lane_tokens;
        }
        open_(o, lkv_eval_phase_name((lkv_eval_phase)ph), '{');
        num(o, "seconds", sec);
        integer(o, "steps", steps);
        integer(o, "lane_tokens", lane_tokens);
        num(o, "lane_tokens_per_s", sec > 0.0 ? lane_tokens / sec : NAN);
        close_(o, '}');
    }
    close_(o, '}');
}

static void summary(out *o, const lkv_eval_results *r, int k)
{
    lkv_eval_summary s;
    lkv_eval_summarize(r, k, &s);
    open_(o, "summary", '{');
    integer(o, "prompts", s.prompts);
    integer(o, "skipped", s.skipped);
    integer(o, "positions", s.positions);
    num(o, "budget_mean", r->lanes[k].policy == LKV_POLICY_FULL ? NAN : s.budget_mean);
    num(o, "window_mean", s.window_mean);
    num(o, "memory_fraction", s.fraction_mean);
    num(o, "peak_mean", s.peak_mean);
    num(o, "peak_memory_fraction", s.memory_mean);
    num(o, "bound_mean", s.bound_mean);
    integer(o, "over_bound", s.over_bound);
    num(o, "kl_mean", s.kl_mean);
    num(o, "kl_max", s.kl_max);
    num(o, "top1", s.top1);
    num(o, "reference_top1", s.ref_top1);
    num(o, "ppl_ratio", s.ppl_ratio);
    num(o, "common_prefix_mean", s.prefix_mean);
    num(o, "common_prefix_share", s.prefix_share);
    num(o, "answer_match", s.answer_match);
    num(o, "accuracy", s.accuracy);
    integer(o, "graded", s.graded);
    integer(o, "evictions", s.evictions);
    integer(o, "tokens_evicted", s.tokens_evicted);
    close_(o, '}');
}

static void lanes(out *o, const lkv_eval_results *r)
{
    open_(o, "lanes", '[');
    for (int k = 0; k < r->n_lanes; k++) {
        const lkv_eval_lane_spec *l = &r->lanes[k];
        open_(o, NULL, '{');
        str(o, "name", l->name);
        str(o, "policy", lkv_policy_name(l->policy));
        str(o, "gqa", l->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded");
        str(o, "budget", l->budget >= 0 ? r->settings.budgets[l->budget].label : NULL);
        boolean(o, "reference", l->reference);
        summary(o, r, k);
        close_(o, '}');
    }
    close_(o, ']');
}

static void tokens(out *o, const char *key, const int32_t *ids, int32_t n)
{
    item(o, key);
    fputc('[', o->f);
    for (int32_t i = 0; i < n; i++)
        fprintf(o->f, i ? ", %d" : "%d", ids[i]);
    fputc(']', o->f);
}

/* What the lane's cache was and held. */
static void lane_cache(out *o, const lkv_eval_results *r, const lkv_eval_prompt_result *p,
                       const lkv_eval_lane_result *l)
{
    integer(o, "budget", l->budget);
    if (l->window > 0)
        integer(o, "window", l->window);
    integer(o, "cache_heads", l->cache_heads);
    integer(o, "capacity", l->capacity);
    integer(o, "prefill_kept", l->prefill_kept);
    integer(o, "peak", l->peak);
    num(o, "peak_memory_fraction", lkv_eval_memory_share(r, p, l));
    integer(o, "bound", l->bound);
    str(o, "bound_kind", l->bound_kind == LKV_EVAL_BOUND_PEAK ? "peak" : "prefill_only");
    boolean(o, "within_bound", l->within_bound);
    integer(o, "evictions", l->evictions);
    integer(o, "tokens_evicted", l->tokens_evicted);
    integer(o, "kv_bytes_peak", l->kv_bytes_peak);
}

static void lane_detail(out *o, const lkv_eval_results *r, const lkv_eval_prompt_result *p, int k)
{
    const lkv_eval_lane_result *l = &p->lanes[k];
    open_(o, NULL, '{');
    str(o, "name", r->lanes[k].name);
    str(o, "status", l->status == LKV_OK ? "ok" : "skipped");
    if (l->status != LKV_OK) {
        str(o, "error", l->error);
        close_(o, '}');
        return;
    }
    lane_cache(o, r, p, l);
    integer(o, "positions", l->positions);
    double pos = l->positions ? l->positions : NAN;
    num(o, "kl_mean", l->kl_sum / pos);
    num(o, "kl_max", l->kl_max);
    num(o, "top1", l->top1 / pos);
    num(o, "reference_top1", l->ref_top1 / pos);
    num(o, "nll_mean", l->nll_sum / pos);
    num(o, "ppl_ratio", exp((l->nll_sum - p->lanes[0].nll_sum) / pos));
    integer(o, "generated", l->generated);
    integer(o, "common_prefix", l->common_prefix);
    str(o, "answer", l->answer);
    boolean(o, "answer_match", l->answer_match);
    if (l->correct >= 0)
        boolean(o, "correct", l->correct);
    if (l->text)
        str(o, "text", l->text);
    else
        tokens(o, "tokens", l->tokens, l->generated);
    close_(o, '}');
}

static void prompt(out *o, const lkv_eval_results *r, int i)
{
    const lkv_eval_prompt_result *p = &r->prompts[i];
    open_(o, NULL, '{');
    integer(o, "prompt_tokens", p->prompt_tokens);
    integer(o, "generated", p->generated);
    integer(o, "total", p->total);
    if (p->reference_text)
        str(o, "reference_text", p->reference_text);
    else
        tokens(o, "reference_tokens", p->reference, p->generated);
    str(o, "reference_answer", p->ref_answer);
    str(o, "dataset_answer", p->dataset_answer[0] ? p->dataset_answer : NULL);
    if (p->ref_correct >= 0)
        boolean(o, "reference_correct", p->ref_correct);
    phase_times(o, r, i, 1);
    open_(o, "lanes", '[');
    for (int k = 0; k < r->n_lanes; k++)
        lane_detail(o, r, p, k);
    close_(o, ']');
    close_(o, '}');
}

int lkv_eval_write_json(FILE *f, const lkv_eval_results *r)
{
    out o = {.f = f};
    o.first[0] = 1;
    fputc('{', f);
    o.first[++o.depth] = 1;
    str(&o, "tool", "lazykv eval");
    model(&o, r);
    str(&o, "backend", r->backend);
    integer(&o, "threads", r->threads);
    settings(&o, r);
    num(&o, "seconds", r->seconds);
    phase_times(&o, r, 0, r->n_prompts);
    lanes(&o, r);
    open_(&o, "prompts", '[');
    for (int i = 0; i < r->n_prompts; i++)
        prompt(&o, r, i);
    close_(&o, ']');
    close_(&o, '}');
    fputc('\n', f);
    fflush(f);
    return ferror(f) ? -1 : 0;
}
