/* A sequence's lifecycle beyond stepping: reset, fork (prefix sharing,
 * parallel sampling, beam search) and truncate (speculative rollback). */
#include <string.h>

#include "cache.h"
#include "error.h"
#include "pages.h"

/* Between steps: no layer of a decode step or prefill chunk pending. */
static lkv_status check_idle(const lkv_cache *c, int32_t seq, const char *call)
{
    const lkv_sequence *s = &c->seqs[seq];
    if (s->next_layer != 0 || s->in_prefill)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: sequence %d is part-way through a %s (layer %d next): finish it first",
                        call, seq, s->in_prefill ? "prefill chunk" : "decode step", s->next_layer);
    return LKV_OK;
}

static void drop_slots(lkv_cache *c, lkv_sequence *s)
{
    for (int32_t l = 0; l < c->cfg.layers; l++) {
        c->stats.slots_in_use -= (int64_t)s->len[l] * c->heads;
        s->len[l] = 0;
    }
}

lkv_status lkv_cache_reset_sequence(lkv_cache *c, int32_t seq)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_seq(c, seq);
    if (st != LKV_OK)
        return st;
    lkv_plan_reset(&c->plan);
    lkv_sequence *s = &c->seqs[seq];
    drop_slots(c, s);
    lkv_pages_release(c, seq);
    int32_t *len = s->len;
    memset(s, 0, sizeof *s);
    s->len = len;
    return LKV_OK;
}

/* A fork's dst holds nothing: no slot in any layer, no step, prefill chunk
 * or chunked prompt under way (lkv_slot_map_fork refuses the same). */
static lkv_status check_empty(const lkv_cache *c, int32_t dst)
{
    const lkv_sequence *d = &c->seqs[dst];
    if (d->next_layer != 0 || d->in_prefill || d->prompt_open)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_cache_fork_sequence: dst sequence %d is part-way through a %s "
                        "(layer %d next): reset it first",
                        dst, d->in_prefill || d->prompt_open ? "prompt" : "decode step",
                        d->next_layer);
    for (int32_t l = 0; l < c->cfg.layers; l++)
        if (d->len[l] > 0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "lkv_cache_fork_sequence: dst sequence %d holds %d slots in layer "
                            "%d: reset it first",
                            dst, d->len[l], l);
    return LKV_OK;
}

/* The rows of a sequence are consecutive in every buffer (row = (seq *
 * layers + layer) * heads + head), so one copy per buffer moves all of it.
 * A paged cache's K/V stay: dst shares src's blocks (lkv_pages_share). */
static lkv_status copy_rows(lkv_cache *c, int32_t src, int32_t dst)
{
    size_t rows = (size_t)c->cfg.layers * (size_t)c->heads;
    size_t slots = rows * (size_t)c->cfg.capacity;
    size_t kv = slots * (size_t)c->buf.head_dim * lkv_dtype_size(c->buf.dtype);
    lkv_buffer *k = c->buf.paged ? NULL : c->buf.k, *v = c->buf.paged ? NULL : c->buf.v;
    struct { lkv_buffer *buf; size_t bytes; } parts[] = {
        {k, kv},                  {v, kv},                  {c->buf.pos, slots * 4},
        {c->buf.state_a, slots * 4}, {c->buf.state_b, slots * 4}, {c->buf.state_f, slots * 4},
        {c->buf.phys, slots * 4}, /* holes: dst's K/V lie where src's do */
    };
    lkv_status st = LKV_OK;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && st == LKV_OK; i++)
        if (parts[i].buf) /* phys: NULL in a compacting cache; k, v: paged */
            st = c->ops->copy(c->dev, parts[i].buf, (size_t)dst * parts[i].bytes, parts[i].buf,
                              (size_t)src * parts[i].bytes, parts[i].bytes);
    return st;
}

lkv_status lkv_cache_fork_sequence(lkv_cache *c, int32_t src, int32_t dst)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_seq(c, src);
    if (st == LKV_OK)
        st = lkv_check_seq(c, dst);
    if (st == LKV_OK && src == dst)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "lkv_cache_fork_sequence: src and dst are both %d",
                      src);
    if (st == LKV_OK)
        st = check_idle(c, src, "lkv_cache_fork_sequence");
    if (st == LKV_OK)
        st = check_empty(c, dst);
    if (st == LKV_OK)
        st = copy_rows(c, src, dst);
    if (st != LKV_OK)
        return st;
    lkv_plan_reset(&c->plan);
    lkv_pages_share(c, src, dst);
    lkv_sequence *d = &c->seqs[dst];
    const lkv_sequence *s = &c->seqs[src];
    int32_t *len = d->len; /* all 0 (check_empty) */
    *d = *s;
    d->len = len;
    memcpy(d->len, s->len, sizeof *len * (size_t)c->cfg.layers);
    for (int32_t l = 0; l < c->cfg.layers; l++)
        c->stats.slots_in_use += (int64_t)d->len[l] * c->heads;
    if (c->stats.slots_in_use > c->stats.peak_slots)
        c->stats.peak_slots = c->stats.slots_in_use;
    return LKV_OK;
}

lkv_status lkv_cache_truncate_sequence(lkv_cache *c, int32_t seq, int32_t n)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_seq(c, seq);
    if (st == LKV_OK)
        st = check_idle(c, seq, "lkv_cache_truncate_sequence");
    if (st != LKV_OK)
        return st;
    lkv_sequence *s = &c->seqs[seq];
    if (n < 0 || n > s->len[0])
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_cache_truncate_sequence: n %d is out of range: sequence %d holds %d "
                        "tokens",
                        n, seq, s->len[0]);
    if (n > s->since_evict)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_cache_truncate_sequence: cannot drop %d tokens of sequence %d: an "
                        "eviction ran since, so only the newest %d are the tail of every row",
                        n, seq, s->since_evict);
    lkv_plan_reset(&c->plan);
    for (int32_t l = 0; l < c->cfg.layers; l++)
        s->len[l] -= n;
    c->stats.slots_in_use -= (int64_t)n * c->heads * c->cfg.layers;
    s->since_evict -= n;
    s->next_position -= n;
    if (s->prompt_open) /* the next chunk continues after what is left */
        s->prompt_tokens -= n;
    return LKV_OK;
}
