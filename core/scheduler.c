/* Lagged eviction: after a step, ask the policy which (sequence, layer)
 * pairs are due and run them as one batch per op (score, select, compact)
 * over every due row, so an eviction event costs a handful of launches
 * whatever the model's depth or the batch's width. Pairs whose plans differ
 * form separate batches (they rarely do: every layer of a sequence holds the
 * same count, and sequences under one policy share its plan); so do pairs at
 * different steps on a backend whose ops take one step per call. Before a
 * step's append, full layers get the policy's early eviction the same way. */
#include <string.h>

#include "cache.h"
#include "error.h"
#include "lane.h"
#include "pages.h"

int lkv_early_plan(const lkv_cache *c, int32_t n, lkv_evict_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    return n >= c->cfg.capacity && c->rules->early_plan &&
           c->rules->early_plan(&c->cfg.policy, n, plan) && plan->keep < n;
}

static int plan_for(const lkv_cache *c, int32_t n, int32_t t, lkv_due due, lkv_evict_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (due == LKV_DUE_EARLY)
        return lkv_early_plan(c, n, plan);
    if (due == LKV_DUE_PREFILL)
        return c->rules->prefill_plan && c->rules->prefill_plan(&c->cfg.policy, n, plan);
    return c->rules->decode_plan && c->rules->decode_plan(&c->cfg.policy, n, t, plan);
}

static lkv_status run_score(lkv_cache *c, int32_t rows, lkv_score_kind kind,
                            const lkv_evict_plan *p, int32_t t, int32_t prior_k)
{
    lkv_score_args a = {
        .cache = &c->buf, .n_rows = rows, .rows = c->rows, .row_n = c->row_n,
        .rows_per_group = c->heads, .kind = kind, .t = t,
        .row_t = c->ops->row_steps ? c->row_t : NULL, .protect_head = p->protect_head,
        .protect_tail = p->protect_tail, .pool_kernel = p->pool_kernel,
        .seed = c->cfg.policy.seed, .prior_kept = prior_k ? c->kept : NULL, .prior_k = prior_k,
        .scores = c->scores,
    };
    return c->ops->score(c->dev, &a);
}

/* rkv: the keys' redundancy mixed into the scores, before rows unite. */
static lkv_status run_redundancy(lkv_cache *c, int32_t rows, const lkv_evict_plan *p)
{
    lkv_redundancy_args a = {
        .cache = &c->buf, .n_rows = rows, .rows = c->rows, .row_n = c->row_n,
        .protect_tail = p->protect_tail, .threshold = LKV_RKV_SIMILAR,
        .mix_lambda = p->mix_lambda, .importance_scale = p->importance_scale,
        .work = c->probs, .match = c->kept, .scores = c->scores,
    };
    return c->ops->redundancy(c->dev, &a);
}

static lkv_status run_select(lkv_cache *c, int32_t rows, int32_t keep)
{
    for (int32_t r = 0; r < rows; r++)
        c->row_k[r] = keep;
    lkv_select_args a = {
        .capacity = c->cfg.capacity, .n_rows = rows, .rows = c->rows, .row_n = c->row_n,
        .row_k = c->row_k, .scores = c->scores, .kept = c->kept,
    };
    return c->ops->select(c->dev, &a);
}

/* One batch: every head of the listed (sequence, layer) pairs, one plan. */
static lkv_status run_plan(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                           const lkv_evict_plan *p, lkv_due due)
{
    if (!c->ops->score || !c->ops->select || !c->ops->compact)
        return lkv_fail(LKV_UNSUPPORTED, "backend %s lacks an eviction op", c->ops->name);
    int32_t rows = 0;
    for (int32_t i = 0; i < n_pairs; i++)
        for (int32_t h = 0; h < c->heads; h++, rows++) {
            c->rows[rows] = lkv_row_of(c, pairs[i].seq, pairs[i].layer, h);
            c->row_n[rows] = c->seqs[pairs[i].seq].len[pairs[i].layer];
            c->row_t[rows] = pairs[i].t;
        }
    int32_t t = pairs[0].t;
    int two_stage = p->stage1_keep > 0;
    lkv_status st = run_score(c, rows, p->score, p, t, 0);
    if (st == LKV_OK && p->redundancy)
        st = run_redundancy(c, rows, p);
    if (st == LKV_OK)
        st = lkv_scores_unite(c, pairs, n_pairs);
    if (st == LKV_OK)
        st = run_select(c, rows, two_stage ? p->stage1_keep : p->keep);
    if (st == LKV_OK && two_stage)
        st = run_score(c, rows, p->stage2, p, t, p->stage1_keep);
    if (st == LKV_OK && two_stage)
        st = lkv_scores_unite(c, pairs, n_pairs);
    if (st == LKV_OK && two_stage)
        st = run_select(c, rows, p->keep);
    if (st == LKV_OK && c->cfg.kv_owner == LKV_KV_ENGINE)
        st = lkv_plan_record(c, pairs, n_pairs, p->keep);
    if (st != LKV_OK)
        return st;
    lkv_compact_args a = {
        .cache = &c->buf, .n_rows = rows, .rows = c->rows, .row_n = c->row_n, .row_k = c->row_k,
        .kept = c->kept,
    };
    if ((st = c->ops->compact(c->dev, &a)) == LKV_OK)
        st = lkv_pages_trim(c, c->rows, c->row_k, rows);
    if (st != LKV_OK)
        return lkv_fail_context(st, "eviction failed part-way (sequence %d, step %d; reset "
                                "the sequence)", pairs[0].seq, t);
    for (int32_t i = 0; i < n_pairs; i++) {
        lkv_sequence *s = &c->seqs[pairs[i].seq];
        int32_t n = s->len[pairs[i].layer];
        s->len[pairs[i].layer] = p->keep;
        /* A lane evicts a layer as soon as it observed the step, before the
         * step's last layer counts the token (decode.c): -1 makes that 0. */
        s->since_evict = due == LKV_DUE_DECODE && s->next_layer != 0 ? -1 : 0;
        c->stats.evictions++;
        c->stats.tokens_evicted += (int64_t)(n - p->keep) * c->heads;
        c->stats.slots_in_use -= (int64_t)(n - p->keep) * c->heads;
    }
    return LKV_OK;
}

/* Pairs j > i that can share pair i's batch: the same plan and, unless the
 * backend takes a step per row, the same step. Moves them next to i. */
static int32_t gather_batch(lkv_cache *c, int32_t i, int32_t n)
{
    lkv_due_pair *d = c->due_pairs;
    int32_t end = i + 1;
    for (int32_t j = i + 1; j < n; j++) {
        if (memcmp(&d[j].plan, &d[i].plan, sizeof d[i].plan) != 0 ||
            (!c->ops->row_steps && d[j].t != d[i].t))
            continue;
        lkv_due_pair tmp = d[end];
        d[end++] = d[j];
        d[j] = tmp;
    }
    return end - i;
}

int lkv_schedule_due(const lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                     lkv_layer_span span, lkv_due due)
{
    lkv_evict_plan plan;
    for (int32_t i = 0; i < n; i++)
        for (int32_t l = span.first; l < span.end; l++)
            if (plan_for(c, c->seqs[seqs[i]].len[l], steps[i], due, &plan))
                return 1;
    return 0;
}

lkv_status lkv_schedule(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n_seqs,
                        lkv_layer_span span, lkv_due due)
{
    if (c->lane)
        return lkv_lane_schedule(c, seqs, steps, n_seqs, span, due);
    return lkv_schedule_here(c, seqs, steps, n_seqs, span, due);
}

lkv_status lkv_schedule_here(lkv_cache *c, const int32_t *seqs, const int32_t *steps,
                             int32_t n_seqs, lkv_layer_span span, lkv_due due)
{
    int32_t n = 0;
    for (int32_t i = 0; i < n_seqs; i++) {
        const int32_t *len = c->seqs[seqs[i]].len;
        for (int32_t l = span.first; l < span.end; l++) {
            lkv_due_pair *d = &c->due_pairs[n];
            if (plan_for(c, len[l], steps[i], due, &d->plan)) {
                d->seq = seqs[i];
                d->layer = l;
                d->t = steps[i];
                n++;
            }
        }
    }
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < n && st == LKV_OK;) {
        int32_t count = gather_batch(c, i, n);
        st = run_plan(c, &c->due_pairs[i], count, &c->due_pairs[i].plan, due);
        i += count;
    }
    return st;
}
