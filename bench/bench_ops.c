/* Per-op timing. The unit is one layer of one sequence, as a decode step
 * issues it: the grouped cache rows of its kv_heads, capacity = length, every
 * slot valid. Ops run in the order a step would (attend, observe, score,
 * select, compact), each repeated on the state the previous one left, so
 * select sorts real lazy scores and compact moves the slots select kept. */
#include "bench_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timer.h"
#include "error.h"

/* The decode step the lazy state is observed and scored at. */
#define LKV_BENCH_STEP 2048

typedef struct op_rig {
    lkv_runtime *rt;
    const lkv_bench_shape *shape;
    lkv_cache_buffers cache;
    lkv_buffer *probs, *scores, *kept, *q, *out;
    int32_t rows, length, keep, window;
    int32_t *row_ids, *row_n, *row_k; /* host row lists, [rows] */
} op_rig;

static void rig_free(op_rig *g)
{
    const lkv_backend_ops *ops = g->rt->ops;
    lkv_buffer *all[] = {g->cache.k, g->cache.v, g->cache.pos, g->cache.state_a,
                         g->cache.state_b, g->cache.state_f, g->probs, g->scores,
                         g->kept, g->q, g->out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            ops->free(g->rt->dev, all[i]);
    free(g->row_ids);
    free(g->row_n);
    free(g->row_k);
}

static lkv_status rig_alloc(op_rig *g)
{
    const lkv_bench_shape *sh = g->shape;
    size_t slots = (size_t)g->rows * (size_t)g->length;
    size_t kv = slots * (size_t)sh->head_dim * lkv_dtype_size(sh->dtype);
    size_t qo = (size_t)sh->q_heads * (size_t)sh->head_dim * sizeof(float);
    struct { lkv_buffer **slot; size_t bytes; } plan[] = {
        {&g->cache.k, kv},           {&g->cache.v, kv},           {&g->cache.pos, slots * 4},
        {&g->cache.state_a, slots * 4}, {&g->cache.state_b, slots * 4},
        {&g->cache.state_f, slots * 4}, {&g->probs, slots * 4},   {&g->scores, slots * 4},
        {&g->kept, slots * 4},       {&g->q, qo},                 {&g->out, qo},
    };
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        lkv_status st = g->rt->ops->alloc(g->rt->dev, plan[i].bytes, plan[i].slot);
        if (st != LKV_OK)
            return st;
    }
    g->row_ids = malloc(sizeof(int32_t) * (size_t)g->rows);
    g->row_n = malloc(sizeof(int32_t) * (size_t)g->rows);
    g->row_k = malloc(sizeof(int32_t) * (size_t)g->rows);
    if (!g->row_ids || !g->row_n || !g->row_k)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d bench rows", g->rows);
    for (int32_t r = 0; r < g->rows; r++) {
        g->row_ids[r] = r;
        g->row_n[r] = g->length;
        g->row_k[r] = g->keep;
    }
    g->cache.capacity = g->length;
    g->cache.head_dim = sh->head_dim;
    g->cache.dtype = sh->dtype;
    return LKV_OK;
}

/* Row r of the device cache gets the first `length` slots of the input's row r. */
static lkv_status rig_upload(op_rig *g, const lkv_bench_op_inputs *in)
{
    const lkv_backend_ops *ops = g->rt->ops;
    lkv_device *dev = g->rt->dev;
    size_t slot_bytes = (size_t)g->shape->head_dim * lkv_dtype_size(g->shape->dtype);
    size_t n = (size_t)g->length;
    int32_t *pos = malloc(sizeof(int32_t) * n);
    if (!pos)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %zu positions", n);
    for (size_t i = 0; i < n; i++)
        pos[i] = (int32_t)i;
    lkv_status st = ops->write(dev, g->q, 0, in->q,
                               (size_t)g->shape->q_heads * (size_t)g->shape->head_dim * 4);
    for (int32_t r = 0; r < g->rows && st == LKV_OK; r++) {
        size_t src = (size_t)r * (size_t)in->max_len, dst = (size_t)r * n;
        st = ops->write(dev, g->cache.k, dst * slot_bytes, in->k + src * slot_bytes, n * slot_bytes);
        if (st == LKV_OK)
            st = ops->write(dev, g->cache.v, dst * slot_bytes, in->v + src * slot_bytes,
                            n * slot_bytes);
        if (st == LKV_OK)
            st = ops->write(dev, g->cache.pos, dst * 4, pos, n * 4);
        if (st == LKV_OK)
            st = ops->write(dev, g->cache.state_a, dst * 4, in->last + src, n * 4);
        if (st == LKV_OK)
            st = ops->write(dev, g->cache.state_b, dst * 4, in->mri + src, n * 4);
    }
    free(pos);
    return st == LKV_OK ? ops->sync(dev) : st;
}

/* One group over every slot; `observe` (or NULL) rides on it. */
static lkv_status attend(op_rig *g, int with_probs, const lkv_attend_observe *observe)
{
    int32_t row0 = 0, n = g->length;
    lkv_attend_args a = {
        .cache = &g->cache, .n_groups = 1, .group_row0 = &row0, .group_n = &n,
        .cache_heads = g->rows, .q_heads = g->shape->q_heads,
        .scale = (float)(1.0 / sqrt((double)g->shape->head_dim)), .reduce = LKV_REDUCE_MAX,
        .q = g->q, .out = g->out, .probs = with_probs ? g->probs : NULL, .observe = observe,
    };
    return g->rt->ops->attend(g->rt->dev, &a);
}

static lkv_status issue_attend_probs(void *ctx) { return attend(ctx, 1, NULL); }
static lkv_status issue_attend_plain(void *ctx) { return attend(ctx, 0, NULL); }

static lkv_status issue_observe(void *ctx);

/* As core runs a decode step of a lazy cache: one op where the backend
 * fuses the observe into attend, attend with probs and observe otherwise. */
static lkv_status issue_attend_observe(void *ctx)
{
    op_rig *g = ctx;
    if (!g->rt->ops->attend_observes) {
        lkv_status st = attend(g, 1, NULL);
        return st == LKV_OK ? issue_observe(g) : st;
    }
    int32_t t = LKV_BENCH_STEP;
    lkv_attend_observe o = {.kind = LKV_OBSERVE_RECURRENCE, .alpha = 1e-4f, .group_t = &t};
    return attend(g, 0, &o);
}

static lkv_status issue_observe(void *ctx)
{
    op_rig *g = ctx;
    lkv_observe_args a = {
        .cache = &g->cache, .n_rows = g->rows, .rows = g->row_ids, .row_n = g->row_n,
        .probs = g->probs, .kind = LKV_OBSERVE_RECURRENCE, .t = LKV_BENCH_STEP, .alpha = 1e-4f,
    };
    return g->rt->ops->observe(g->rt->dev, &a);
}

static lkv_status issue_score(void *ctx)
{
    op_rig *g = ctx;
    lkv_score_args a = {
        .cache = &g->cache, .n_rows = g->rows, .rows = g->row_ids, .row_n = g->row_n,
        .rows_per_group = g->rows, .kind = LKV_SCORE_RECURRENCE, .t = LKV_BENCH_STEP,
        .protect_tail = g->window < g->length ? g->window : g->length, .scores = g->scores,
    };
    return g->rt->ops->score(g->rt->dev, &a);
}

static lkv_status issue_select(void *ctx)
{
    op_rig *g = ctx;
    lkv_select_args a = {
        .capacity = g->length, .n_rows = g->rows, .rows = g->row_ids, .row_n = g->row_n,
        .row_k = g->row_k, .scores = g->scores, .kept = g->kept,
    };
    return g->rt->ops->select(g->rt->dev, &a);
}

/* Repeating compact with the same kept list is safe and costs the same each
 * time: kept[j] >= j still holds, only the bytes moved differ. */
static lkv_status issue_compact(void *ctx)
{
    op_rig *g = ctx;
    lkv_compact_args a = {
        .cache = &g->cache, .n_rows = g->rows, .rows = g->row_ids, .row_k = g->row_k,
        .kept = g->kept,
    };
    return g->rt->ops->compact(g->rt->dev, &a);
}

static int has_op(const lkv_backend_ops *ops, lkv_bench_op op)
{
    switch (op) {
    case LKV_BENCH_ATTEND_PROBS:
    case LKV_BENCH_ATTEND_PLAIN: return ops->attend != NULL;
    case LKV_BENCH_OBSERVE: return ops->observe != NULL;
    case LKV_BENCH_SCORE: return ops->score != NULL;
    case LKV_BENCH_SELECT: return ops->select != NULL;
    case LKV_BENCH_COMPACT: return ops->compact != NULL;
    case LKV_BENCH_ATTEND_OBSERVE: return ops->attend != NULL && ops->observe != NULL;
    default: return 0;
    }
}

static void set_error(lkv_bench_timing *t, lkv_status st, const char *msg)
{
    memset(t, 0, sizeof *t);
    t->status = st;
    snprintf(t->error, sizeof t->error, "%s", msg);
}

void lkv_bench_ops_run(lkv_runtime *rt, const lkv_bench_settings *s,
                       const lkv_bench_op_inputs *in, int32_t length, const char *label,
                       lkv_bench_progress *progress, lkv_bench_timing out[LKV_BENCH_OP_COUNT])
{
    static const lkv_bench_issue issue[LKV_BENCH_OP_COUNT] = {
        issue_attend_probs, issue_attend_plain, issue_observe,
        issue_score,        issue_select,       issue_compact,
        issue_attend_observe,
    };
    op_rig g = {.rt = rt, .shape = &in->shape, .rows = in->shape.kv_heads, .length = length,
                .keep = lkv_bench_keep(s, length), .window = s->window};
    char len_text[16];
    lkv_bench_format_length(length, len_text, sizeof len_text);
    lkv_bench_progress_step(progress, "%s %s upload", label, len_text);
    lkv_status st = rig_alloc(&g);
    if (st == LKV_OK)
        st = rig_upload(&g, in);
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++) {
        lkv_bench_progress_step(progress, "%s %s %s", label, len_text,
                                lkv_bench_op_label((lkv_bench_op)op));
        if (st != LKV_OK) {
            set_error(&out[op], st, lkv_last_error());
            continue;
        }
        if (!has_op(rt->ops, (lkv_bench_op)op)) {
            char msg[96];
            snprintf(msg, sizeof msg, "backend %s has no %s op", rt->ops->name,
                     lkv_bench_op_id((lkv_bench_op)op));
            set_error(&out[op], LKV_UNSUPPORTED, msg);
            continue;
        }
        if (op == LKV_BENCH_COMPACT && out[LKV_BENCH_SELECT].status != LKV_OK) {
            set_error(&out[op], LKV_UNSUPPORTED, "not timed: select did not produce a kept list");
            continue;
        }
        lkv_bench_time(rt, s, issue[op], &g, &out[op]);
    }
    rig_free(&g);
}
