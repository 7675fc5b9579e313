/* The primitives a batch call is made of: store the new K/V, attend, observe,
 * each one dispatch for the whole batch. The per-row write path is kept for
 * a backend without a store op (host inputs only). */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "dtype.h"
#include "error.h"
#include "pages.h"

/* K or V of `count` tokens for one cache head, in the storage type. */
static void gather_head(const lkv_cache *c, const float *src, int32_t count, int32_t kv_head,
                        unsigned char *dst)
{
    int32_t d = c->cfg.head_dim;
    for (int32_t t = 0; t < count; t++) {
        const float *x = src + ((size_t)t * (size_t)c->cfg.kv_heads + (size_t)kv_head) * (size_t)d;
        unsigned char *row = dst + (size_t)t * (size_t)d * lkv_dtype_size(c->cfg.dtype);
        for (int32_t i = 0; i < d; i++)
            lkv_dtype_store(c->cfg.dtype, row, (size_t)i, x[i]);
    }
}

static lkv_status write_head(lkv_cache *c, int32_t e, int32_t h, const float *k, const float *v,
                             unsigned char *kv, int32_t *meta)
{
    const lkv_batch_lists *l = &c->lists;
    int32_t count = l->count[e], row = l->row0[e] + h;
    int32_t kv_head = h * c->cfg.kv_heads / c->heads;
    size_t elem = lkv_dtype_size(c->cfg.dtype), d = (size_t)c->cfg.head_dim;
    size_t kv_bytes = (size_t)count * d * elem, width = (size_t)c->cfg.kv_heads * d;
    size_t slot0 = (size_t)row * (size_t)c->cfg.capacity + (size_t)l->slot0[e];
    size_t kv_off = slot0 * d * elem, meta_off = slot0 * 4, src = (size_t)l->src_token[e] * width;
    int32_t *pos = meta, *last = meta + count, *zero = meta + 2 * count;
    for (int32_t i = 0; i < count; i++) {
        pos[i] = l->position0[e] + i;
        last[i] = l->last_init[e];
        zero[i] = 0; /* doubles as 0.0f for state_f */
    }
    gather_head(c, k + src, count, kv_head, kv);
    lkv_status st = c->ops->write(c->dev, c->buf.k, kv_off, kv, kv_bytes);
    gather_head(c, v + src, count, kv_head, kv);
    if (st == LKV_OK)
        st = c->ops->write(c->dev, c->buf.v, kv_off, kv, kv_bytes);
    lkv_buffer *metas[] = {c->buf.pos, c->buf.state_a, c->buf.state_b, c->buf.state_f};
    const int32_t *values[] = {pos, last, zero, zero};
    for (int i = 0; i < 4 && st == LKV_OK; i++)
        st = c->ops->write(c->dev, metas[i], meta_off, values[i], (size_t)count * 4);
    return st;
}

/* A backend without store: every head of every entry written from the host. */
static lkv_status store_by_rows(lkv_cache *c, int32_t n, const float *k, const float *v)
{
    if (!k || !v)
        return lkv_fail(LKV_UNSUPPORTED, "backend %s has no store op for device inputs",
                        c->ops->name);
    int32_t most = 1;
    for (int32_t e = 0; e < n; e++)
        most = c->lists.count[e] > most ? c->lists.count[e] : most;
    unsigned char *kv = malloc((size_t)most * (size_t)c->cfg.head_dim * 4);
    int32_t *meta = malloc(sizeof(int32_t) * 3 * (size_t)most);
    lkv_status st = kv && meta ? LKV_OK
                               : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory storing %d tokens",
                                          most);
    for (int32_t e = 0; e < n && st == LKV_OK; e++)
        for (int32_t h = 0; h < c->heads && st == LKV_OK; h++)
            st = write_head(c, e, h, k, v, kv, meta);
    free(kv);
    free(meta);
    return st;
}

lkv_status lkv_cache_store(lkv_cache *c, const int32_t *seqs, int32_t n, int32_t layer,
                           const lkv_buffer *k, const lkv_buffer *v, const float *host_k,
                           const float *host_v)
{
    lkv_batch_lists *l = &c->lists;
    for (int32_t e = 0; e < n; e++) {
        const lkv_sequence *s = &c->seqs[seqs[e]];
        l->row0[e] = lkv_row_of(c, seqs[e], layer, 0);
        l->slot0[e] = s->len[layer];
        l->position0[e] = s->next_position;
    }
    lkv_status st = lkv_pages_prepare(c, seqs, l->count, n, layer);
    if (st != LKV_OK)
        return st;
    if (c->ops->store) {
        lkv_store_args a = {
            .cache = &c->buf, .n_entries = n, .row0 = l->row0, .slot0 = l->slot0,
            .count = l->count, .src_token = l->src_token, .position0 = l->position0,
            .last_init = l->last_init, .cache_heads = c->heads, .kv_heads = c->cfg.kv_heads,
            .k = k, .v = v,
        };
        st = c->ops->store(c->dev, &a);
    } else {
        st = store_by_rows(c, n, host_k, host_v);
    }
    if (st != LKV_OK)
        return st;
    for (int32_t e = 0; e < n; e++) {
        c->seqs[seqs[e]].len[layer] += l->count[e];
        c->stats.slots_in_use += (int64_t)l->count[e] * c->heads;
    }
    if (c->stats.slots_in_use > c->stats.peak_slots)
        c->stats.peak_slots = c->stats.slots_in_use;
    return LKV_OK;
}

lkv_status lkv_cache_take_input(lkv_cache *c, int device, lkv_device_array a, const float *host,
                                lkv_stage *stage, size_t bytes, int upload, lkv_buffer **view,
                                const lkv_buffer **out)
{
    if (device) {
        lkv_status st = a.handle ? c->ops->wrap(c->dev, a.handle, a.offset, bytes, view) : LKV_OK;
        *out = *view;
        return st;
    }
    if (!host)
        return LKV_OK;
    lkv_status st = lkv_stage_reserve(c, stage, bytes);
    if (st == LKV_OK && upload)
        st = c->ops->write(c->dev, stage->buf, 0, host, bytes);
    *out = stage->buf;
    return st;
}

void lkv_cache_release_inputs(lkv_cache *c, lkv_inputs *in)
{
    for (int i = 0; i < 4; i++)
        if (in->views[i])
            c->ops->free(c->dev, in->views[i]);
}

int lkv_observes_at(const lkv_cache *c, int32_t t, lkv_observe_kind *out_kind)
{
    *out_kind = c->rules->observe_kind;
    return c->rules->observe_at ? c->rules->observe_at(&c->cfg.policy, t, out_kind)
                                : c->rules->observes;
}

lkv_status lkv_cache_attend(lkv_cache *c, int32_t n_groups, const lkv_buffer *q, lkv_buffer *out,
                            int want_probs, const lkv_attend_observe *observe)
{
    if (!c->ops->attend)
        return lkv_fail(LKV_UNSUPPORTED, "backend %s has no attend op", c->ops->name);
    lkv_attend_args a = {
        .cache = &c->buf, .n_groups = n_groups, .group_row0 = c->lists.row0,
        .group_n = c->lists.group_n, .cache_heads = c->heads, .q_heads = c->cfg.q_heads,
        .scale = c->scale, .reduce = c->cfg.policy.group_reduce, .q = q, .out = out,
        .probs = want_probs ? c->probs : NULL, .observe = observe,
    };
    return c->ops->attend(c->dev, &a);
}

lkv_status lkv_cache_attend_observe(lkv_cache *c, int32_t n_groups, const lkv_buffer *q,
                                    lkv_buffer *out, const int32_t *seqs, const int32_t *steps,
                                    int32_t layer, lkv_observe_kind kind)
{
    if (c->ops->attend_observes) {
        lkv_attend_observe o = {.kind = kind, .alpha = c->cfg.policy.alpha, .group_t = steps};
        return lkv_cache_attend(c, n_groups, q, out, 0, &o);
    }
    lkv_status st = lkv_cache_attend(c, n_groups, q, out, 1, NULL);
    return st == LKV_OK
               ? lkv_cache_observe(c, seqs, steps, c->lists.group_n, n_groups, layer, kind)
               : st;
}

static lkv_status observe_rows(lkv_cache *c, int32_t rows, lkv_observe_kind kind, int32_t t,
                               int per_row)
{
    lkv_observe_args a = {
        .cache = &c->buf, .n_rows = rows, .rows = c->rows, .row_n = c->row_n,
        .probs = c->probs, .kind = kind, .t = t, .row_t = per_row ? c->row_t : NULL,
        .alpha = c->cfg.policy.alpha,
    };
    return c->ops->observe(c->dev, &a);
}

lkv_status lkv_cache_observe(lkv_cache *c, const int32_t *seqs, const int32_t *steps,
                             const int32_t *ns, int32_t n, int32_t layer, lkv_observe_kind kind)
{
    if (!c->ops->observe)
        return lkv_fail(LKV_UNSUPPORTED, "backend %s has no observe op", c->ops->name);
    /* One dispatch when the backend takes a step per row or all share one;
     * else one per distinct step, in list order. */
    int uniform = 1;
    for (int32_t i = 1; i < n; i++)
        uniform &= steps[i] == steps[0];
    int per_row = c->ops->row_steps && !uniform;
    lkv_status st = LKV_OK;
    for (int32_t first = 0; first < n && st == LKV_OK; first++) {
        int32_t rows = 0, t = steps[first];
        int taken = 0;
        for (int32_t j = 0; j < first; j++)
            taken |= !per_row && !uniform && steps[j] == t;
        if (taken)
            continue;
        for (int32_t i = first; i < n; i++) {
            if (!per_row && !uniform && steps[i] != t)
                continue;
            for (int32_t h = 0; h < c->heads; h++, rows++) {
                c->rows[rows] = lkv_row_of(c, seqs[i], layer, h);
                c->row_n[rows] = ns ? ns[i] : c->seqs[seqs[i]].len[layer];
                c->row_t[rows] = steps[i];
            }
        }
        st = observe_rows(c, rows, kind, t, per_row);
        if (per_row || uniform)
            break;
    }
    return st;
}
