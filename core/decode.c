/* A decode step of one layer for a batch of sequences: validate everything
 * first, make room on full layers (the policy's early eviction), then store,
 * attend and observe, one dispatch each for the whole batch; after the last
 * layer, hand the step of every listed sequence to the scheduler at once. A
 * per-sequence call is the batch of one. */
#include <string.h>

#include "background.h"
#include "lane.h"
#include "cache.h"
#include "error.h"
#include "pages.h"

static lkv_status check_order(const lkv_cache *c, int32_t seq, int32_t layer, int given)
{
    const lkv_sequence *s = &c->seqs[seq];
    if (s->in_prefill || s->prompt_open)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        s->in_prefill
                            ? "sequence %d is part-way through prefill (layer %d next): finish it first"
                            : "sequence %d's prompt has more chunks to come (layer %d next): send "
                              "the last one with more_chunks = 0 first",
                        seq, s->next_layer);
    if (layer != s->next_layer)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d decoded out of order: sequence %d expects layer %d at step %d",
                        layer, seq, s->next_layer, layer == 0 ? s->t + 1 : s->t);
    if (s->next_position == INT32_MAX || s->t == INT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "sequence %d has reached position %d / step %d, the int32 limit: reset it",
                        seq, s->next_position, s->t);
    lkv_evict_plan room;
    if (s->len[layer] >= c->cfg.capacity && (given || !lkv_early_plan(c, s->len[layer], &room)))
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "cache full: sequence %d layer %d holds %d slots = capacity under policy "
                        "%s, %s: raise capacity",
                        seq, layer, s->len[layer], c->rules->name,
                        given ? "and given probabilities leave no room for an early eviction (the "
                                "engine's or the trace's attention covers the cache as it stands)"
                              : "which does not evict during decode (capacity bounds the tokens "
                                "it keeps from the prompt plus every decoded token)");
    return LKV_OK;
}

static lkv_status check_arrays(const lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io,
                               int given)
{
    if (c->cfg.kv_owner == LKV_KV_ENGINE)
        return LKV_OK; /* no K/V; the engine's probabilities are checked in engine.c */
    if (io->memory == LKV_MEMORY_DEVICE) {
        const char *missing = !io->k_dev.handle ? "k_dev" : !io->v_dev.handle ? "v_dev"
                              : !io->q_dev.handle ? "q_dev" : !io->out_dev.handle ? "out_dev" : NULL;
        return missing ? lkv_fail(LKV_INVALID_ARGUMENT, "decode of layer %d: %s.handle is 0",
                                  layer, missing)
                       : LKV_OK;
    }
    if (!io->k || !io->v || (!given && (!io->q || !io->out)))
        return lkv_fail(LKV_INVALID_ARGUMENT, "decode of layer %d: %s is NULL", layer,
                        !io->k ? "k" : !io->v ? "v" : !io->q ? "q" : "out");
    size_t dq = (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    size_t dkv = (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim;
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
        int32_t seq = io->sequences[i];
        if (!given)
            st = lkv_check_input(c, io->q + (size_t)i * dq, dq, c->cfg.head_dim, "q", 0, seq, layer);
        if (st == LKV_OK)
            st = lkv_check_input(c, io->k + (size_t)i * dkv, dkv, c->cfg.head_dim, "k", 1, seq,
                                 layer);
        if (st == LKV_OK)
            st = lkv_check_input(c, io->v + (size_t)i * dkv, dkv, c->cfg.head_dim, "v", 1, seq,
                                 layer);
    }
    return st;
}

static lkv_status check_decode(lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io,
                               int given, const char *call)
{
    lkv_status st = lkv_check_batch(c, io, layer, io ? io->sequences : NULL,
                                    io ? io->n_sequences : 0, io ? io->memory : 0, call);
    if (st != LKV_OK)
        return st;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++)
        st = check_order(c, io->sequences[i], layer, given);
    return st == LKV_OK ? check_arrays(c, layer, io, given) : st;
}

/* The step's inputs: one staging write per host array, a view per device
 * array; k and v are not staged for a backend that writes rows itself. */
static lkv_status prepare_io(lkv_cache *c, const lkv_decode_batch_io *io, lkv_inputs *s)
{
    size_t n = (size_t)io->n_sequences;
    size_t qb = n * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim * 4;
    size_t kvb = n * (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim * 4;
    int dev = io->memory == LKV_MEMORY_DEVICE, kv = dev || c->ops->store;
    memset(s, 0, sizeof *s);
    if (c->cfg.kv_owner == LKV_KV_ENGINE) {
        lkv_status st = lkv_engine_zero_kv(c, io->n_sequences, &s->k);
        s->v = s->k;
        return st;
    }
    lkv_status st = LKV_OK;
    if (kv)
        st = lkv_cache_take_input(c, dev, io->k_dev, io->k, &c->stage_k, kvb, 1, &s->views[0],
                                  &s->k);
    if (st == LKV_OK && kv)
        st = lkv_cache_take_input(c, dev, io->v_dev, io->v, &c->stage_v, kvb, 1, &s->views[1],
                                  &s->v);
    if (st == LKV_OK)
        st = lkv_cache_take_input(c, dev, io->q_dev, io->q, &c->stage_q, qb, 1, &s->views[2],
                                  &s->q);
    const lkv_buffer *out = NULL;
    if (st == LKV_OK)
        st = lkv_cache_take_input(c, dev, io->out_dev, io->out, &c->stage_out, qb, 0,
                                  &s->views[3], &out);
    s->out = (lkv_buffer *)out;
    return st;
}

/* Observation of the listed sequences that observe at their step, one
 * dispatch per observe kind among them (one in practice). */
static lkv_status observe_step(lkv_cache *c, const int32_t *seqs, int32_t n, int32_t layer)
{
    lkv_status st = LKV_OK;
    for (int kind = 0; kind < 3 && st == LKV_OK; kind++) {
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            lkv_observe_kind k;
            int32_t t = c->seq_steps[i];
            if (lkv_observes_at(c, t, &k) && (int)k == kind) {
                c->lists.src_token[m] = seqs[i]; /* free after store: reused as lists */
                c->lists.slot0[m++] = t;
            }
        }
        if (m)
            st = lkv_cache_observe(c, c->lists.src_token, c->lists.slot0, NULL, m, layer,
                                   (lkv_observe_kind)kind);
    }
    return st;
}

static int any_observing(const lkv_cache *c, int32_t n)
{
    lkv_observe_kind k;
    for (int32_t i = 0; i < n; i++)
        if (lkv_observes_at(c, c->seq_steps[i], &k))
            return 1;
    return 0;
}

/* 1 when every listed sequence observes at its step, with one kind
 * (*out_kind): the batch's observe can then ride on its attend. */
static int all_observe_alike(const lkv_cache *c, int32_t n, lkv_observe_kind *out_kind)
{
    for (int32_t i = 0; i < n; i++) {
        lkv_observe_kind k;
        if (!lkv_observes_at(c, c->seq_steps[i], &k) || (i > 0 && k != *out_kind))
            return 0;
        *out_kind = k;
    }
    return n > 0;
}

/* The step's attention, and its observation where the policy observes. */
static lkv_status attend_step(lkv_cache *c, const lkv_decode_batch_io *io, int32_t layer,
                              const lkv_inputs *s, int observing)
{
    int32_t n = io->n_sequences;
    lkv_observe_kind kind;
    if (observing && all_observe_alike(c, n, &kind))
        return lkv_cache_attend_observe(c, n, s->q, s->out, io->sequences, c->seq_steps, layer,
                                        kind);
    lkv_status st = lkv_cache_attend(c, n, s->q, s->out, observing, NULL);
    return st == LKV_OK && observing ? observe_step(c, io->sequences, n, layer) : st;
}

/* Early evictions of the listed sequences whose layer is full, one batch. */
static lkv_status make_room(lkv_cache *c, const int32_t *seqs, int32_t n, int32_t layer)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (c->seqs[seqs[i]].len[layer] >= c->cfg.capacity) {
            c->lists.group_n[m] = seqs[i];
            c->lists.count[m++] = c->seq_steps[i] - 1;
        }
    return m ? lkv_schedule(c, c->lists.group_n, c->lists.count, m,
                          (lkv_layer_span){layer, c->cfg.layers}, LKV_DUE_EARLY)
             : LKV_OK;
}

static lkv_status run_step(lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io,
                           const lkv_given *given, const lkv_inputs *s)
{
    int32_t n = io->n_sequences;
    for (int32_t i = 0; i < n; i++) {
        c->lists.count[i] = 1;
        c->lists.src_token[i] = i;
        c->lists.last_init[i] = c->seq_steps[i] - 1;
    }
    lkv_status st = lkv_cache_store(c, io->sequences, n, layer, s->k, s->v,
                                    io->memory == LKV_MEMORY_HOST ? io->k : NULL,
                                    io->memory == LKV_MEMORY_HOST ? io->v : NULL);
    if (st != LKV_OK)
        return st;
    int observing = any_observing(c, n);
    for (int32_t i = 0; i < n; i++)
        c->lists.group_n[i] = c->seqs[io->sequences[i]].len[layer];
    if (!given)
        st = attend_step(c, io, layer, s, observing);
    else if (observing) { /* given probabilities go where attend would put them */
        st = lkv_given_write(c, given, io->sequences, n, layer);
        if (st == LKV_OK)
            st = observe_step(c, io->sequences, n, layer);
    }
    if (st == LKV_OK && !given && io->memory == LKV_MEMORY_HOST)
        st = c->ops->read(c->dev, s->out, 0, io->out,
                          (size_t)n * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim * 4);
    if (st != LKV_OK)
        for (int32_t i = 0; i < n; i++)
            lkv_cache_unappend(c, io->sequences[i], layer, 1);
    return st;
}

lkv_status lkv_core_decode(lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io,
                           const lkv_given *given, const char *call)
{
    lkv_status joined = lkv_cache_join_layer(c, layer); /* trace replay calls in here directly */
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_owner(c, given, call, "lkv_cache_decode_batch",
                                    "lkv_cache_observe_batch");
    if (st == LKV_OK)
        st = check_decode(c, layer, io, given != NULL, call);
    if (st != LKV_OK)
        return st;
    lkv_plan_reset(&c->plan);
    int32_t n = io->n_sequences;
    for (int32_t i = 0; i < n; i++) {
        const lkv_sequence *s = &c->seqs[io->sequences[i]];
        c->seq_steps[i] = layer == 0 ? s->t + 1 : s->t;
        c->lists.count[i] = 1;
    }
    /* blocks for the new token, before anything moves */
    if ((st = lkv_pages_check(c, io->sequences, c->lists.count, n, layer, call)) != LKV_OK)
        return st;
    /* A full layer: the policy's eviction runs now, before the append, for
     * this and every later layer of the step (all hold the same count at
     * layer 0), as one batch scored on the previous step's state. */
    if ((st = make_room(c, io->sequences, n, layer)) != LKV_OK)
        return st;
    lkv_inputs s;
    st = prepare_io(c, io, &s);
    if (st == LKV_OK)
        st = run_step(c, layer, io, given, &s);
    lkv_cache_release_inputs(c, &s);
    if (st != LKV_OK)
        return st;
    for (int32_t i = 0; i < n; i++) {
        lkv_sequence *q = &c->seqs[io->sequences[i]];
        q->t = c->seq_steps[i];
        q->next_layer = layer + 1 < c->cfg.layers ? layer + 1 : 0;
        if (q->next_layer == 0) {
            q->next_position++;
            q->since_evict++;
        }
    }
    /* A lane takes each layer's eviction once the layer has observed the
     * step; a union over layers waits for the last. */
    if (c->lane && lkv_lane_per_layer(c))
        return lkv_lane_schedule(c, io->sequences, c->seq_steps, n,
                                 (lkv_layer_span){layer, layer + 1}, LKV_DUE_DECODE);
    if (layer + 1 < c->cfg.layers)
        return LKV_OK;
    if (c->lane)
        return lkv_lane_schedule(c, io->sequences, c->seq_steps, n,
                                 (lkv_layer_span){0, c->cfg.layers}, LKV_DUE_DECODE);
    return lkv_background_evict(c->bg, c, io->sequences, c->seq_steps, n);
}

lkv_status lkv_cache_decode_batch(lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io)
{
    lkv_clear_error();
    return lkv_core_decode(c, layer, io, NULL, "lkv_cache_decode_batch");
}

lkv_status lkv_cache_decode(lkv_cache *c, int32_t seq, int32_t layer, const lkv_decode_io *io)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join_layer(c, layer);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_call(c, io, "lkv_cache_decode", seq, layer);
    if (st == LKV_OK && io->memory != LKV_MEMORY_HOST)
        st = lkv_fail(io->memory == LKV_MEMORY_DEVICE ? LKV_UNSUPPORTED : LKV_INVALID_ARGUMENT,
                      "lkv_cache_decode: memory kind %d: the per-sequence call takes host arrays (LKV_MEMORY_HOST) "
                      "(device memory goes through lkv_cache_decode_batch)",
                      (int)io->memory);
    if (st != LKV_OK)
        return st;
    lkv_decode_batch_io b = {
        .n_sequences = 1, .sequences = &seq, .memory = LKV_MEMORY_HOST,
        .q = io->q, .k = io->k, .v = io->v, .out = io->out,
    };
    return lkv_core_decode(c, layer, &b, NULL, "lkv_cache_decode");
}
