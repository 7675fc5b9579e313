/* lkv_cache_observe_batch_qk: the probabilities an engine's fused attention
 * did not keep, recomputed from its queries, its K read in place and its
 * log-sum-exp; from there the step is lkv_cache_observe_batch's. The logits
 * are the oracle's (backends/ref attend: a double dot product, times the
 * scale), so only the engine's lse, rounded to f32, separates these
 * probabilities from the ones it would have normalised itself. Host memory,
 * one thread, scratch for one call: nothing of the cache changes until the
 * probabilities all check. */
#include <math.h>
#include <stdlib.h>

#include "cache.h"
#include "dtype.h"
#include "error.h"
#include "kv_layout.h"

static const char *const call = "lkv_cache_observe_batch_qk";

/* How far above 1 an exponent may land before its lse is called wrong: the
 * f32 rounding of a denominator a single slot dominates. */
static const double lse_slack = 1e-5;

/* How far from 1 a row's probabilities may sum. Every slot the step attends
 * is recomputed, so the sum is free and catches an lse, scale or K view that
 * is not the engine's (an lse off by 1 puts it at e or 1/e) where the bound
 * above cannot; 1e-3 leaves room for an engine that rounds q or accumulates
 * its logits in another order. */
static const double sum_slack = 1e-3;

/* Where the K of one (sequence, layer, cache head) row is. */
typedef struct k_row {
    const unsigned char *base; /* the layer's K plus the head's offset */
    const int32_t *slots;      /* physical slot of logical slot j; NULL: j */
    const int32_t *table;      /* block table; NULL: the layout's */
    int32_t n_table;
} k_row;

static lkv_status check_map(const lkv_cache *c, const lkv_observe_qk_io *io)
{
    lkv_slot_map_config m;
    lkv_status st = lkv_slot_map_get_config(io->map, &m);
    if (st != LKV_OK)
        return st;
    if (m.sequences != c->cfg.sequences || m.layers != c->cfg.layers || m.heads != c->heads ||
        m.block_size != io->k->block_size)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the slot map's %d sequences x %d layers x %d heads in blocks of %d "
                        "do not match the cache's %d x %d x %d and the layout's blocks of %d",
                        call, m.sequences, m.layers, m.heads, m.block_size, c->cfg.sequences,
                        c->cfg.layers, c->heads, io->k->block_size);
    return LKV_OK;
}

static lkv_status check_layout(const lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io)
{
    const lkv_kv_layout *kv = io->k;
    if (!io->q || !io->lse || !kv)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL, but policy %s observes this step",
                        call, !io->q ? "q" : !io->lse ? "lse" : "k", c->rules->name);
    if (!(io->scale > 0.0f) || !isfinite(io->scale))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: scale %g must be finite and > 0", call,
                        (double)io->scale);
    lkv_status st = lkv_kv_layout_check(kv, 0, call);
    if (st != LKV_OK)
        return st;
    if (kv->head_dim != c->cfg.head_dim || kv->heads != c->heads || kv->layers <= layer)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the layout's head_dim %d, heads %d, layers %d do not hold the "
                        "cache's head_dim %d, heads %d and layer %d",
                        call, kv->head_dim, kv->heads, kv->layers, c->cfg.head_dim, c->heads,
                        layer);
    if (io->map && kv->block_size < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: a slot map needs a paged layout (block_size "
                        "%d)", call, kv->block_size);
    return io->map ? check_map(c, io) : LKV_OK;
}

/* Row (seq, head) of the layer as the layout and map place it; its live
 * count must be the n slots the step attends. */
static lkv_status k_row_of(const lkv_observe_qk_io *io, int32_t layer, int32_t seq, int32_t head,
                           int32_t n, k_row *out)
{
    const lkv_kv_layout *kv = io->k;
    *out = (k_row){(const unsigned char *)kv->k_layers[layer] + (size_t)head * kv->head_stride,
                   NULL, NULL, 0};
    if (seq >= kv->sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d is outside the layout's %d", call,
                        seq, kv->sequences);
    if (!io->map)
        return LKV_OK;
    int32_t live = 0;
    lkv_status st = lkv_slot_map_row(io->map, seq, layer, head, &out->slots, &live);
    if (st == LKV_OK)
        st = lkv_slot_map_table(io->map, seq, &out->table, &out->n_table);
    if (st == LKV_OK && live != n)
        st = lkv_fail(LKV_INVALID_ARGUMENT,
                      "%s: the slot map's row (sequence %d, layer %d, head %d) holds %d slots; "
                      "the step attends %d (place the new token first)",
                      call, seq, layer, head, live, n);
    return st;
}

/* One query head's n probabilities into p. */
static lkv_status recompute(const lkv_observe_qk_io *io, const k_row *r, const float *q,
                            float lse, int32_t n, float *p, int32_t seq, int32_t qh)
{
    const lkv_kv_layout *kv = io->k;
    double sum = 0.0;
    if (!isfinite(lse))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: lse %g of sequence %d query head %d is not "
                        "finite", call, (double)lse, seq, qh);
    for (int32_t j = 0; j < n; j++) {
        int32_t slot = r->slots ? r->slots[j] : j;
        size_t at = lkv_kv_layout_slot(kv, seq, slot, r->table, r->n_table);
        if (at == (size_t)-1)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: sequence %d slot %d has no block in the table (n_blocks %d)",
                            call, seq, slot, kv->n_blocks);
        double dot = 0.0;
        for (int32_t d = 0; d < kv->head_dim; d++)
            dot += (double)q[d] * lkv_dtype_load(kv->dtype, r->base + at, (size_t)d);
        double e = exp(dot * (double)io->scale - (double)lse);
        if (!(e <= 1.0 + lse_slack))
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: lse %g of sequence %d query head %d is below its slot %d's "
                            "logit %g: not the step's log-sum-exp",
                            call, (double)lse, seq, qh, j, dot * (double)io->scale);
        p[j] = e > 1.0 ? 1.0f : (float)e;
        sum += e;
    }
    if (!(fabs(sum - 1.0) <= sum_slack))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: lse %g makes sequence %d query head %d's %d probabilities sum to "
                        "%g, not 1: not the step's log-sum-exp (or not its scale or K)",
                        call, (double)lse, seq, qh, n, sum);
    return LKV_OK;
}

/* Every observing sequence's rows into probs [n_sequences][q_heads][stride]. */
static lkv_status recompute_all(const lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io,
                                float *probs, int32_t stride)
{
    int32_t qh_n = c->cfg.q_heads, dim = c->cfg.head_dim;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t seq = io->sequences[i], n = c->seqs[seq].len[layer] + 1;
        if (!lkv_engine_observes(c, seq, layer))
            continue;
        for (int32_t qh = 0; qh < qh_n; qh++) {
            k_row r;
            size_t row = (size_t)i * (size_t)qh_n + (size_t)qh;
            lkv_status st = k_row_of(io, layer, seq, qh * c->heads / qh_n, n, &r);
            if (st == LKV_OK)
                st = recompute(io, &r, io->q + row * (size_t)dim, io->lse[row], n,
                               probs + row * (size_t)stride, seq, qh);
            if (st != LKV_OK)
                return st;
        }
    }
    return LKV_OK;
}

/* The longest row any observing sequence attends; 0 when none observes. */
static int32_t widest(const lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io)
{
    int32_t w = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t seq = io->sequences[i], n = c->seqs[seq].len[layer] + 1;
        if (lkv_engine_observes(c, seq, layer) && n > w)
            w = n;
    }
    return w;
}

lkv_status lkv_cache_observe_batch_qk(lkv_cache *c, int32_t layer, const lkv_observe_qk_io *io)
{
    lkv_clear_error();
    lkv_status st = lkv_cache_join(c);
    if (st == LKV_OK)
        st = lkv_engine_check(c, io, layer, io ? io->sequences : NULL, io ? io->n_sequences : 0,
                              call);
    if (st != LKV_OK)
        return st;
    int32_t stride = widest(c, layer, io);
    lkv_observe_batch_io b = {io->n_sequences, io->sequences, NULL, stride};
    if (stride == 0)
        return lkv_engine_observe(c, layer, &b, call);
    st = check_layout(c, layer, io);
    if (st != LKV_OK)
        return st;
    float *probs = malloc(sizeof(float) * (size_t)io->n_sequences * (size_t)c->cfg.q_heads *
                          (size_t)stride);
    if (!probs)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for %d x %d probabilities",
                        call, io->n_sequences * c->cfg.q_heads, stride);
    st = recompute_all(c, layer, io, probs, stride);
    b.probs = probs;
    if (st == LKV_OK)
        st = lkv_engine_observe(c, layer, &b, call);
    free(probs);
    return st;
}
