/* Prefill of one layer for a batch of sequences, one prompt chunk each:
 * store the chunk, compute its causal attention for every query in one
 * dispatch, and let the policy's voting queries score the prompt; the
 * eviction itself waits until every layer of the last chunk is in, then runs
 * batched over the sequences that finished. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"
#include "pages.h"

/* This chunk's voting queries, as prompt indices [*out_first, total): the
 * policy's plan on the prompt as it stands after the chunk. A chunk that is
 * not the last votes only when every prompt query votes (h2o): the others
 * vote with the prompt's last queries, which only the last chunk knows.
 * "Every query" must hold however long the prompt grows (up to capacity;
 * a plan's first voter never moves back as the prompt grows), not just for
 * the prompt so far: tova's last query is query 0 of a one-token prefix. */
int lkv_chunk_votes(const lkv_cache *c, int32_t prefix, int32_t n, int more,
                    lkv_vote_plan *plan, int32_t *out_first)
{
    int32_t total = prefix + n;
    memset(plan, 0, sizeof *plan);
    plan->first = total;
    if (!c->rules->prefill_votes || !c->rules->prefill_votes(&c->cfg.policy, total, plan))
        return 0;
    lkv_vote_plan longest = {.first = 1};
    if (more && (plan->first > 0 || !plan->causal ||
                 !c->rules->prefill_votes(&c->cfg.policy, c->cfg.capacity, &longest) ||
                 longest.first > 0 || !longest.causal))
        return 0;
    *out_first = plan->first > prefix ? plan->first : prefix;
    return *out_first < total;
}

static lkv_status check_order(const lkv_cache *c, int32_t seq, int32_t layer, int32_t n,
                              int32_t first, int more)
{
    const lkv_sequence *s = &c->seqs[seq];
    if (s->t > 0 || (s->prefilled && !s->prompt_open))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "sequence %d is already %s: reset it before a new prefill", seq,
                        s->t > 0 ? "decoding" : "prefilled");
    if (layer != s->next_layer)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d prefilled out of order: sequence %d expects layer %d", layer, seq,
                        s->next_layer);
    int continuing = s->prompt_open || layer > 0;
    if (layer > 0 && (n != s->chunk_tokens || (!s->prompt_open && first != s->first_position)))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d prompt of %d tokens from position %d differs from layer 0's "
                        "%d tokens from %d",
                        layer, n, first, s->chunk_tokens, s->first_position);
    if (layer > 0 && (more != 0) != s->chunk_more)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d of sequence %d says more_chunks %d, layer 0 said %d", layer, seq,
                        more, s->chunk_more);
    if (!continuing && (first < 0 || first > INT32_MAX - n - (1 << 24)))
        return lkv_fail(LKV_INVALID_ARGUMENT, "first_position %d is out of range", first);
    return LKV_OK;
}

static lkv_status check_room(const lkv_cache *c, int32_t seq, int32_t layer, int32_t n)
{
    int32_t prefix = c->seqs[seq].len[layer];
    if (n < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prompt of %d tokens is invalid: expected 1..%d", n,
                        c->cfg.capacity - prefix);
    if (n > c->cfg.capacity - prefix)
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "prompt of %d tokens leaves no room: policy %s with capacity %d fits at "
                        "most %d prompt tokens (the whole prompt is stored before any eviction)%s: "
                        "raise capacity or shorten the prompt",
                        prefix + n, c->rules->name, c->cfg.capacity, c->cfg.capacity,
                        prefix ? ", earlier chunks included" : "");
    return LKV_OK;
}

static lkv_status check_inputs(const lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                               int32_t i, size_t token0)
{
    int32_t seq = io->sequences[i], n = io->n_tokens[i];
    size_t kvw = (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim;
    size_t qw = (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    lkv_status st = lkv_check_input(c, io->k + token0 * kvw, (size_t)n * kvw, (int32_t)kvw, "k", 1,
                                    seq, layer);
    if (st == LKV_OK)
        st = lkv_check_input(c, io->v + token0 * kvw, (size_t)n * kvw, (int32_t)kvw, "v", 1, seq,
                             layer);
    if (st == LKV_OK && io->q)
        st = lkv_check_input(c, io->q + token0 * qw, (size_t)n * qw, (int32_t)qw, "q", 0, seq,
                             layer);
    return st;
}

static int io_more(const lkv_prefill_batch_io *io, int32_t i)
{
    return io->more_chunks && io->more_chunks[i];
}

static int32_t io_first(const lkv_prefill_batch_io *io, int32_t i)
{
    return io->first_position ? io->first_position[i] : 0;
}

static lkv_status check_arrays(const lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io)
{
    if (c->cfg.kv_owner == LKV_KV_ENGINE)
        return LKV_OK; /* no K/V; the engine's votes are checked in engine.c */
    int device = io->memory == LKV_MEMORY_DEVICE;
    int has_k = device ? io->k_dev.handle != 0 : io->k != NULL;
    int has_v = device ? io->v_dev.handle != 0 : io->v != NULL;
    int has_q = device ? io->q_dev.handle != 0 : io->q != NULL;
    int has_out = device ? io->out_dev.handle != 0 : io->out != NULL;
    if (!has_k || !has_v)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prefill of layer %d: %s is NULL", layer,
                        !has_k ? "k" : "v");
    if (has_out && !has_q)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prefill of layer %d: out wanted but q is NULL",
                        layer);
    (void)c;
    return LKV_OK;
}

static lkv_status check_votes(const lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                              int32_t i, int given)
{
    const lkv_sequence *s = &c->seqs[io->sequences[i]];
    lkv_vote_plan votes;
    int32_t first = 0;
    if (given || !lkv_chunk_votes(c, s->prompt_tokens, io->n_tokens[i], io_more(io, i), &votes, &first))
        return LKV_OK;
    int has_q = io->memory == LKV_MEMORY_DEVICE ? io->q_dev.handle != 0 : io->q != NULL;
    if (votes.required && !has_q)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "policy %s scores the prompt with its queries: prefill of layer %d needs q",
                        c->rules->name, layer);
    if (has_q && io->memory == LKV_MEMORY_DEVICE)
        return lkv_fail(LKV_UNSUPPORTED,
                        "policy %s votes with prompt queries, which lazykv reads on the host: "
                        "prefill sequence %d from host memory",
                        c->rules->name, io->sequences[i]);
    return LKV_OK;
}

static lkv_status check_prefill(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                                int given, const char *call)
{
    lkv_status st = lkv_check_batch(c, io, layer, io ? io->sequences : NULL,
                                    io ? io->n_sequences : 0, io ? io->memory : 0, call);
    if (st != LKV_OK)
        return st;
    if (!io->n_tokens)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "%s: n_tokens is NULL", call);
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
        int32_t seq = io->sequences[i];
        st = check_room(c, seq, layer, io->n_tokens[i]);
        if (st == LKV_OK)
            st = check_order(c, seq, layer, io->n_tokens[i], io_first(io, i), io_more(io, i));
    }
    if (st == LKV_OK)
        st = check_arrays(c, layer, io);
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++)
        st = check_votes(c, layer, io, i, given);
    size_t token0 = 0;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
        if (io->memory == LKV_MEMORY_HOST && c->cfg.kv_owner == LKV_KV_OWNED)
            st = check_inputs(c, layer, io, i, token0);
        token0 += (size_t)io->n_tokens[i];
    }
    if (st == LKV_OK && token0 > (size_t)INT32_MAX)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "%s: %zu tokens in one batch: at most %d", call,
                      token0, INT32_MAX);
    return st;
}

static lkv_status prepare_chunk(lkv_cache *c, const lkv_prefill_batch_io *io, int given,
                                lkv_inputs *s)
{
    memset(s, 0, sizeof *s);
    int32_t tokens = 0;
    for (int32_t i = 0; i < io->n_sequences; i++)
        tokens += io->n_tokens[i];
    size_t t = (size_t)tokens;
    size_t qb = t * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim * 4;
    size_t kvb = t * (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim * 4;
    int dev = io->memory == LKV_MEMORY_DEVICE, store = c->ops->store != NULL;
    lkv_status st = lkv_lists_reserve(c, tokens);
    if (st == LKV_OK && c->cfg.kv_owner == LKV_KV_ENGINE) {
        st = lkv_engine_zero_kv(c, tokens, &s->k);
        s->v = s->k;
        return st;
    }
    if (st == LKV_OK && (store || dev))
        st = lkv_cache_take_input(c, dev, io->k_dev, io->k, &c->stage_k, kvb, 1, &s->views[0], &s->k);
    if (st == LKV_OK && (store || dev))
        st = lkv_cache_take_input(c, dev, io->v_dev, io->v, &c->stage_v, kvb, 1, &s->views[1], &s->v);
    int attend = !given && (dev ? io->out_dev.handle != 0 : io->out != NULL);
    if (st == LKV_OK && attend)
        st = lkv_cache_take_input(c, dev, io->q_dev, io->q, &c->stage_q, qb, 1, &s->views[2], &s->q);
    const lkv_buffer *out = NULL;
    if (st == LKV_OK && attend)
        st = lkv_cache_take_input(c, dev, io->out_dev, io->out, &c->stage_out, qb, 0, &s->views[3], &out);
    s->out = (lkv_buffer *)out;
    return st;
}

/* Causal outputs of every chunk query of every sequence: one attend. */
static lkv_status attend_chunks(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                                const lkv_inputs *s)
{
    int32_t g = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t seq = io->sequences[i], prefix = c->seqs[seq].prompt_tokens;
        for (int32_t j = 0; j < io->n_tokens[i]; j++, g++) {
            c->lists.row0[g] = lkv_row_of(c, seq, layer, 0);
            c->lists.group_n[g] = prefix + j + 1;
        }
    }
    lkv_status st = lkv_cache_attend(c, g, s->q, s->out, 0, NULL);
    if (st == LKV_OK && io->memory == LKV_MEMORY_HOST)
        st = c->ops->read(c->dev, s->out, 0, io->out,
                          (size_t)g * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim * 4);
    return st;
}

/* Round r of the votes: the r-th voting query of every sequence that has
 * one attends and its probabilities accumulate (one dispatch where the
 * backend fuses them, two otherwise). */
static lkv_status vote_round(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                             const int32_t *vote_first, const int32_t *token0, int32_t r,
                             int *out_any)
{
    size_t qw = (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    int32_t m = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        const lkv_sequence *s = &c->seqs[io->sequences[i]];
        int32_t prefix = s->prompt_tokens, total = prefix + io->n_tokens[i];
        int32_t at = vote_first[i] + r; /* prompt index of the query */
        if (vote_first[i] < 0 || at >= total)
            continue;
        lkv_vote_plan plan;
        int32_t first = 0;
        lkv_chunk_votes(c, prefix, io->n_tokens[i], io_more(io, i), &plan, &first);
        memcpy(c->vote_q + (size_t)m * qw, io->q + (size_t)(token0[i] + at - prefix) * qw,
               qw * sizeof(float));
        c->lists.row0[m] = lkv_row_of(c, io->sequences[i], layer, 0);
        c->lists.group_n[m] = plan.causal ? at + 1 : total;
        c->lists.src_token[m] = io->sequences[i];
        c->lists.slot0[m++] = 0;
    }
    *out_any = m > 0;
    if (!m)
        return LKV_OK;
    lkv_status st = lkv_stage_reserve(c, &c->stage_q, (size_t)m * qw * 4);
    if (st == LKV_OK)
        st = c->ops->write(c->dev, c->stage_q.buf, 0, c->vote_q, (size_t)m * qw * 4);
    return st == LKV_OK ? lkv_cache_attend_observe(c, m, c->stage_q.buf, NULL, c->lists.src_token,
                                                   c->lists.slot0, layer, LKV_OBSERVE_ACCUMULATE)
                        : st;
}

static lkv_status vote(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io)
{
    int32_t n = io->n_sequences;
    int32_t *vote_first = c->vote_first, *token0 = c->vote_token0;
    int32_t at = 0;
    int any = 0;
    for (int32_t i = 0; i < n; i++) {
        lkv_vote_plan plan;
        int32_t first = 0;
        const lkv_sequence *s = &c->seqs[io->sequences[i]];
        vote_first[i] = io->q && lkv_chunk_votes(c, s->prompt_tokens, io->n_tokens[i], io_more(io, i),
                                             &plan, &first)
                            ? first
                            : -1;
        any |= vote_first[i] >= 0;
        token0[i] = at;
        at += io->n_tokens[i];
    }
    if (!any)
        return LKV_OK;
    size_t need = (size_t)n * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    if (need > c->vote_q_cap) {
        float *grown = realloc(c->vote_q, need * sizeof(float));
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for voting queries");
        c->vote_q = grown;
        c->vote_q_cap = need;
    }
    lkv_status st = LKV_OK;
    for (int32_t r = 0; st == LKV_OK && any; r++)
        st = vote_round(c, layer, io, vote_first, token0, r, &any);
    return st;
}

static lkv_status run_chunk(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                            const lkv_given *given, const lkv_inputs *s)
{
    int32_t n = io->n_sequences, at = 0;
    for (int32_t i = 0; i < n; i++) {
        c->lists.count[i] = io->n_tokens[i];
        c->lists.src_token[i] = at;
        c->lists.last_init[i] = 0;
        at += io->n_tokens[i];
    }
    int dev = io->memory == LKV_MEMORY_DEVICE;
    lkv_status st = lkv_cache_store(c, io->sequences, n, layer, s->k, s->v, dev ? NULL : io->k,
                                    dev ? NULL : io->v);
    if (st != LKV_OK)
        return st;
    if (given && given->engine)
        st = given->p || given->dev ? lkv_engine_votes(c, layer, io, given) : LKV_OK;
    else if (given)
        st = lkv_cache_write_rows(c, io->sequences[0], layer, c->buf.state_f, given->p,
                                  io->n_tokens[0]);
    else if (s->out)
        st = attend_chunks(c, layer, io, s);
    if (st == LKV_OK && !given && !dev)
        st = vote(c, layer, io);
    if (st != LKV_OK)
        for (int32_t i = 0; i < n; i++)
            lkv_cache_unappend(c, io->sequences[i], layer, io->n_tokens[i]);
    return st;
}

/* Where each sequence stands after the layer; the ones whose prompt ended
 * go to the prefill eviction, listed in `done`. */
static int32_t advance(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io, int32_t *done)
{
    int32_t m = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        lkv_sequence *s = &c->seqs[io->sequences[i]];
        if (layer == 0) {
            s->chunk_tokens = io->n_tokens[i];
            s->chunk_more = io_more(io, i);
        }
        s->next_layer = layer + 1;
        s->in_prefill = 1;
        if (s->next_layer < c->cfg.layers)
            continue;
        s->next_layer = 0;
        s->in_prefill = 0;
        s->prompt_tokens += s->chunk_tokens;
        s->next_position += s->chunk_tokens;
        s->since_evict += s->chunk_tokens;
        s->prompt_open = s->chunk_more;
        s->prefilled = 1;
        if (!s->chunk_more) {
            c->seq_steps[m] = 0;
            done[m++] = io->sequences[i];
        }
    }
    return m;
}

lkv_status lkv_core_prefill(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                            const lkv_given *given, const char *call)
{
    lkv_status joined = lkv_cache_join(c); /* trace replay calls in here directly */
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_owner(c, given, call, "lkv_cache_prefill_batch",
                                    "lkv_cache_observe_prompt");
    if (st == LKV_OK)
        st = check_prefill(c, layer, io, given != NULL, call);
    if (st == LKV_OK)
        st = lkv_pages_check(c, io->sequences, io->n_tokens, io->n_sequences, layer, call);
    if (st != LKV_OK)
        return st;
    lkv_plan_reset(&c->plan);
    /* A prompt's first chunk sets where positions start; the store reads it.
     * Kept in seq_steps to undo on failure. */
    for (int32_t i = 0; i < io->n_sequences; i++) {
        lkv_sequence *s = &c->seqs[io->sequences[i]];
        c->seq_steps[i] = s->next_position;
        if (layer == 0 && !s->prompt_open)
            s->next_position = io_first(io, i);
    }
    lkv_inputs s;
    st = prepare_chunk(c, io, given != NULL, &s);
    if (st == LKV_OK)
        st = run_chunk(c, layer, io, given, &s);
    lkv_cache_release_inputs(c, &s);
    if (st != LKV_OK) {
        for (int32_t i = 0; i < io->n_sequences; i++)
            c->seqs[io->sequences[i]].next_position = c->seq_steps[i];
        return st;
    }
    for (int32_t i = 0; i < io->n_sequences; i++)
        if (layer == 0 && !c->seqs[io->sequences[i]].prompt_open)
            c->seqs[io->sequences[i]].first_position = io_first(io, i);
    int32_t *done = c->lists.count; /* free again after the store */
    int32_t m = advance(c, layer, io, done);
    return m ? lkv_schedule(c, done, c->seq_steps, m, (lkv_layer_span){0, c->cfg.layers},
                          LKV_DUE_PREFILL) : LKV_OK;
}

lkv_status lkv_cache_prefill_batch(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    return lkv_core_prefill(c, layer, io, NULL, "lkv_cache_prefill_batch");
}

lkv_status lkv_cache_prefill(lkv_cache *c, int32_t seq, int32_t layer, const lkv_prefill_io *io)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_call(c, io, "lkv_cache_prefill", seq, layer);
    if (st == LKV_OK && io->memory != LKV_MEMORY_HOST)
        st = lkv_fail(io->memory == LKV_MEMORY_DEVICE ? LKV_UNSUPPORTED : LKV_INVALID_ARGUMENT,
                      "lkv_cache_prefill: memory kind %d: the per-sequence call takes host arrays (LKV_MEMORY_HOST) "
                      "(device memory goes through lkv_cache_prefill_batch)",
                      (int)io->memory);
    if (st != LKV_OK)
        return st;
    int32_t more = io->more_chunks != 0;
    lkv_prefill_batch_io b = {
        .n_sequences = 1, .sequences = &seq, .n_tokens = &io->n_tokens,
        .first_position = &io->first_position, .more_chunks = &more, .memory = LKV_MEMORY_HOST,
        .q = io->q, .k = io->k, .v = io->v, .out = io->out,
    };
    return lkv_core_prefill(c, layer, &b, NULL, "lkv_cache_prefill");
}
