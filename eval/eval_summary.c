/* One lane's results over every prompt. Position measures (KL, top-1,
 * perplexity) pool the positions of all prompts, so a long reference weighs
 * more than a short one; per-generation measures (common prefix, answers)
 * are means over prompts. */
#include <math.h>
#include <string.h>

#include "eval.h"

double lkv_eval_memory_share(const lkv_eval_results *r, const lkv_eval_prompt_result *p,
                             const lkv_eval_lane_result *l)
{
    return (double)l->peak * l->cache_heads / ((double)p->total * r->shape.kv_heads);
}

typedef struct sums {
    double budget, window, fraction, peak, memory, bound, kl, nll_diff, prefix, prefix_share;
    int64_t top1, ref_top1, match, correct;
} sums;

static void add_prompt(const lkv_eval_results *r, const lkv_eval_prompt_result *p,
                       const lkv_eval_lane_result *res, const lkv_eval_lane_spec *spec,
                       lkv_eval_summary *s, sums *t)
{
    s->prompts++;
    s->positions += res->positions;
    t->budget += res->budget;
    t->window += res->window;
    /* expanded heads hold q_heads / kv_heads copies: count the memory */
    double memory = (double)res->budget * res->cache_heads;
    t->fraction += spec->policy == LKV_POLICY_FULL
                       ? 1.0
                       : memory / ((double)p->total * r->shape.kv_heads);
    t->peak += res->peak;
    t->memory += lkv_eval_memory_share(r, p, res);
    t->bound += res->bound;
    s->over_bound += !res->within_bound;
    t->kl += res->kl_sum;
    if (res->kl_max > s->kl_max)
        s->kl_max = res->kl_max;
    t->top1 += res->top1;
    t->ref_top1 += res->ref_top1;
    t->nll_diff += res->nll_sum - p->lanes[0].nll_sum;
    t->prefix += res->common_prefix;
    t->prefix_share += p->generated ? (double)res->common_prefix / p->generated : 0.0;
    t->match += res->answer_match;
    if (res->correct >= 0) {
        s->graded++;
        t->correct += res->correct;
    }
    s->evictions += res->evictions;
    s->tokens_evicted += res->tokens_evicted;
}

void lkv_eval_summarize(const lkv_eval_results *r, int lane, lkv_eval_summary *out)
{
    lkv_eval_summary s;
    sums t;
    memset(&s, 0, sizeof s);
    memset(&t, 0, sizeof t);
    for (int i = 0; i < r->n_prompts; i++) {
        const lkv_eval_prompt_result *p = &r->prompts[i];
        if (p->lanes[lane].status != LKV_OK)
            s.skipped++;
        else
            add_prompt(r, p, &p->lanes[lane], &r->lanes[lane], &s, &t);
    }
    double np = s.prompts ? (double)s.prompts : NAN, pos = s.positions ? (double)s.positions : NAN;
    s.budget_mean = t.budget / np;
    s.window_mean = t.window > 0.0 ? t.window / np : NAN;
    s.fraction_mean = t.fraction / np;
    s.peak_mean = t.peak / np;
    s.memory_mean = t.memory / np;
    s.bound_mean = t.bound / np;
    s.kl_mean = t.kl / pos;
    if (!s.positions)
        s.kl_max = NAN;
    s.top1 = (double)t.top1 / pos;
    s.ref_top1 = (double)t.ref_top1 / pos;
    s.ppl_ratio = exp(t.nll_diff / pos);
    s.prefix_mean = t.prefix / np;
    s.prefix_share = t.prefix_share / np;
    s.answer_match = (double)t.match / np;
    s.accuracy = s.graded ? (double)t.correct / s.graded : NAN;
    *out = s;
}
