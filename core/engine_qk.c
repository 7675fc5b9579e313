/* lkv_cache_observe_batch_qk and lkv_cache_observe_prompt_qk: the
 * probabilities an engine's fused attention did not keep, recomputed from
 * its queries, its K read in place and (optionally) its log-sum-exp; from
 * there each call is its probabilities twin's. The logits are the oracle's
 * (backends/ref attend: a double dot product, times the scale), so without
 * an lse the probabilities are the oracle's softmax, and with one only the
 * engine's lse, rounded to f32, separates them. Host memory, one thread,
 * scratch for one call: nothing of the cache changes until every
 * probability checks. */
#include <math.h>
#include <stdlib.h>

#include "cache.h"
#include "dtype.h"
#include "error.h"
#include "kv_layout.h"

/* How far above 1 an exponent may land before its lse is called wrong: the
 * f32 rounding of a denominator a single slot dominates. */
static const double lse_slack = 1e-5;

/* How far from 1 a row's probabilities may sum. Every slot the query sees is
 * recomputed, so the sum is free and catches an lse, scale or K view that is
 * not the engine's (an lse off by 1 puts it at e or 1/e) where the bound
 * above cannot; 1e-3 leaves room for an engine that rounds q or accumulates
 * its logits in another order. */
static const double sum_slack = 1e-3;

/* What both calls share: where K is and how the logits were scaled. */
typedef struct qk_view {
    const float *q;
    const float *lse;
    float scale;
    const lkv_kv_layout *k;
    const lkv_slot_map *map;
    const char *call;
} qk_view;

/* Where the K of one (sequence, layer, cache head) row is. */
typedef struct k_row {
    const unsigned char *base; /* the layer's K plus the head's offset */
    const int32_t *slots;      /* physical slot of logical slot j; NULL: j */
    const int32_t *table;      /* block table; NULL: the layout's */
    int32_t n_table;
} k_row;

/* One query's row: which sequence and query head it is, for the messages. */
typedef struct qk_query {
    const float *q;
    const float *lse; /* NULL: normalise here */
    int32_t seq, qh, n;
} qk_query;

static lkv_status check_map(const lkv_cache *c, const qk_view *v)
{
    lkv_slot_map_config m;
    lkv_status st = lkv_slot_map_get_config(v->map, &m);
    if (st != LKV_OK)
        return st;
    if (m.sequences != c->cfg.sequences || m.layers != c->cfg.layers || m.heads != c->heads ||
        m.block_size != v->k->block_size)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the slot map's %d sequences x %d layers x %d heads in blocks of %d "
                        "do not match the cache's %d x %d x %d and the layout's blocks of %d",
                        v->call, m.sequences, m.layers, m.heads, m.block_size, c->cfg.sequences,
                        c->cfg.layers, c->heads, v->k->block_size);
    return LKV_OK;
}

/* `buffers`: LKV_LAYOUT_K for K in host memory (k_layers read), 0 for K in
 * device memory (then q is not read either). */
static lkv_status check_view(const lkv_cache *c, int32_t layer, const qk_view *v, int buffers)
{
    const lkv_kv_layout *kv = v->k;
    if ((buffers && !v->q) || !kv)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL, but policy %s observes this step",
                        v->call, !kv ? "k" : "q", c->rules->name);
    if (!(v->scale > 0.0f) || !isfinite(v->scale))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: scale %g must be finite and > 0", v->call,
                        (double)v->scale);
    lkv_status st = lkv_kv_layout_check(kv, buffers, v->call);
    if (st != LKV_OK)
        return st;
    if (kv->head_dim != c->cfg.head_dim || kv->heads != c->heads || kv->layers <= layer)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the layout's head_dim %d, heads %d, layers %d do not hold the "
                        "cache's head_dim %d, heads %d and layer %d",
                        v->call, kv->head_dim, kv->heads, kv->layers, c->cfg.head_dim, c->heads,
                        layer);
    if (v->map && kv->block_size < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: a slot map needs a paged layout (block_size %d)", v->call,
                        kv->block_size);
    return v->map ? check_map(c, v) : LKV_OK;
}

/* The map's row (seq, layer, head) and the sequence's block table; the row
 * must hold the `live` slots the call sees. The host and device paths both
 * read K through these. */
static lkv_status map_row(const lkv_slot_map *map, const char *call, int32_t seq, int32_t layer,
                          int32_t head, int32_t live, k_row *out)
{
    int32_t held = 0;
    lkv_status st = lkv_slot_map_row(map, seq, layer, head, &out->slots, &held);
    if (st == LKV_OK)
        st = lkv_slot_map_table(map, seq, &out->table, &out->n_table);
    if (st == LKV_OK && held != live)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "%s: the slot map's row (sequence %d, layer %d, head %d) holds %d slots; "
                      "the call sees %d (place the new tokens first)",
                      call, seq, layer, head, held, live);
    return st;
}

/* Row (seq, head) of the layer as the layout and map place it; a map's row
 * must hold the `live` slots the call sees. */
static lkv_status k_row_of(const qk_view *v, int32_t layer, int32_t seq, int32_t head,
                           int32_t live, k_row *out)
{
    const lkv_kv_layout *kv = v->k;
    *out = (k_row){(const unsigned char *)kv->k_layers[layer] + (size_t)head * kv->head_stride,
                   NULL, NULL, 0};
    if (seq >= kv->sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d is outside the layout's %d",
                        v->call, seq, kv->sequences);
    return v->map ? map_row(v->map, v->call, seq, layer, head, live, out) : LKV_OK;
}

/* A cache head's query heads (its group) over the same n slots: per
 * queries head_dim apart, their lse (or NULL) and probability rows. */
typedef struct qk_group {
    const float *q;
    const float *lse;
    float *p;
    int32_t per, stride; /* queries; floats from one p row to the next */
    int32_t seq, qh, n;  /* qh: the first query head, for the messages */
} qk_group;

/* Scratch for one call: rows x stride probabilities, a group's logits
 * [per][stride] and one slot's K widened to double. */
typedef struct qk_scratch {
    float *p;
    double *l, *kd;
} qk_scratch;

/* The group's logits over logical slots 0 .. n-1 into s->l: each slot's K
 * widened once, then every query's dot product in the oracle's order (d
 * ascending, in double), so sharing the load changes no bit. */
static lkv_status logits(const qk_view *v, const k_row *r, const qk_group *g, qk_scratch *s)
{
    const lkv_kv_layout *kv = v->k;
    int32_t dim = kv->head_dim;
    for (int32_t j = 0; j < g->n; j++) {
        int32_t slot = r->slots ? r->slots[j] : j;
        size_t at = lkv_kv_layout_slot(kv, g->seq, slot, r->table, r->n_table);
        if (at == (size_t)-1)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: sequence %d slot %d has no block in the table (n_blocks %d)",
                            v->call, g->seq, slot, kv->n_blocks);
        for (int32_t d = 0; d < dim; d++)
            s->kd[d] = lkv_dtype_load(kv->dtype, r->base + at, (size_t)d);
        for (int32_t q = 0; q < g->per; q++) {
            const float *x = g->q + (size_t)q * (size_t)dim;
            double dot = 0.0;
            for (int32_t d = 0; d < dim; d++)
                dot += (double)x[d] * s->kd[d];
            s->l[(size_t)q * (size_t)g->stride + (size_t)j] = dot * (double)v->scale;
        }
    }
    return LKV_OK;
}

/* The engine's lse applied: each p checked against 1, the row against a sum
 * of 1. */
static lkv_status with_lse(const qk_view *v, const qk_query *x, const double *l, float *p)
{
    double lse = (double)*x->lse, sum = 0.0;
    if (!isfinite(lse))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: lse %g of sequence %d query head %d is not finite", v->call, lse,
                        x->seq, x->qh);
    for (int32_t j = 0; j < x->n; j++) {
        double e = exp(l[j] - lse);
        if (!(e <= 1.0 + lse_slack))
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: lse %g of sequence %d query head %d is below its slot %d's "
                            "logit %g: not this query's log-sum-exp",
                            v->call, lse, x->seq, x->qh, j, l[j]);
        p[j] = e > 1.0 ? 1.0f : (float)e;
        sum += e;
    }
    if (!(fabs(sum - 1.0) <= sum_slack))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: lse %g makes sequence %d query head %d's %d probabilities sum to "
                        "%g, not 1: not this query's log-sum-exp (or not its scale or K)",
                        v->call, lse, x->seq, x->qh, x->n, sum);
    return LKV_OK;
}

/* No lse: the oracle's softmax of the logits (max, then the double sum). */
static lkv_status normalised(const qk_view *v, const qk_query *x, double *l, float *p)
{
    double m = -INFINITY, z = 0.0;
    for (int32_t j = 0; j < x->n; j++)
        m = l[j] > m ? l[j] : m;
    if (!isfinite(m))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: sequence %d query head %d has a logit of %g (q or K not finite)",
                        v->call, x->seq, x->qh, m);
    for (int32_t j = 0; j < x->n; j++) {
        l[j] = exp(l[j] - m);
        z += l[j];
    }
    for (int32_t j = 0; j < x->n; j++)
        p[j] = (float)(l[j] / z);
    return LKV_OK;
}

/* The group's probabilities into its rows. */
static lkv_status recompute(const qk_view *v, const k_row *r, const qk_group *g, qk_scratch *s)
{
    lkv_status st = logits(v, r, g, s);
    for (int32_t q = 0; q < g->per && st == LKV_OK; q++) {
        qk_query x = {g->q + (size_t)q * (size_t)v->k->head_dim, g->lse ? g->lse + q : NULL,
                      g->seq, g->qh + q, g->n};
        double *l = s->l + (size_t)q * (size_t)g->stride;
        float *p = g->p + (size_t)q * (size_t)g->stride;
        st = x.lse ? with_lse(v, &x, l, p) : normalised(v, &x, l, p);
    }
    return st;
}

static lkv_status scratch_alloc(qk_scratch *s, const lkv_cache *c, size_t rows, int32_t stride,
                                const char *call)
{
    size_t per = (size_t)(c->cfg.q_heads / c->heads);
    s->p = malloc(sizeof(float) * rows * (size_t)stride);
    s->l = malloc(sizeof(double) * per * (size_t)stride);
    s->kd = malloc(sizeof(double) * (size_t)c->cfg.head_dim);
    if (s->p && s->l && s->kd)
        return LKV_OK;
    free(s->p);
    free(s->l);
    free(s->kd);
    return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for %zu x %d probabilities",
                    call, rows, stride);
}

static void scratch_free(qk_scratch *s)
{
    free(s->p);
    free(s->l);
    free(s->kd);
}

/* ---- decode ------------------------------------------------------------ */

static const char *const decode_call = "lkv_cache_observe_batch_qk";

/* Every observing sequence's rows into probs [n_sequences][q_heads][stride],
 * a cache head's group of query heads at a time. */
static lkv_status decode_rows(const lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io,
                              const qk_view *v, qk_scratch *s, int32_t stride)
{
    int32_t qh_n = c->cfg.q_heads, dim = c->cfg.head_dim, per = qh_n / c->heads;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t seq = io->sequences[i], n = c->seqs[seq].len[layer] + 1;
        if (!lkv_engine_observes(c, seq, layer))
            continue;
        for (int32_t h = 0; h < c->heads; h++) {
            k_row r;
            size_t row = (size_t)i * (size_t)qh_n + (size_t)(h * per);
            qk_group g = {io->q + row * (size_t)dim, io->lse ? io->lse + row : NULL,
                          s->p + row * (size_t)stride, per, stride, seq, h * per, n};
            lkv_status st = k_row_of(v, layer, seq, h, n, &r);
            if (st == LKV_OK)
                st = recompute(v, &r, &g, s);
            if (st != LKV_OK)
                return st;
        }
    }
    return LKV_OK;
}

/* The longest row any observing sequence attends; 0 when none observes. */
static int32_t decode_width(const lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io)
{
    int32_t w = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t seq = io->sequences[i], n = c->seqs[seq].len[layer] + 1;
        if (lkv_engine_observes(c, seq, layer) && n > w)
            w = n;
    }
    return w;
}

/* What both qk calls check of their arrays before they recompute: where
 * they are (host or device memory), then the view (check_view). */
static lkv_status check_arrays(const lkv_cache *c, int32_t layer, const qk_view *v,
                               lkv_memory memory)
{
    lkv_status st = lkv_check_memory(c, memory, v->call);
    return st == LKV_OK
               ? check_view(c, layer, v, memory == LKV_MEMORY_DEVICE ? 0 : LKV_LAYOUT_K)
               : st;
}

/* ---- device memory ---------------------------------------------------- */

/* What a call on device arrays hands over: q and lse with `tokens` rows of
 * q_heads queries each, and the layers' K. */
typedef struct qk_device {
    lkv_device_array q, lse;
    const lkv_device_array *k; /* [kv->layers] */
    const lkv_kv_layout *kv;
    const lkv_slot_map *map; /* NULL: K at the layout's slots */
    float scale;
    size_t tokens;
    const char *call;
} qk_device;

/* The query rows of one device call, as qk_probs takes them (lse_at is
 * q_row: a query's lse sits at its own row), and how far into the layer's
 * K they reach. With a slot map the kernels read K through `flat`, a table
 * of blocks of one slot: row (listed sequence i, cache head h) at i * heads
 * + h holds each logical slot's word offset from the head's base, found
 * once per row from the map's row and block table (flat_done: 1 once
 * filled). */
typedef struct qk_rows {
    int32_t n;
    int32_t *q_row, *out_row, *len, *tab_row;
    uint32_t *base;
    uint64_t extent; /* bytes */
    int32_t *flat;
    unsigned char *flat_done;
    int32_t flat_rows, width;
} qk_rows;

static void rows_free(qk_rows *r)
{
    free(r->q_row), free(r->out_row), free(r->len), free(r->tab_row), free(r->base);
    free(r->flat), free(r->flat_done);
}

/* Room for n query rows; with a map, for `seqs` listed sequences' flat rows
 * of `width` slots. */
static lkv_status rows_alloc(qk_rows *r, size_t n, const qk_device *d, int32_t heads,
                             int32_t seqs, int32_t width)
{
    n = n ? n : 1;
    *r = (qk_rows){0,
                   malloc(sizeof(int32_t) * n),
                   malloc(sizeof(int32_t) * n),
                   malloc(sizeof(int32_t) * n),
                   malloc(sizeof(int32_t) * n),
                   malloc(sizeof(uint32_t) * n),
                   0, NULL, NULL, 0, width};
    if (d->map) {
        r->flat_rows = seqs * heads;
        r->flat = malloc(sizeof(int32_t) * ((size_t)r->flat_rows * (size_t)width + 1));
        r->flat_done = calloc((size_t)r->flat_rows + 1, 1);
    }
    if (r->q_row && r->out_row && r->len && r->tab_row && r->base &&
        (!d->map || (r->flat && r->flat_done)))
        return LKV_OK;
    rows_free(r);
    return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for %zu rows", d->call, n);
}

/* Flat row f: the word offsets of the `live` slots of (seq, layer, head)
 * through the map (map_row's rule), and how far into the layer's K they
 * reach. */
static lkv_status flat_row(const qk_device *d, qk_rows *r, int32_t f, int32_t seq, int32_t layer,
                           int32_t head, int32_t live)
{
    const lkv_kv_layout *kv = d->kv;
    k_row m;
    lkv_status st = map_row(d->map, d->call, seq, layer, head, live, &m);
    if (st != LKV_OK)
        return st;
    uint64_t head_at = (uint64_t)head * kv->head_stride;
    uint64_t span = (uint64_t)kv->head_dim * lkv_dtype_size(kv->dtype);
    int32_t *out = r->flat + (size_t)f * (size_t)r->width;
    for (int32_t j = 0; j < live; j++) {
        size_t at = lkv_kv_layout_slot(kv, seq, m.slots[j], m.table, m.n_table);
        if (at == (size_t)-1)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d slot %d (physical %d) has no "
                            "block in the slot map's table", d->call, seq, j, m.slots[j]);
        /* word offsets in int32: the layer's K up to 8 GiB from a head */
        if (at / 4 > (size_t)INT32_MAX)
            return lkv_fail(LKV_UNSUPPORTED, "%s: sequence %d slot %d lies at byte %zu of layer "
                            "%d's K, beyond the 8 GiB a slot map's device rows reach",
                            d->call, seq, j, at, layer);
        out[j] = (int32_t)(at / 4);
        uint64_t end = head_at + (uint64_t)at + span;
        r->extent = end > r->extent ? end : r->extent;
    }
    r->flat_done[f] = 1;
    return LKV_OK;
}

/* Query head qh of listed sequence i (seq, `live` slots held) over slots
 * 0 .. len-1: q and lse row q_row, probabilities row out_row. With a map
 * the row reads K through the sequence's flat row of the cache head. */
static lkv_status add_row(const lkv_cache *c, int32_t layer, const qk_device *d, qk_rows *r,
                          int32_t i, int32_t seq, int32_t live, int32_t qh, int32_t q_row,
                          int32_t out_row, int32_t len)
{
    const lkv_kv_layout *kv = d->kv;
    if (seq >= kv->sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d is outside the layout's %d",
                        d->call, seq, kv->sequences);
    int32_t head = qh / (c->cfg.q_heads / c->heads), tab_row = seq;
    uint64_t base = 0, reach = 0;
    if (d->map) {
        tab_row = i * c->heads + head;
        lkv_status st = r->flat_done[tab_row] ? LKV_OK
                                              : flat_row(d, r, tab_row, seq, layer, head, live);
        if (st != LKV_OK)
            return st;
        base = (uint64_t)head * kv->head_stride;
    } else {
        int32_t missing = lkv_kv_layout_row(kv, seq, head, len, &base, &reach);
        if (missing >= 0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: sequence %d slot %d has no block in the table (n_blocks %d)",
                            d->call, seq, missing, kv->n_blocks);
        if (reach > ((uint64_t)1 << 34))
            return lkv_fail(LKV_UNSUPPORTED, "%s: sequence %d reaches byte %llu of layer %d's "
                            "K, beyond the 16 GiB one call reads", d->call, seq,
                            (unsigned long long)reach, layer);
    }
    int32_t k = r->n++;
    r->q_row[k] = q_row;
    r->out_row[k] = out_row;
    r->len[k] = len;
    r->tab_row[k] = tab_row;
    r->base[k] = (uint32_t)(base / 4);
    r->extent = reach > r->extent ? reach : r->extent;
    return LKV_OK;
}

static lkv_status check_device(const lkv_cache *c, int32_t layer, const qk_device *d)
{
    if (!c->ops->qk_probs || !c->ops->reduce_rows)
        return lkv_fail(LKV_UNSUPPORTED, "%s: backend %s cannot recompute probabilities from "
                        "device memory", d->call, c->ops->name);
    if (!d->q.handle || !d->lse.handle || !d->k || !d->k[layer].handle)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: device memory needs q_dev, lse_dev (lazykv does not normalise on "
                        "the device) and k_dev[%d]: %s is missing", d->call, layer,
                        !d->q.handle ? "q_dev" : !d->lse.handle ? "lse_dev"
                                                : !d->k ? "k_dev" : "k_dev[layer]");
    return lkv_kv_layout_check_words(d->kv, d->call);
}

/* The arrays checked and room for `rows` query rows listed, of `seqs`
 * sequences at most `width` slots long. */
static lkv_status begin_device(const lkv_cache *c, int32_t layer, const qk_device *d, size_t rows,
                               int32_t seqs, int32_t width, qk_rows *r)
{
    lkv_status st = check_device(c, layer, d);
    return st == LKV_OK ? rows_alloc(r, rows, d, c->heads, seqs, width) : st;
}

/* The rows' probabilities recomputed into c->stage_p (rows of `stride`,
 * `out_rows` of them), through views of the engine's arrays. */
static lkv_status run_device(lkv_cache *c, int32_t layer, const qk_device *d, const qk_rows *r,
                             size_t out_rows, int32_t stride)
{
    size_t q_rows = d->tokens * (size_t)c->cfg.q_heads;
    lkv_buffer *views[3] = {NULL, NULL, NULL};
    lkv_status st = c->ops->wrap(c->dev, d->q.handle, d->q.offset,
                                 q_rows * (size_t)c->cfg.head_dim * 4, &views[0]);
    if (st == LKV_OK)
        st = c->ops->wrap(c->dev, d->lse.handle, d->lse.offset, q_rows * 4, &views[1]);
    if (st == LKV_OK)
        st = c->ops->wrap(c->dev, d->k[layer].handle, d->k[layer].offset, (size_t)r->extent,
                          &views[2]);
    if (st == LKV_OK)
        st = lkv_stage_reserve(c, &c->stage_p, out_rows * (size_t)stride * 4);
    const lkv_kv_layout *kv = d->kv;
    lkv_qk_probs_args a = {
        .n = r->n, .q_row = r->q_row, .lse_at = r->q_row, .len = r->len, .out_row = r->out_row,
        .q = views[0], .lse = views[1], .k = views[2], .probs = c->stage_p.buf,
        .dtype = kv->dtype, .dim = kv->head_dim, .stride = stride, .scale = d->scale,
        .slots = lkv_kv_layout_slots(kv, r->base, r->tab_row),
    };
    if (d->map) /* blocks of one slot, whose "block" is its word offset */
        a.slots = (lkv_engine_slots){.base = r->base, .tab_row = r->tab_row, .slot_stride = 0,
                                     .block_stride = 1, .block_size = 1, .table = r->flat,
                                     .table_rows = r->flat_rows, .max_blocks = r->width};
    if (st == LKV_OK)
        st = c->ops->qk_probs(c->dev, &a);
    for (int i = 0; i < 3; i++)
        if (views[i])
            c->ops->free(c->dev, views[i]);
    return st;
}

/* A decode step's probabilities recomputed into c->stage_p ([n_sequences]
 * [q_heads][stride]), then observed as device rows per query head. */
static lkv_status decode_device(lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io,
                                int32_t stride)
{
    qk_device d = {io->q_dev, io->lse_dev, io->k_dev, io->k, io->map, io->scale,
                   (size_t)io->n_sequences, decode_call};
    int32_t qh_n = c->cfg.q_heads;
    size_t rows = (size_t)io->n_sequences * (size_t)qh_n;
    qk_rows r;
    lkv_status st = begin_device(c, layer, &d, rows, io->n_sequences, stride, &r);
    if (st != LKV_OK)
        return st;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
        int32_t seq = io->sequences[i], n = c->seqs[seq].len[layer] + 1;
        if (!lkv_engine_observes(c, seq, layer))
            continue;
        for (int32_t qh = 0; qh < qh_n && st == LKV_OK; qh++)
            st = add_row(c, layer, &d, &r, i, seq, n, qh, i * qh_n + qh, i * qh_n + qh, n);
    }
    if (st == LKV_OK)
        st = run_device(c, layer, &d, &r, rows, stride);
    lkv_observe_batch_io b = {.n_sequences = io->n_sequences, .sequences = io->sequences,
                              .stride = stride};
    if (st == LKV_OK)
        st = lkv_engine_observe_checked(c, layer, &b, c->stage_p.buf, decode_call);
    rows_free(&r);
    return st;
}

lkv_status lkv_cache_observe_batch_qk(lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io)
{
    lkv_clear_error();
    lkv_status st = lkv_cache_join(c);
    if (st == LKV_OK)
        st = lkv_engine_check(c, io, layer, io ? io->sequences : NULL, io ? io->n_sequences : 0,
                              decode_call);
    if (st != LKV_OK)
        return st;
    int32_t stride = decode_width(c, layer, io);
    lkv_observe_batch_io b = {.n_sequences = io->n_sequences, .sequences = io->sequences,
                              .stride = stride};
    if (stride == 0)
        return lkv_engine_observe(c, layer, &b, decode_call);
    qk_view v = {io->q, io->lse, io->scale, io->k, io->map, decode_call};
    st = check_arrays(c, layer, &v, io->memory);
    if (st != LKV_OK)
        return st;
    if (io->memory == LKV_MEMORY_DEVICE)
        return decode_device(c, layer, io, stride);
    qk_scratch s;
    if (st == LKV_OK)
        st = scratch_alloc(&s, c, (size_t)io->n_sequences * (size_t)c->cfg.q_heads, stride,
                           decode_call);
    if (st != LKV_OK)
        return st;
    st = decode_rows(c, layer, io, &v, &s, stride);
    b.probs = s.p;
    if (st == LKV_OK)
        st = lkv_engine_observe(c, layer, &b, decode_call);
    scratch_free(&s);
    return st;
}

/* ---- prompt ------------------------------------------------------------ */

static const char *const prompt_call = "lkv_cache_observe_prompt_qk";

/* The voters of every listed prompt, as lkv_cache_prompt_voters says. */
typedef struct prompt_votes {
    int32_t rows;   /* voting queries over all sequences */
    int32_t stride; /* the longest voting prompt; 0 when none votes */
} prompt_votes;

static lkv_status count_votes(const lkv_cache *c, const lkv_observe_prompt_qk_io *io,
                              prompt_votes *out)
{
    *out = (prompt_votes){0, 0};
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t n = io->n_tokens[i], first = n;
        lkv_status st = lkv_cache_prompt_voters(c, n, &first, NULL, NULL);
        if (st != LKV_OK)
            return st;
        out->rows += n - first;
        if (first < n && n > out->stride)
            out->stride = n;
    }
    return LKV_OK;
}

/* The votes of sequence i's voters into their rows of s->p, from its
 * queries at packed token `at`. */
static lkv_status prompt_rows(const lkv_cache *c, int32_t layer, const lkv_observe_prompt_qk_io *io,
                              const qk_view *v, qk_scratch *s, int32_t stride, int32_t i,
                              size_t at, size_t *vote)
{
    int32_t qh_n = c->cfg.q_heads, dim = c->cfg.head_dim, n = io->n_tokens[i];
    int32_t seq = io->sequences[i], first = n, causal = 0;
    lkv_status st = lkv_cache_prompt_voters(c, n, &first, &causal, NULL);
    int32_t per = qh_n / c->heads;
    for (int32_t a = first; st == LKV_OK && a < n; a++, (*vote)++)
        for (int32_t h = 0; st == LKV_OK && h < c->heads; h++) {
            k_row r;
            size_t token = (at + (size_t)a) * (size_t)qh_n + (size_t)(h * per);
            size_t row = *vote * (size_t)qh_n + (size_t)(h * per);
            qk_group g = {io->q + token * (size_t)dim, io->lse ? io->lse + token : NULL,
                          s->p + row * (size_t)stride, per, stride, seq, h * per,
                          causal ? a + 1 : n};
            st = k_row_of(v, layer, seq, h, n, &r);
            if (st == LKV_OK)
                st = recompute(v, &r, &g, s);
        }
    return st;
}

/* Every voter's probabilities recomputed into c->stage_p in one dispatch
 * ([votes][q_heads][stride], the host path's rows), then the prompt as
 * lkv_cache_observe_prompt takes it with those votes in device memory. */
static lkv_status prompt_device(lkv_cache *c, int32_t layer, const lkv_observe_prompt_qk_io *io,
                                const prompt_votes *pv, lkv_observe_prompt_io *b)
{
    size_t tokens = 0;
    for (int32_t i = 0; i < io->n_sequences; i++)
        tokens += (size_t)io->n_tokens[i];
    qk_device d = {io->q_dev, io->lse_dev, io->k_dev, io->k, io->map, io->scale, tokens,
                   prompt_call};
    int32_t qh_n = c->cfg.q_heads;
    size_t rows = (size_t)pv->rows * (size_t)qh_n;
    qk_rows r;
    lkv_status st = begin_device(c, layer, &d, rows, io->n_sequences, pv->stride, &r);
    if (st != LKV_OK)
        return st;
    int32_t at = 0, vote = 0;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; at += io->n_tokens[i], i++) {
        int32_t n = io->n_tokens[i], first = n, causal = 0;
        st = lkv_cache_prompt_voters(c, n, &first, &causal, NULL);
        for (int32_t a = first; a < n && st == LKV_OK; a++, vote++)
            for (int32_t qh = 0; qh < qh_n && st == LKV_OK; qh++)
                st = add_row(c, layer, &d, &r, i, io->sequences[i], n, qh, (at + a) * qh_n + qh,
                             vote * qh_n + qh, causal ? a + 1 : n);
    }
    if (st == LKV_OK)
        st = run_device(c, layer, &d, &r, rows, pv->stride);
    if (st == LKV_OK)
        st = lkv_engine_prompt_given(c, layer, b, c->stage_p.buf, prompt_call);
    rows_free(&r);
    return st;
}

lkv_status lkv_cache_observe_prompt_qk(lkv_cache *c, int32_t layer,
                                       const lkv_observe_prompt_qk_io *io)
{
    lkv_clear_error();
    lkv_status st = lkv_cache_join(c);
    if (st == LKV_OK)
        st = lkv_engine_check_prompt(c, io, layer, io ? io->sequences : NULL,
                                     io ? io->n_sequences : 0, io ? io->n_tokens : NULL,
                                     prompt_call);
    prompt_votes pv;
    if (st == LKV_OK)
        st = count_votes(c, io, &pv);
    if (st != LKV_OK)
        return st;
    lkv_observe_prompt_io b = {io->n_sequences, io->sequences, io->n_tokens, io->first_position,
                               NULL, pv.stride};
    if (pv.rows == 0)
        return lkv_engine_prompt(c, layer, &b, prompt_call);
    qk_view v = {io->q, io->lse, io->scale, io->k, io->map, prompt_call};
    st = check_arrays(c, layer, &v, io->memory);
    if (st != LKV_OK)
        return st;
    if (io->memory == LKV_MEMORY_DEVICE)
        return prompt_device(c, layer, io, &pv, &b);
    qk_scratch s;
    if (st == LKV_OK)
        st = scratch_alloc(&s, c, (size_t)pv.rows * (size_t)c->cfg.q_heads, pv.stride, prompt_call);
    if (st != LKV_OK)
        return st;
    size_t at = 0, vote = 0;
    for (int32_t i = 0; st == LKV_OK && i < io->n_sequences; at += (size_t)io->n_tokens[i], i++)
        st = prompt_rows(c, layer, io, &v, &s, pv.stride, i, at, &vote);
    b.votes = s.p;
    if (st == LKV_OK)
        st = lkv_engine_prompt(c, layer, &b, prompt_call);
    scratch_free(&s);
    return st;
}
