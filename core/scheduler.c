/* Lagged eviction: after a step, ask the policy which layers are due and run
 * them as one batch per op (score, select, compact) over every due (layer,
 * head) row, so an eviction event costs a handful of launches whatever the
 * model's depth. Layers whose plans differ (they never do today: every layer
 * holds the same count) form separate batches. Before a step's append, a
 * full layer gets the policy's early eviction the same way. */
#include <string.h>

#include "cache.h"
#include "error.h"

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
        .rows_per_group = c->heads, .kind = kind, .t = t, .protect_head = p->protect_head,
        .protect_tail = p->protect_tail, .pool_kernel = p->pool_kernel,
        .seed = c->cfg.policy.seed, .prior_kept = prior_k ? c->kept : NULL, .prior_k = prior_k,
        .scores = c->scores,
    };
    return c->ops->score(c->dev, &a);
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

/* One batch: every head of the listed layers, which all hold n slots. */
static lkv_status run_plan(lkv_cache *c, int32_t seq, const int32_t *layers, int32_t n_layers,
                           int32_t n, int32_t t, const lkv_evict_plan *p)
{
    if (!c->ops->score || !c->ops->select || !c->ops->compact)
        return lkv_fail(LKV_UNSUPPORTED, "backend %s lacks an eviction op", c->ops->name);
    int32_t rows = 0;
    for (int32_t i = 0; i < n_layers; i++)
        for (int32_t h = 0; h < c->heads; h++, rows++) {
            c->rows[rows] = lkv_row_of(c, seq, layers[i], h);
            c->row_n[rows] = n;
        }
    int two_stage = p->stage1_keep > 0;
    lkv_status st = run_score(c, rows, p->score, p, t, 0);
    if (st == LKV_OK)
        st = run_select(c, rows, two_stage ? p->stage1_keep : p->keep);
    if (st == LKV_OK && two_stage)
        st = run_score(c, rows, p->stage2, p, t, p->stage1_keep);
    if (st == LKV_OK && two_stage)
        st = run_select(c, rows, p->keep);
    if (st != LKV_OK)
        return st;
    lkv_compact_args a = {
        .cache = &c->buf, .n_rows = rows, .rows = c->rows, .row_k = c->row_k, .kept = c->kept,
    };
    if ((st = c->ops->compact(c->dev, &a)) != LKV_OK)
        return lkv_fail_context(st, "eviction failed part-way (sequence %d, step %d; reset "
                                "the sequence)", seq, t);
    for (int32_t i = 0; i < n_layers; i++)
        c->seqs[seq].len[layers[i]] = p->keep;
    c->stats.evictions += n_layers;
    c->stats.tokens_evicted += (int64_t)(n - p->keep) * c->heads * n_layers;
    c->stats.slots_in_use -= (int64_t)(n - p->keep) * c->heads * n_layers;
    return LKV_OK;
}

lkv_status lkv_schedule(lkv_cache *c, int32_t seq, int32_t first_layer, int32_t t, lkv_due due)
{
    const int32_t *len = c->seqs[seq].len;
    for (int32_t l = 0; l < c->cfg.layers; l++)
        c->due[l] = (unsigned char)(l >= first_layer && plan_for(c, len[l], t, due, &c->plans[l]));
    lkv_status st = LKV_OK;
    for (int32_t l = first_layer; l < c->cfg.layers && st == LKV_OK; l++) {
        if (!c->due[l])
            continue;
        int32_t count = 0;
        for (int32_t m = l; m < c->cfg.layers; m++) {
            if (c->due[m] && len[m] == len[l] &&
                memcmp(&c->plans[m], &c->plans[l], sizeof c->plans[l]) == 0) {
                c->due[m] = 0;
                c->layer_list[count++] = m;
            }
        }
        st = run_plan(c, seq, c->layer_list, count, len[l], t, &c->plans[l]);
    }
    return st;
}
