/* Prefill of one layer: store the prompt, optionally compute its causal
 * attention, and let the policy's voting queries score the prompt; the
 * eviction itself waits until every layer is in, then runs batched. */
#include "cache.h"
#include "error.h"

static lkv_status check_order(const lkv_cache *c, int32_t seq, int32_t layer,
                              const lkv_prefill_io *io)
{
    const lkv_sequence *s = &c->seqs[seq];
    if (s->t > 0 || s->prefilled)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "sequence %d is already %s: reset it before a new prefill", seq,
                        s->t > 0 ? "decoding" : "prefilled");
    if (layer != s->next_layer)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d prefilled out of order: sequence %d expects layer %d", layer, seq,
                        s->next_layer);
    if (layer > 0 && (io->n_tokens != s->prompt_tokens || io->first_position != s->first_position))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "layer %d prompt of %d tokens from position %d differs from layer 0's "
                        "%d tokens from %d",
                        layer, io->n_tokens, io->first_position, s->prompt_tokens,
                        s->first_position);
    return LKV_OK;
}

static lkv_status check_prefill(const lkv_cache *c, int32_t seq, int32_t layer,
                                const lkv_prefill_io *io, int given)
{
    lkv_status st = lkv_check_call(c, io, "lkv_cache_prefill", seq, layer, io ? io->memory : 0);
    if (st != LKV_OK)
        return st;
    if (io->n_tokens < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prompt of %d tokens is invalid: expected 1..%d",
                        io->n_tokens, c->cfg.capacity);
    if (io->n_tokens > c->cfg.capacity)
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "prompt of %d tokens leaves no room: policy %s with capacity %d fits at "
                        "most %d prompt tokens (the whole prompt is stored before any eviction): "
                        "raise capacity or shorten the prompt",
                        io->n_tokens, c->rules->name, c->cfg.capacity, c->cfg.capacity);
    if (io->first_position < 0 || io->first_position > INT32_MAX - io->n_tokens - (1 << 24))
        return lkv_fail(LKV_INVALID_ARGUMENT, "first_position %d is out of range",
                        io->first_position);
    if (!io->k || !io->v)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prefill of layer %d: %s is NULL", layer,
                        !io->k ? "k" : "v");
    if ((st = check_order(c, seq, layer, io)) != LKV_OK)
        return st;
    lkv_vote_plan votes;
    int voting = !given && c->rules->prefill_votes &&
                 c->rules->prefill_votes(&c->cfg.policy, io->n_tokens, &votes);
    if (voting && votes.required && !io->q)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "policy %s scores the prompt with its queries: prefill of layer %d needs q",
                        c->rules->name, layer);
    if (io->out && !io->q)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prefill of layer %d: out wanted but q is NULL",
                        layer);
    size_t dkv = (size_t)io->n_tokens * (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim;
    size_t dq = (size_t)io->n_tokens * (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    int32_t w = c->cfg.kv_heads * c->cfg.head_dim;
    st = lkv_check_input(c, io->k, dkv, w, "k", 1, seq, layer);
    if (st == LKV_OK)
        st = lkv_check_input(c, io->v, dkv, w, "v", 1, seq, layer);
    if (st == LKV_OK && io->q)
        st = lkv_check_input(c, io->q, dq, c->cfg.q_heads * c->cfg.head_dim, "q", 0, seq, layer);
    return st;
}

/* Causal outputs and votes, one prompt query at a time. A query that both
 * votes causally and wants its output shares one attend. */
static lkv_status attend_prompt(lkv_cache *c, int32_t seq, int32_t layer, const lkv_prefill_io *io)
{
    lkv_vote_plan votes = {.first = io->n_tokens};
    if (c->rules->prefill_votes && io->q)
        c->rules->prefill_votes(&c->cfg.policy, io->n_tokens, &votes);
    size_t stride = (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < io->n_tokens && st == LKV_OK; i++) {
        const float *q = io->q + (size_t)i * stride;
        float *out = io->out ? io->out + (size_t)i * stride : NULL;
        int vote = i >= votes.first;
        int32_t n_vote = votes.causal ? i + 1 : io->n_tokens;
        int shared = vote && votes.causal;
        if (out || shared)
            st = lkv_cache_attend(c, seq, layer, i + 1, q, out, shared);
        if (st == LKV_OK && vote && !shared)
            st = lkv_cache_attend(c, seq, layer, n_vote, q, NULL, 1);
        if (st == LKV_OK && vote)
            st = lkv_cache_observe(c, seq, layer, n_vote, LKV_OBSERVE_ACCUMULATE, 0);
    }
    return st;
}

lkv_status lkv_core_prefill(lkv_cache *c, int32_t seq, int32_t layer, const lkv_prefill_io *io,
                            const float *given_votes)
{
    lkv_status st = check_prefill(c, seq, layer, io, given_votes != NULL);
    if (st != LKV_OK)
        return st;
    lkv_sequence *s = &c->seqs[seq];
    st = lkv_cache_append(c, seq, layer, io->n_tokens, io->k, io->v, io->first_position, 0);
    if (st != LKV_OK)
        return st;
    if (given_votes)
        st = lkv_cache_write_rows(c, seq, layer, c->buf.state_f, given_votes, io->n_tokens);
    else if (io->q)
        st = attend_prompt(c, seq, layer, io);
    if (st != LKV_OK) {
        lkv_cache_unappend(c, seq, layer, io->n_tokens);
        return st;
    }
    s->prompt_tokens = io->n_tokens;
    s->first_position = io->first_position;
    s->next_layer = layer + 1;
    s->in_prefill = 1;
    if (s->next_layer < c->cfg.layers)
        return LKV_OK;
    s->next_layer = 0;
    s->in_prefill = 0;
    s->prefilled = 1;
    s->next_position = io->first_position + io->n_tokens;
    return lkv_schedule(c, seq, 0, 0, LKV_DUE_PREFILL);
}

lkv_status lkv_cache_prefill(lkv_cache *c, int32_t seq, int32_t layer, const lkv_prefill_io *io)
{
    lkv_clear_error();
    return lkv_core_prefill(c, seq, layer, io, NULL);
}
