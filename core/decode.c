/* A decode step of one layer: validate everything, make room on a full layer
 * (the policy's early eviction), then append, attend, observe; after the
 * last layer, hand the step to the scheduler. */
#include <string.h>

#include "cache.h"
#include "error.h"

static lkv_status check_decode(const lkv_cache *c, int32_t seq, int32_t layer,
                               const lkv_decode_io *io, int given)
{
    lkv_status st = lkv_check_call(c, io, "lkv_cache_decode", seq, layer, io ? io->memory : 0);
    if (st != LKV_OK)
        return st;
    if (!io->k || !io->v || (!given && (!io->q || !io->out)))
        return lkv_fail(LKV_INVALID_ARGUMENT, "decode of layer %d: %s is NULL", layer,
                        !io->k ? "k" : !io->v ? "v" : !io->q ? "q" : "out");
    const lkv_sequence *s = &c->seqs[seq];
    if (s->in_prefill)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "sequence %d is part-way through prefill (layer %d next): finish it first",
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
                        given ? "and recorded probabilities leave no room for an early eviction"
                              : "which does not evict during decode (capacity bounds the tokens "
                                "it keeps from the prompt plus every decoded token)");
    size_t dq = (size_t)c->cfg.q_heads * (size_t)c->cfg.head_dim;
    size_t dkv = (size_t)c->cfg.kv_heads * (size_t)c->cfg.head_dim;
    st = given ? LKV_OK : lkv_check_input(c, io->q, dq, c->cfg.head_dim, "q", 0, seq, layer);
    if (st == LKV_OK)
        st = lkv_check_input(c, io->k, dkv, c->cfg.head_dim, "k", 1, seq, layer);
    if (st == LKV_OK)
        st = lkv_check_input(c, io->v, dkv, c->cfg.head_dim, "v", 1, seq, layer);
    return st;
}

lkv_status lkv_core_decode(lkv_cache *c, int32_t seq, int32_t layer, const lkv_decode_io *io,
                           const float *given_probs)
{
    lkv_status st = check_decode(c, seq, layer, io, given_probs != NULL);
    if (st != LKV_OK)
        return st;
    lkv_sequence *s = &c->seqs[seq];
    int32_t t = layer == 0 ? s->t + 1 : s->t;
    lkv_observe_kind kind = c->rules->observe_kind;
    int observing = c->rules->observe_at ? c->rules->observe_at(&c->cfg.policy, t, &kind)
                                         : c->rules->observes;

    /* A full layer: the policy's eviction runs now, before the append, for
     * this and every later layer of the step (all hold the same count at
     * layer 0), as one batch scored on the previous step's state. */
    if (s->len[layer] >= c->cfg.capacity &&
        (st = lkv_schedule(c, seq, layer, t - 1, LKV_DUE_EARLY)) != LKV_OK)
        return st;
    if ((st = lkv_cache_append(c, seq, layer, 1, io->k, io->v, s->next_position, t - 1)) != LKV_OK)
        return st;
    int32_t n = s->len[layer];
    if (!given_probs)
        st = lkv_cache_attend(c, seq, layer, n, io->q, io->out, observing);
    else if (observing) /* recorded probabilities go where attend would put them */
        st = lkv_cache_write_rows(c, seq, layer, c->probs, given_probs, n);
    if (st == LKV_OK && observing)
        st = lkv_cache_observe(c, seq, layer, n, kind, t);
    if (st != LKV_OK) {
        lkv_cache_unappend(c, seq, layer, 1);
        return st;
    }
    s->t = t;
    s->next_layer = layer + 1;
    if (s->next_layer < c->cfg.layers)
        return LKV_OK;
    s->next_layer = 0;
    s->next_position++;
    return lkv_schedule(c, seq, 0, t, LKV_DUE_DECODE);
}

lkv_status lkv_cache_decode(lkv_cache *c, int32_t seq, int32_t layer, const lkv_decode_io *io)
{
    lkv_clear_error();
    return lkv_core_decode(c, seq, layer, io, NULL);
}
