/* Engine-owned K/V (observe and plan): the engine's attention goes where an
 * owned cache's attend would put its probabilities, and from there the
 * policy runs the very code an owned cache runs (decode.c, prefill.c,
 * scheduler.c). What differs lives here: checking the engine's arrays,
 * combining its query heads per cache head, and keeping the plan. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"
#include "plan_registry.h"

static lkv_status check_engine(const lkv_cache *c, const void *io, const char *call)
{
    if (!c || !io)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call, c ? "io" : "cache");
    if (c->cfg.kv_owner != LKV_KV_ENGINE)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the cache owns its K/V (kv_owner LKV_KV_OWNED): create it with "
                        "kv_owner LKV_KV_ENGINE to hand it the engine's attention", call);
    return LKV_OK;
}

/* The checks both engine calls start with: the cache kind, the list. */
static lkv_status check_engine_batch(lkv_cache *c, const void *io, int32_t layer,
                                     const int32_t *seqs, int32_t n, const char *call)
{
    lkv_status st = check_engine(c, io, call);
    return st == LKV_OK ? lkv_check_batch(c, io, layer, seqs, n, LKV_MEMORY_HOST, call) : st;
}

lkv_status lkv_engine_zero_kv(lkv_cache *c, int32_t tokens, const lkv_buffer **out)
{
    /* Stage buffers are zero-filled when allocated, and an engine-owned
     * cache never writes this one. */
    lkv_status st = lkv_stage_reserve(c, &c->stage_k, (size_t)tokens * (size_t)c->cfg.kv_heads * 4);
    *out = c->stage_k.buf;
    return st;
}

/* Cache head h's probabilities over n slots from a block of the engine's
 * rows [q_heads][stride], combined over its group as an owned cache's
 * attend combines them (backends/ref/ref_attend.c): the max of the f32
 * values (the same bits); the mean as their double sum over the group size,
 * where the owned cache sums its unrounded double probabilities. */
static const float *combined_row(lkv_cache *c, const float *block, int32_t stride, int32_t h,
                                 int32_t n)
{
    int32_t per = c->group;
    const float *first = block + (size_t)h * (size_t)per * (size_t)stride;
    if (per == 1)
        return first;
    float *out = c->given_row;
    if (c->cfg.policy.group_reduce == LKV_REDUCE_MAX) {
        /* Row by row, so it vectorizes; the values are checked (no NaN), so
         * the compare is fmaxf. */
        memcpy(out, first, sizeof(float) * (size_t)n);
        for (int32_t j = 1; j < per; j++) {
            const float *r = first + (size_t)j * (size_t)stride;
            for (int32_t i = 0; i < n; i++)
                out[i] = r[i] > out[i] ? r[i] : out[i];
        }
        return out;
    }
    for (int32_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (int32_t j = 0; j < per; j++)
            sum += (double)first[(size_t)j * (size_t)stride + (size_t)i];
        out[i] = (float)(sum / per);
    }
    return out;
}

/* Every cache head of (seq, layer) over n slots into c->probs, from the
 * engine's block of rows in host memory: combined per query-head group on
 * the host, or as they are when the engine combined them. */
static lkv_status write_block(lkv_cache *c, const lkv_given *g, size_t block_row, int32_t seq,
                              int32_t layer, int32_t n)
{
    lkv_status st = LKV_OK;
    for (int32_t h = 0; h < c->heads && st == LKV_OK; h++) {
        size_t off = (size_t)lkv_row_of(c, seq, layer, h) * (size_t)c->cfg.capacity * 4;
        size_t src = (block_row + (size_t)h) * (size_t)g->stride;
        if (g->cache_rows)
            st = c->ops->write(c->dev, c->probs, off, g->p + src, (size_t)n * 4);
        else
            st = c->ops->write(c->dev, c->probs, off,
                               combined_row(c, g->p + block_row * (size_t)g->stride, g->stride, h,
                                            n),
                               (size_t)n * 4);
    }
    return st;
}

/* Rows per sequence in an engine's block: one per query head unless the
 * engine combined them. */
static int32_t engine_rows(const lkv_cache *c, const lkv_given *g)
{
    return g->cache_rows ? c->heads : c->cfg.q_heads;
}

/* The device form: blocks of the engine's device rows listed one by one
 * (list_block), then brought into c->probs by one reduce_rows
 * (flush_blocks), each cache head's group of query-head rows combined on
 * the device as combined_row combines it on the host, or copied when the
 * engine combined them. The lists borrow c->row_k, c->rows and c->row_n,
 * which the observe after this fills anew; a batch lists at most one block
 * per sequence, so they hold it. */
static void list_block(lkv_cache *c, const lkv_given *g, int32_t *m, size_t block_row,
                       int32_t seq, int32_t layer, int32_t n)
{
    int32_t per = g->cache_rows ? 1 : c->group;
    for (int32_t h = 0; h < c->heads; h++, (*m)++) {
        c->row_k[*m] = (int32_t)(block_row + (size_t)(h * per));
        c->rows[*m] = lkv_row_of(c, seq, layer, h);
        c->row_n[*m] = n;
    }
}

static lkv_status flush_blocks(lkv_cache *c, const lkv_given *g, int32_t m)
{
    lkv_reduce_rows_args a = {
        .n = m, .group = g->cache_rows ? 1 : c->group, .reduce = c->cfg.policy.group_reduce,
        .src_stride = g->stride, .dst_stride = c->cfg.capacity, .src_row = c->row_k,
        .dst_row = c->rows, .len = c->row_n, .src = g->dev, .dst = c->probs,
    };
    return m ? c->ops->reduce_rows(c->dev, &a) : LKV_OK;
}

static lkv_status write_device(lkv_cache *c, const lkv_given *g, const int32_t *seqs, int32_t n,
                               int32_t layer)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        lkv_observe_kind kind;
        if (lkv_observes_at(c, c->seq_steps[i], &kind))
            list_block(c, g, &m, (size_t)i * (size_t)engine_rows(c, g), seqs[i], layer,
                       c->seqs[seqs[i]].len[layer]);
    }
    return flush_blocks(c, g, m);
}

lkv_status lkv_given_write(lkv_cache *c, const lkv_given *g, const int32_t *seqs, int32_t n,
                           int32_t layer)
{
    if (g->dev)
        return write_device(c, g, seqs, n, layer);
    size_t block = (size_t)(g->engine ? engine_rows(c, g) : c->heads) * (size_t)g->stride;
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < n && st == LKV_OK; i++) {
        lkv_observe_kind kind;
        int32_t len = c->seqs[seqs[i]].len[layer];
        if (!lkv_observes_at(c, c->seq_steps[i], &kind))
            continue;
        /* a trace's rows are per cache head, `len` apart */
        st = g->engine ? write_block(c, g, (size_t)i * (size_t)engine_rows(c, g), seqs[i], layer,
                                     len)
                       : lkv_cache_write_rows(c, seqs[i], layer, c->probs, g->p + (size_t)i * block,
                                              len);
    }
    return st;
}

/* The voting queries of a one-shot prompt of n tokens: [*first, n), with
 * *first = n when none vote. */
static int voters_of(const lkv_cache *c, int32_t n, lkv_vote_plan *plan, int32_t *first)
{
    if (lkv_chunk_votes(c, 0, n, 0, plan, first))
        return 1;
    *first = n;
    return 0;
}

lkv_status lkv_engine_votes(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                            const lkv_given *g)
{
    size_t row_block = (size_t)c->cfg.q_heads; /* rows per voter */
    int32_t *first = c->vote_first, *causal = c->vote_token0, most = 0;
    size_t *at = malloc(sizeof *at * (size_t)io->n_sequences);
    if (!at)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the prompt's votes");
    size_t offset = 0;
    for (int32_t i = 0; i < io->n_sequences; i++) {
        lkv_vote_plan plan;
        int32_t n = io->n_tokens[i];
        causal[i] = voters_of(c, n, &plan, &first[i]) && plan.causal;
        at[i] = offset;
        offset += (size_t)(n - first[i]) * row_block;
        most = n - first[i] > most ? n - first[i] : most;
    }
    /* Round r: the r-th voter of every sequence that has one, one observe
     * dispatch, as an owned cache's vote_round does. */
    lkv_status st = LKV_OK;
    for (int32_t r = 0; r < most && st == LKV_OK; r++) {
        int32_t m = 0, listed = 0;
        for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
            int32_t n = io->n_tokens[i], query = first[i] + r;
            if (query >= n)
                continue;
            int32_t seen = causal[i] ? query + 1 : n;
            size_t block = at[i] + (size_t)r * row_block;
            if (g->dev)
                list_block(c, g, &listed, block, io->sequences[i], layer, seen);
            else
                st = write_block(c, g, block, io->sequences[i], layer, seen);
            c->lists.src_token[m] = io->sequences[i];
            c->lists.slot0[m] = 0;
            c->lists.group_n[m++] = seen;
        }
        if (st == LKV_OK && g->dev)
            st = flush_blocks(c, g, listed);
        if (st == LKV_OK && m)
            st = lkv_cache_observe(c, c->lists.src_token, c->lists.slot0, c->lists.group_n, m,
                                   layer, LKV_OBSERVE_ACCUMULATE);
    }
    free(at);
    return st;
}

/* Values read from the engine's rows must be probabilities. The scan is
 * branch-free so it vectorizes; only a bad row is searched for the value to
 * name. */
static lkv_status check_rows(const float *p, int32_t rows, int32_t stride, int32_t n,
                             const char *what, int32_t seq, int32_t layer)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *row = p + (size_t)r * (size_t)stride;
        int bad = 0;
        for (int32_t j = 0; j < n; j++)
            bad |= !(row[j] >= 0.0f && row[j] <= 1.0f);
        for (int32_t j = 0; bad && j < n; j++)
            if (!(row[j] >= 0.0f && row[j] <= 1.0f))
                return lkv_fail(LKV_INVALID_ARGUMENT,
                                "%s row %d slot %d = %g (sequence %d, layer %d) is not a "
                                "probability in [0, 1]",
                                what, r, j, (double)row[j], seq, layer);
    }
    return LKV_OK;
}

/* How the engine's rows are laid out and where they live. */
static lkv_status check_form(const lkv_cache *c, const lkv_observe_batch_io *io, const char *call)
{
    if (io->rows != LKV_ROWS_QUERY_HEADS && io->rows != LKV_ROWS_CACHE_HEADS)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: rows %d is neither LKV_ROWS_QUERY_HEADS nor LKV_ROWS_CACHE_HEADS", call,
                        (int)io->rows);
    lkv_status st = lkv_check_memory(c, io->memory, call);
    if (st == LKV_OK && io->memory == LKV_MEMORY_DEVICE && !c->ops->reduce_rows)
        return lkv_fail(LKV_UNSUPPORTED, "%s: backend %s cannot read probabilities in device "
                        "memory (no reduce_rows)", call, c->ops->name);
    return st;
}

static lkv_status check_probs(const lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                              const char *call)
{
    lkv_status st = check_form(c, io, call);
    int32_t rows = io->rows == LKV_ROWS_CACHE_HEADS ? c->heads : c->cfg.q_heads;
    size_t block = (size_t)rows * (size_t)(io->stride > 0 ? io->stride : 0);
    int device = io->memory == LKV_MEMORY_DEVICE;
    for (int32_t i = 0; i < io->n_sequences && st == LKV_OK; i++) {
        int32_t seq = io->sequences[i];
        const lkv_sequence *s = &c->seqs[seq];
        int32_t n = s->len[layer] + 1;
        if (!lkv_engine_observes(c, seq, layer))
            continue;
        if (device ? !io->probs_dev.handle : !io->probs)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: %s, but policy %s observes sequence %d at step %d", call,
                            device ? "probs_dev.handle is 0" : "probs is NULL", c->rules->name,
                            seq, layer == 0 ? s->t + 1 : s->t);
        if (io->stride < n)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: stride %d is below sequence %d's %d slots (layer %d, new token "
                            "included)",
                            call, io->stride, seq, n, layer);
        if (!device)
            st = check_rows(io->probs + (size_t)i * block, rows, io->stride, n, "probs", seq,
                            layer);
    }
    return st;
}

/* A view of the engine's device rows, or NULL when no sequence observes
 * (the handle may then be 0). */
static lkv_status view_probs(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                             lkv_buffer **out)
{
    *out = NULL;
    int any = 0;
    for (int32_t i = 0; i < io->n_sequences; i++)
        any |= lkv_engine_observes(c, io->sequences[i], layer);
    if (io->memory != LKV_MEMORY_DEVICE || !any)
        return LKV_OK;
    int32_t rows = io->rows == LKV_ROWS_CACHE_HEADS ? c->heads : c->cfg.q_heads;
    size_t bytes = (size_t)io->n_sequences * (size_t)rows * (size_t)io->stride * 4;
    return c->ops->wrap(c->dev, io->probs_dev.handle, io->probs_dev.offset, bytes, out);
}

lkv_status lkv_engine_observe(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                              const char *call)
{
    lkv_status st = check_engine_batch(c, io, layer, io ? io->sequences : NULL,
                                       io ? io->n_sequences : 0, call);
    if (st == LKV_OK)
        st = check_probs(c, layer, io, call);
    lkv_buffer *view = NULL;
    if (st == LKV_OK)
        st = view_probs(c, layer, io, &view);
    if (st != LKV_OK)
        return st;
    st = lkv_engine_observe_checked(c, layer, io, view, call);
    if (view)
        c->ops->free(c->dev, view);
    return st;
}

lkv_status lkv_engine_observe_checked(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                                      const lkv_buffer *dev, const char *call)
{
    lkv_decode_batch_io b = {
        .n_sequences = io->n_sequences, .sequences = io->sequences, .memory = LKV_MEMORY_HOST,
    };
    lkv_given g = {io->probs, io->stride, 1, io->rows == LKV_ROWS_CACHE_HEADS, dev};
    return lkv_core_decode(c, layer, &b, &g, call);
}

lkv_status lkv_engine_check(lkv_cache *c, const void *io, int32_t layer, const int32_t *seqs,
                            int32_t n, const char *call)
{
    return check_engine_batch(c, io, layer, seqs, n, call);
}

int lkv_engine_observes(const lkv_cache *c, int32_t seq, int32_t layer)
{
    const lkv_sequence *s = &c->seqs[seq];
    int32_t t = layer == 0 ? s->t + 1 : s->t;
    lkv_observe_kind kind;
    /* a full layer is refused by decode's own checks */
    return s->len[layer] < c->cfg.capacity && lkv_observes_at(c, t, &kind);
}

lkv_status lkv_cache_observe_batch(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    return joined != LKV_OK ? joined : lkv_engine_observe(c, layer, io, "lkv_cache_observe_batch");
}

lkv_status lkv_cache_prompt_voters(const lkv_cache *c, int32_t n_tokens, int32_t *out_first,
                                   int32_t *out_causal, int32_t *out_required)
{
    lkv_clear_error();
    if (!c)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_cache_prompt_voters: cache is NULL");
    if (n_tokens < 1 || n_tokens > c->cfg.capacity)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_cache_prompt_voters: n_tokens %d is out of range: expected 1..%d",
                        n_tokens, c->cfg.capacity);
    lkv_vote_plan plan;
    int32_t first;
    int any = voters_of(c, n_tokens, &plan, &first);
    if (out_first)
        *out_first = first;
    if (out_causal)
        *out_causal = any && plan.causal;
    if (out_required)
        *out_required = any && plan.required;
    return LKV_OK;
}

/* Host votes are checked as probabilities; device votes (the qk call's,
 * on_device) only for the stride, which sizes their rows. */
static lkv_status check_votes(const lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io,
                              int on_device, const char *call)
{
    size_t offset = 0, row_block = (size_t)c->cfg.q_heads * (size_t)(io->stride > 0 ? io->stride : 0);
    for (int32_t i = 0; i < io->n_sequences; i++) {
        int32_t n = io->n_tokens[i], seq = io->sequences[i], first;
        lkv_vote_plan plan;
        if (n < 1 || n > c->cfg.capacity || !voters_of(c, n, &plan, &first))
            continue; /* a bad n is prefill's own check */
        if (!io->votes && !on_device && plan.required)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "policy %s scores the prompt with its queries' votes: "
                            "%s of sequence %d, layer %d needs votes",
                            c->rules->name, call, seq, layer);
        if (!io->votes && !on_device)
            continue;
        if (io->stride < n)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: stride %d is below sequence %d's prompt of %d tokens", call,
                            io->stride, seq, n);
        for (int32_t a = first; !on_device && a < n; a++, offset += row_block) {
            lkv_status st = check_rows(io->votes + offset, c->cfg.q_heads, io->stride,
                                       plan.causal ? a + 1 : n, "votes", seq, layer);
            if (st != LKV_OK)
                return lkv_fail_context(st, "voting query %d", a);
        }
    }
    return LKV_OK;
}

lkv_status lkv_engine_check_prompt(lkv_cache *c, const void *io, int32_t layer,
                                   const int32_t *seqs, int32_t n, const int32_t *n_tokens,
                                   const char *call)
{
    lkv_status st = check_engine_batch(c, io, layer, seqs, n, call);
    if (st == LKV_OK && !n_tokens)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "%s: n_tokens is NULL", call);
    for (int32_t i = 0; st == LKV_OK && i < n; i++)
        if (n_tokens[i] < 1 || n_tokens[i] > c->cfg.capacity)
            st = lkv_fail(LKV_INVALID_ARGUMENT,
                          "%s: n_tokens[%d] = %d is out of range: expected 1..%d (capacity)",
                          call, i, n_tokens[i], c->cfg.capacity);
    return st;
}

lkv_status lkv_cache_observe_prompt(lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    return joined != LKV_OK ? joined
                            : lkv_engine_prompt(c, layer, io, "lkv_cache_observe_prompt");
}

lkv_status lkv_engine_prompt(lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io,
                             const char *call)
{
    return lkv_engine_prompt_given(c, layer, io, NULL, call);
}

lkv_status lkv_engine_prompt_given(lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io,
                                   const lkv_buffer *dev, const char *call)
{
    lkv_status st = lkv_engine_check_prompt(c, io, layer, io ? io->sequences : NULL,
                                            io ? io->n_sequences : 0, io ? io->n_tokens : NULL,
                                            call);
    if (st == LKV_OK)
        st = check_votes(c, layer, io, dev != NULL, call);
    if (st != LKV_OK)
        return st;
    lkv_prefill_batch_io b = {
        .n_sequences = io->n_sequences, .sequences = io->sequences, .n_tokens = io->n_tokens,
        .first_position = io->first_position, .memory = LKV_MEMORY_HOST,
    };
    lkv_given g = {.p = io->votes, .stride = io->stride, .engine = 1, .dev = dev};
    return lkv_core_prefill(c, layer, &b, &g, call);
}

static lkv_status plan_reserve(lkv_plan_store *p, int32_t rows, size_t kept)
{
    if (p->n_rows + rows > p->rows_cap) {
        int32_t cap = p->rows_cap ? p->rows_cap : 64;
        while (cap < p->n_rows + rows)
            cap *= 2;
        lkv_plan_row *grown = realloc(p->rows, sizeof *grown * (size_t)cap);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for an eviction plan");
        p->rows = grown;
        int32_t *dev = realloc(p->dev_row, sizeof *dev * (size_t)cap);
        if (!dev)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for an eviction plan");
        p->dev_row = dev;
        p->rows_cap = cap;
    }
    if (p->kept_used + kept > p->kept_cap) {
        size_t cap = p->kept_cap ? p->kept_cap : 4096;
        while (cap < p->kept_used + kept)
            cap *= 2;
        int32_t *grown = realloc(p->kept, sizeof *grown * cap);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for an eviction plan");
        /* rows point into the pool: move them with it */
        for (int32_t r = 0; r < p->n_rows; r++)
            p->rows[r].kept = grown + (p->rows[r].kept - p->kept);
        p->kept = grown;
        p->kept_cap = cap;
    }
    return LKV_OK;
}

void lkv_plan_reset(lkv_plan_store *p)
{
    p->n_rows = 0;
    p->n_read = 0;
    p->kept_used = 0;
    if (p->id) /* the previous plan is stale from here on */
        p->serial = lkv_plan_registry_advance(p->reg);
}

lkv_eviction_plan lkv_plan_of(const lkv_cache *c)
{
    return (lkv_eviction_plan){
        .n_rows = c->plan.n_rows, .rows = c->plan.rows, .cache = c->plan.id,
        .call = c->plan.serial, .layers = c->cfg.layers, .heads = c->heads,
        .head_dim = c->cfg.head_dim, .sequences = c->cfg.sequences,
    };
}

/* The rows of one eviction batch, their kept lists left on the device (room
 * for them kept on the host, so reading them later cannot fail for it). */
lkv_status lkv_plan_record(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs, int32_t keep)
{
    lkv_plan_store *p = &c->plan;
    int32_t rows = n_pairs * c->heads;
    lkv_status st = plan_reserve(p, rows, (size_t)rows * (size_t)keep);
    for (int32_t r = 0; r < rows && st == LKV_OK; r++) {
        p->dev_row[p->n_rows] = c->rows[r];
        p->rows[p->n_rows++] = (lkv_plan_row){
            .sequence = pairs[r / c->heads].seq, .layer = pairs[r / c->heads].layer,
            .head = r % c->heads, .n_before = c->row_n[r], .n_kept = keep,
            .kept = p->kept + p->kept_used,
        };
        p->kept_used += (size_t)keep;
    }
    return st;
}

/* The unread rows' kept lists gathered device to device into one staging
 * buffer (queued copies), then read back in one read: one host wait
 * however many rows the plan has. */
lkv_status lkv_plan_read(lkv_cache *c)
{
    lkv_plan_store *p = &c->plan;
    if (p->n_read == p->n_rows)
        return LKV_OK;
    const lkv_plan_row *first = &p->rows[p->n_read];
    size_t words = p->kept_used - (size_t)(first->kept - p->kept);
    lkv_status st = lkv_stage_reserve(c, &c->stage_plan, (words ? words : 1) * 4);
    for (int32_t i = p->n_read, at = 0; i < p->n_rows && st == LKV_OK; i++) {
        size_t off = (size_t)p->dev_row[i] * (size_t)c->cfg.capacity * 4;
        st = c->ops->copy(c->dev, c->stage_plan.buf, (size_t)at * 4, c->kept, off,
                          (size_t)p->rows[i].n_kept * 4);
        at += p->rows[i].n_kept;
    }
    /* the rows' lists are consecutive in the pool, as in the staging */
    if (st == LKV_OK && words)
        st = c->ops->read(c->dev, c->stage_plan.buf, 0, (int32_t *)(uintptr_t)first->kept,
                          words * 4);
    for (; st == LKV_OK && p->n_read < p->n_rows; p->n_read++) {
        lkv_plan_row *r = &p->rows[p->n_read];
        int32_t first_move = 0;
        while (first_move < r->n_kept && r->kept[first_move] == first_move)
            first_move++;
        r->first_move = first_move;
    }
    return st;
}

lkv_status lkv_cache_get_plan(const lkv_cache *c, lkv_eviction_plan *out_plan)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    if (c && !out_plan)
        return lkv_fail_null("lkv_cache_get_plan", "out_plan");
    lkv_status st = check_engine(c, out_plan, "lkv_cache_get_plan");
    if (st != LKV_OK)
        return st;
    /* Reading the kept lists fills in what the cache keeps for this call:
     * the plan does not change, so the cache is const to the caller. */
    st = lkv_plan_read((lkv_cache *)(uintptr_t)c);
    if (st != LKV_OK)
        return st;
    *out_plan = lkv_plan_of(c);
    return LKV_OK;
}
