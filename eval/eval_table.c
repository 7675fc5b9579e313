/* The report on stdout (and --markdown): a header on the model and settings,
 * one markdown table row per lane aggregated over the prompts, the lanes
 * skipped and why, and the time each phase took. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval.h"
#include "table.h"

#define LKV_EVAL_COLUMNS 15 /* policy .. accuracy */

static void header(FILE *f, const lkv_eval_results *r)
{
    const lkv_eval_settings *s = &r->settings;
    const lkv_model_config *m = &r->shape;
    fprintf(f, "# lazykv eval: %s\n\n", r->model);
    fprintf(f, "- model: %d layers, %d query heads, %d KV heads, head_dim %d, vocab %d\n",
            m->layers, m->q_heads, m->kv_heads, m->head_dim, m->vocab);
    fprintf(f, "- backend %s, %s K/V storage, %d threads for the forward pass\n", r->backend,
            lkv_dtype_name(s->dtype), r->threads);
    int64_t tokens = 0, positions = 0;
    for (int i = 0; i < r->n_prompts; i++) {
        tokens += r->prompts[i].total;
        positions += r->prompts[i].generated;
    }
    fprintf(f, "- %d prompt(s), %lld tokens in all (prompt + reference), %lld reference "
               "positions; reference up to %d tokens%s\n",
            r->n_prompts, (long long)tokens, (long long)positions, s->max_tokens,
            s->ignore_eos ? ", end tokens ignored" : r->tokenized ? " or an end token" : "");
    lkv_policy_params lazy, snapkv, rkv;
    lkv_policy_init(&lazy, LKV_POLICY_LAZY);
    lkv_policy_init(&snapkv, LKV_POLICY_SNAPKV);
    lkv_policy_init(&rkv, LKV_POLICY_RKV);
    char window[64], alpha[32] = "default";
    if (s->window > 0)
        snprintf(window, sizeof window, "%d", s->window);
    else
        snprintf(window, sizeof window, "min(%d, B/2)", lazy.window);
    if (s->alpha >= 0.0)
        snprintf(alpha, sizeof alpha, "%g", s->alpha);
    fprintf(f, "- lazy window %s, alpha %s; snapkv window min(%d, B/2); rkv window min(%d, B/2), "
               "buffer %d, lambda %g; budgets are slots per cache head, a percentage is of each "
               "prompt's prompt + reference length T\n",
            window, alpha, snapkv.window, rkv.window, s->buffer > 0 ? s->buffer : rkv.interval,
            (double)rkv.mix_lambda);
    fprintf(f, "%s\n\n",
            s->at_peak ? "- at peak (--at peak): a budget entry is each lane's peak target; its "
                         "B is the largest whose peak bound is within it, so one entry's lanes "
                         "hold the same memory at their worst moment"
                       : "- at budget (--at budget): a budget entry is each lane's B; peaks "
                         "differ by policy (lazy B + W, h2o B + 1, ...)");
}

static void cell_number(char *buf, size_t len, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (v == 0.0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, fmt, v);
}

/* A mean over prompts: whole numbers stay whole. */
static void cell_mean(char *buf, size_t len, double v)
{
    snprintf(buf, len, v == floor(v) ? "%.0f" : "%.1f", v);
}

static void bound_cell(char *buf, size_t len, const lkv_eval_results *r, int k,
                       const lkv_eval_summary *s)
{
    char mean[24];
    cell_mean(mean, sizeof mean, s->bound_mean);
    int prefill = r->prompts[0].lanes[k].bound_kind == LKV_EVAL_BOUND_PREFILL;
    if (s->over_bound)
        snprintf(buf, len, "%s%s OVER (%d)", prefill ? "prefill <= " : "", mean, s->over_bound);
    else
        snprintf(buf, len, "%s%s ok", prefill ? "prefill <= " : "", mean);
}

static void row(FILE *f, const lkv_eval_results *r, int k)
{
    const lkv_eval_lane_spec *spec = &r->lanes[k];
    lkv_eval_summary s;
    lkv_eval_summarize(r, k, &s);
    const char *policy = spec->reference ? "full (reference)"
                                         : lkv_eval_policy_name(spec->policy, spec->schedule);
    static const char *const gqa_names[2][3] = {
        {"grouped", "grouped, per layer", "grouped, per token"},
        {"expanded", "expanded, per layer", "expanded, per token"}};
    const char *gqa = gqa_names[spec->gqa == LKV_GQA_EXPANDED][spec->granularity];
    const char *budget = spec->budget >= 0 ? r->settings.budgets[spec->budget].label : "-";
    if (s.prompts == 0) {
        const char *cells[LKV_EVAL_COLUMNS] = {policy, gqa, budget, "skipped", "", "", "", "",
                                               "", "", "", "", "", "", ""};
        lkv_table_markdown_row(f, LKV_EVAL_COLUMNS, cells);
        return;
    }
    char slots[24] = "-", window[24] = "-", share[24], peak[24], memory[24], bound[48], kl[24],
         top1[24], ppl[24], prefix[40], match[24], acc[24] = "-";
    if (spec->policy != LKV_POLICY_FULL)
        cell_mean(slots, sizeof slots, s.budget_mean);
    if (!isnan(s.window_mean))
        cell_mean(window, sizeof window, s.window_mean);
    snprintf(share, sizeof share, "%.1f%%", 100.0 * s.fraction_mean);
    cell_mean(peak, sizeof peak, s.peak_mean);
    snprintf(memory, sizeof memory, "%.1f%%", 100.0 * s.memory_mean);
    bound_cell(bound, sizeof bound, r, k, &s);
    cell_number(kl, sizeof kl, s.kl_mean, "%.3g");
    /* the reference row: its agreement with R, which it generated itself */
    snprintf(top1, sizeof top1, "%.4f", spec->reference ? s.ref_top1 : s.top1);
    snprintf(ppl, sizeof ppl, "%.4f", s.ppl_ratio);
    snprintf(prefix, sizeof prefix, "%.1f (%.0f%%)", s.prefix_mean, 100.0 * s.prefix_share);
    snprintf(match, sizeof match, "%.0f/%d", s.answer_match * s.prompts, s.prompts);
    if (s.graded)
        snprintf(acc, sizeof acc, "%.0f/%d", s.accuracy * s.graded, s.graded);
    const char *cells[LKV_EVAL_COLUMNS] = {policy, gqa, budget, slots,  window, share, peak, memory,
                                           bound,  kl,  top1,   ppl,    prefix, match, acc};
    lkv_table_markdown_row(f, LKV_EVAL_COLUMNS, cells);
}

static void notes(FILE *f, const lkv_eval_results *r)
{
    int any = 0;
    for (int i = 0; i < r->n_prompts; i++)
        for (int k = 0; k < r->n_lanes; k++) {
            const lkv_eval_lane_result *res = &r->prompts[i].lanes[k];
            if (res->status == LKV_OK)
                continue;
            if (!any++)
                fprintf(f, "\nSkipped lanes (the runtime refused the configuration, or --at "
                           "peak found no budget):\n\n");
            fprintf(f, "- prompt %d, %s: %s\n", i + 1, r->lanes[k].name, res->error);
        }
}

static void timing(FILE *f, const lkv_eval_results *r)
{
    fprintf(f, "\nTime per phase (lane-tokens: positions x lanes stepping):\n\n");
    for (int ph = 0; ph < LKV_EVAL_PHASES; ph++) {
        double sec = 0.0;
        int64_t steps = 0, lane_tokens = 0;
        for (int i = 0; i < r->n_prompts; i++) {
            sec += r->prompts[i].phase[ph].seconds;
            steps += r->prompts[i].phase[ph].steps;
            lane_tokens += r->prompts[i].phase[ph].lane_tokens;
        }
        fprintf(f, "- %s: %lld lane-tokens in %.2f s: %.1f lane-tokens/s, %.1f steps/s\n",
                lkv_eval_phase_name((lkv_eval_phase)ph), (long long)lane_tokens, sec,
                sec > 0.0 ? (double)lane_tokens / sec : 0.0, sec > 0.0 ? (double)steps / sec : 0.0);
    }
    fprintf(f, "- total %.2f s\n", r->seconds);
}

void lkv_eval_print_table(FILE *f, const lkv_eval_results *r)
{
    header(f, r);
    static const char *const names[LKV_EVAL_COLUMNS] = {
        "policy", "gqa", "budget", "slots B", "W", "B/T", "peak", "peak memory", "bound",
        "KL mean", "top-1", "ppl ratio", "common prefix", "answer match", "accuracy"};
    lkv_table_markdown_row(f, LKV_EVAL_COLUMNS, names);
    lkv_table_markdown_rule(f, "lllrrrrrlrrrrrr");
    for (int k = 0; k < r->n_lanes; k++)
        row(f, r, k);
    fprintf(f, "\nPer cache head (means over prompts): slots B, the window W (lazy, snapkv), the "
               "peak held and the bound the policy promises. B/T is the K/V memory of B slots in "
               "every cache head, peak memory the most K/V held at once, both as a share of the "
               "full cache of the whole sequence (T slots x KV heads). Expanded GQA gets B x "
               "kv/q slots per head, the grouped budget's memory, but holds its window or new "
               "token in each of its q_heads cache heads, so its peak memory can be higher. "
               "KL(p_full || p_lane) in nats, top-1 agreement with the full cache (for the "
               "reference: with the tokens it generated) and the perplexity ratio on the "
               "reference pool the teacher-forced positions of all prompts; common prefix "
               "(tokens, share of the reference) and answers come from free-running "
               "generation.\n");
    notes(f, r);
    timing(f, r);
    fflush(f);
}
