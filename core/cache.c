/* Cache lifetime, storage, inspection and the per-step primitives that the
 * decode, prefill and scheduler code share. */
#include "cache.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background.h"
#include "lane.h"
#include "pages.h"
#include "error.h"
#include "dtype.h"
#include "plan_registry.h"

#define LKV_MAX_LAYERS 4096
#define LKV_MAX_HEADS 1024
#define LKV_MAX_HEAD_DIM 1024
#define LKV_MAX_SEQUENCES 65536
#define LKV_MAX_CAPACITY (1 << 24)

void lkv_cache_config_init(lkv_cache_config *config)
{
    if (!config)
        return;
    memset(config, 0, sizeof *config);
    config->layers = 1;
    config->q_heads = 1;
    config->kv_heads = 1;
    config->head_dim = 64;
    config->sequences = 1;
    config->capacity = 4096;
    config->dtype = LKV_DTYPE_F32;
    config->gqa = LKV_GQA_GROUPED;
    lkv_policy_init(&config->policy, LKV_POLICY_FULL);
}

static lkv_status check_int(const char *name, int32_t v, int32_t lo, int32_t hi)
{
    if (v < lo || v > hi)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s %d is out of range: expected %d..%d", name, v,
                        lo, hi);
    return LKV_OK;
}

static lkv_status check_shape(const lkv_cache_config *c)
{
    lkv_status st = check_int("layers", c->layers, 1, LKV_MAX_LAYERS);
    if (st == LKV_OK)
        st = check_int("q_heads", c->q_heads, 1, LKV_MAX_HEADS);
    if (st == LKV_OK)
        st = check_int("kv_heads", c->kv_heads, 1, LKV_MAX_HEADS);
    if (st == LKV_OK)
        st = check_int("head_dim", c->head_dim, 1, LKV_MAX_HEAD_DIM);
    if (st == LKV_OK)
        st = check_int("sequences", c->sequences, 1, LKV_MAX_SEQUENCES);
    if (st == LKV_OK)
        st = check_int("capacity", c->capacity, 1, LKV_MAX_CAPACITY);
    if (st != LKV_OK)
        return st;
    if (c->q_heads % c->kv_heads != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "kv_heads %d does not divide q_heads %d: GQA needs whole groups",
                        c->kv_heads, c->q_heads);
    if (!lkv_dtype_name(c->dtype))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "dtype %d is not LKV_DTYPE_F32, LKV_DTYPE_F16 or LKV_DTYPE_BF16",
                        (int)c->dtype);
    if (c->gqa != LKV_GQA_GROUPED && c->gqa != LKV_GQA_EXPANDED)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gqa mode %d is not grouped or expanded", (int)c->gqa);
    if (!isfinite(c->scale) || c->scale < 0.0f)
        return lkv_fail(LKV_INVALID_ARGUMENT, "scale %g is invalid: expected 0 (default) or > 0",
                        c->scale);
    if (c->kv_owner != LKV_KV_OWNED && c->kv_owner != LKV_KV_ENGINE)
        return lkv_fail(LKV_INVALID_ARGUMENT, "kv_owner %d is not LKV_KV_OWNED or LKV_KV_ENGINE",
                        (int)c->kv_owner);
    if (c->eviction != LKV_EVICTION_INLINE && c->eviction != LKV_EVICTION_BACKGROUND)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "eviction %d is not LKV_EVICTION_INLINE or LKV_EVICTION_BACKGROUND",
                        (int)c->eviction);
    if (!lkv_granularity_name(c->granularity))
        return lkv_fail(LKV_INVALID_ARGUMENT, "granularity %d is not head, layer or token",
                        (int)c->granularity);
    if (c->policy.group_reduce != LKV_REDUCE_DEFAULT && c->policy.group_reduce != LKV_REDUCE_MAX &&
        c->policy.group_reduce != LKV_REDUCE_MEAN)
        return lkv_fail(LKV_INVALID_ARGUMENT, "group_reduce %d is not default, max or mean",
                        (int)c->policy.group_reduce);
    return LKV_OK;
}

/* rkv scores the keys themselves: an engine-owned cache holds none, and a
 * backend without the redundancy op cannot run it. */
static lkv_status keys_check(const lkv_cache_config *c, const lkv_backend_ops *ops)
{
    if (c->policy.kind != LKV_POLICY_RKV)
        return LKV_OK;
    if (c->kv_owner == LKV_KV_ENGINE)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "policy rkv scores the cached keys' redundancy, which an engine-owned "
                        "cache does not hold: use an owned cache");
    if (!ops->redundancy)
        return lkv_fail(LKV_UNSUPPORTED,
                        "backend %s has no redundancy op, which policy rkv needs", ops->name);
    return LKV_OK;
}

static void free_buffers(lkv_cache *c)
{
    lkv_buffer *all[] = {c->buf.k,       c->buf.v,         c->buf.pos,       c->buf.state_a,
                         c->buf.state_b, c->buf.state_f,   c->buf.phys,      c->probs,
                         c->scores,      c->kept,          c->stage_q.buf,   c->stage_k.buf,
                         c->stage_v.buf, c->stage_out.buf, c->stage_p.buf,   c->stage_plan.buf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            c->ops->free(c->dev, all[i]);
}

static lkv_status alloc_buffers(lkv_cache *c)
{
    /* An engine-owned cache keeps a one-element f16 K/V per slot, never
     * read, so that every backend's store and compact serve it unchanged. */
    int engine = c->cfg.kv_owner == LKV_KV_ENGINE;
    c->buf.head_dim = engine ? 1 : c->cfg.head_dim;
    c->buf.dtype = engine ? LKV_DTYPE_F16 : c->cfg.dtype;
    size_t rows = (size_t)c->cfg.sequences * (size_t)c->cfg.layers * (size_t)c->heads;
    size_t slots = rows * (size_t)c->cfg.capacity;
    size_t elem = lkv_dtype_size(c->buf.dtype);
    /* paged: K/V are the pool, every other buffer stays [rows][capacity] */
    int paged = c->cfg.placement == LKV_PLACEMENT_PAGED;
    size_t places = paged ? (size_t)c->cfg.pool_blocks * (size_t)c->cfg.block_size : slots;
    size_t kv_bytes = places * (size_t)c->buf.head_dim * elem;
    if (kv_bytes / elem / (size_t)c->buf.head_dim != places || kv_bytes > ((size_t)1 << 46))
        return lkv_fail(LKV_OUT_OF_MEMORY, "cache of %zu slots x head_dim %d is too large",
                        places, c->cfg.head_dim);
    struct { lkv_buffer **slot; size_t bytes; } plan[] = {
        {&c->buf.k, kv_bytes},          {&c->buf.v, kv_bytes},
        {&c->buf.pos, slots * 4},       {&c->buf.state_a, slots * 4},
        {&c->buf.state_b, slots * 4},   {&c->buf.state_f, slots * 4},
        {&c->probs, slots * 4},         {&c->scores, slots * 4},
        {&c->kept, slots * 4},
        /* the hole map: only where holes are filled */
        {c->cfg.placement != LKV_PLACEMENT_COMPACT ? &c->buf.phys : NULL, slots * 4},
    };
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        if (!plan[i].slot)
            continue;
        lkv_status st = c->ops->alloc(c->dev, plan[i].bytes, plan[i].slot);
        if (st != LKV_OK)
            return st;
    }
    c->buf.capacity = c->cfg.capacity;
    c->buf.paged = paged;
    c->stats.kv_bytes_reserved = engine ? 0 : (int64_t)(2 * kv_bytes);
    lkv_status st = c->ops->check_cache ? c->ops->check_cache(c->dev, &c->buf) : LKV_OK;
    if (st == LKV_OK)
        st = lkv_placement_init(c);
    return st == LKV_OK ? lkv_pages_create(c) : st;
}

static lkv_status alloc_host(lkv_cache *c)
{
    size_t seqs = (size_t)c->cfg.sequences, pairs = seqs * (size_t)c->cfg.layers;
    size_t rows = pairs * (size_t)c->heads;
    c->seqs = calloc(seqs, sizeof *c->seqs);
    c->rows = calloc(rows, sizeof *c->rows);
    c->row_n = calloc(rows, sizeof *c->row_n);
    c->row_k = calloc(rows, sizeof *c->row_k);
    c->row_t = calloc(rows, sizeof *c->row_t);
    c->due_pairs = calloc(pairs, sizeof *c->due_pairs);
    c->listed = calloc(seqs, 1);
    c->seq_steps = calloc(seqs, sizeof *c->seq_steps);
    c->vote_first = calloc(seqs, sizeof *c->vote_first);
    c->vote_token0 = calloc(seqs, sizeof *c->vote_token0);
    c->given_row = calloc((size_t)c->cfg.capacity, sizeof *c->given_row);
    if (!c->seqs || !c->rows || !c->row_n || !c->row_k || !c->row_t || !c->due_pairs ||
        !c->listed || !c->seq_steps || !c->vote_first || !c->vote_token0 || !c->given_row)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for cache bookkeeping");
    for (int32_t s = 0; s < c->cfg.sequences; s++) {
        c->seqs[s].len = calloc((size_t)c->cfg.layers, sizeof(int32_t));
        if (!c->seqs[s].len)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for cache bookkeeping");
    }
    return lkv_lists_reserve(c, c->cfg.sequences);
}

static void free_lists(lkv_batch_lists *l)
{
    int32_t *all[] = {l->row0, l->slot0, l->count, l->src_token, l->position0, l->last_init,
                      l->group_n};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

lkv_status lkv_lists_reserve(lkv_cache *c, int32_t n)
{
    lkv_batch_lists *l = &c->lists;
    if (n <= l->cap)
        return LKV_OK;
    int32_t cap = l->cap ? l->cap : 16;
    while (cap < n)
        cap = cap > INT32_MAX / 2 ? n : cap * 2;
    int32_t **all[] = {&l->row0, &l->slot0, &l->count, &l->src_token, &l->position0,
                       &l->last_init, &l->group_n};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int32_t *grown = realloc(*all[i], (size_t)cap * sizeof(int32_t));
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a batch of %d", n);
        *all[i] = grown;
    }
    l->cap = cap;
    return LKV_OK;
}

lkv_status lkv_stage_reserve(lkv_cache *c, lkv_stage *stage, size_t bytes)
{
    if (stage->buf && stage->bytes >= bytes)
        return LKV_OK;
    size_t grown = stage->bytes ? stage->bytes : 4096;
    while (grown < bytes)
        grown *= 2;
    lkv_buffer *buf = NULL;
    lkv_status st = c->ops->alloc(c->dev, grown, &buf);
    if (st != LKV_OK)
        return lkv_fail_context(st, "staging %zu bytes of batch inputs", bytes);
    if (stage->buf)
        c->ops->free(c->dev, stage->buf);
    stage->buf = buf;
    stage->bytes = grown;
    return LKV_OK;
}

void lkv_cache_destroy(lkv_cache *c)
{
    if (!c)
        return;
    lkv_background_free(c->bg); /* waits for a pending eviction first */
    lkv_lane_close(c);          /* waits for the lane's work */
    if (c->ops)
        free_buffers(c);
    lkv_pages_destroy(c->pages);
    for (int32_t s = 0; c->seqs && s < c->cfg.sequences; s++)
        free(c->seqs[s].len);
    free(c->seqs);
    free(c->rows);
    free(c->row_n);
    free(c->row_k);
    free(c->row_t);
    free(c->due_pairs);
    free(c->listed);
    free(c->seq_steps);
    free(c->vote_first);
    free(c->vote_token0);
    free(c->given_row);
    if (c->plan.id) /* its plans are refused from here on */
        lkv_plan_registry_remove(c->plan.reg);
    free(c->plan.rows);
    free(c->plan.dev_row);
    free(c->plan.kept);
    free_lists(&c->lists);
    free(c->vote_q);
    free(c);
}

lkv_status lkv_cache_create(lkv_runtime *rt, const lkv_cache_config *config,
                            lkv_cache **out_cache)
{
    lkv_clear_error();
    return lkv_cache_create_holding(rt, config, -1, out_cache);
}

lkv_status lkv_cache_create_holding(lkv_runtime *rt, const lkv_cache_config *config,
                                    int64_t max_tokens, lkv_cache **out_cache)
{
    if (!rt || !config || !out_cache)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_cache_create: %s is NULL",
                        !rt ? "rt" : !config ? "config" : "out_cache");
    lkv_status st = check_shape(config);
    if (st != LKV_OK)
        return st;
    const lkv_policy_rules *rules = lkv_policy_rules_of(config->policy.kind);
    if (!rules)
        return lkv_fail(LKV_INVALID_ARGUMENT, "policy kind %d is unknown", (int)config->policy.kind);
    int32_t heads = config->gqa == LKV_GQA_GROUPED ? config->kv_heads : config->q_heads;
    int64_t rows = (int64_t)config->sequences * config->layers * heads;
    if (rows > INT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%d sequences x %d layers x %d cache heads is %lld rows: at most %d",
                        config->sequences, config->layers, heads, (long long)rows, INT32_MAX);
    if ((st = lkv_placement_check(config, rt->ops)) != LKV_OK)
        return st;
    if ((st = keys_check(config, rt->ops)) != LKV_OK)
        return st;
    lkv_cache_config cfg = *config;
    if ((st = rules->check(&cfg.policy, cfg.capacity)) != LKV_OK)
        return st;
    if ((st = lkv_placement_resolve(&cfg, heads)) != LKV_OK)
        return st;
    /* Slots past the most tokens a row will ever hold are never touched. */
    if (max_tokens >= 0 && cfg.capacity > max_tokens + 1)
        cfg.capacity = (int32_t)(max_tokens + 1);
    if (rules->resolve)
        rules->resolve(&cfg.policy);
    if (cfg.policy.group_reduce == LKV_REDUCE_DEFAULT)
        cfg.policy.group_reduce = rules->reduce;

    lkv_cache *c = calloc(1, sizeof *c);
    if (!c)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory creating a cache");
    c->rt = rt;
    c->ops = rt->ops;
    c->dev = rt->dev;
    c->cfg = cfg;
    c->rules = rules;
    c->heads = heads;
    c->group = cfg.q_heads / c->heads;
    c->scale = cfg.scale > 0.0f ? cfg.scale : (float)(1.0 / sqrt((double)cfg.head_dim));
    if ((st = alloc_host(c)) != LKV_OK || (st = alloc_buffers(c)) != LKV_OK) {
        lkv_cache_destroy(c);
        return st;
    }
    if ((st = lkv_lane_open(c)) != LKV_OK) {
        lkv_cache_destroy(c);
        return st;
    }
    if (cfg.kv_owner == LKV_KV_ENGINE &&
        (st = lkv_plan_registry_add(&c->plan.id, &c->plan.reg)) != LKV_OK) {
        lkv_cache_destroy(c);
        return st;
    }
    /* Without the helper's memory the evictions run inline: same results. */
    if (cfg.eviction == LKV_EVICTION_BACKGROUND && !c->lane)
        c->bg = lkv_background_create(cfg.sequences);
    *out_cache = c;
    return LKV_OK;
}

lkv_status lkv_cache_get_config(const lkv_cache *c, lkv_cache_config *out_config)
{
    lkv_clear_error();
    if (!c || !out_config)
        return lkv_fail_null("lkv_cache_get_config", !c ? "cache" : "out_config");
    *out_config = c->cfg;
    return LKV_OK;
}

int32_t lkv_cache_heads(const lkv_cache *c) { return c ? c->heads : 0; }

lkv_status lkv_cache_get_stats(const lkv_cache *c, lkv_cache_stats *out_stats)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    if (!c || !out_stats)
        return lkv_fail_null("lkv_cache_get_stats", !c ? "cache" : "out_stats");
    int64_t per_slot = 2LL * c->cfg.head_dim * (int64_t)lkv_dtype_size(c->cfg.dtype);
    *out_stats = c->stats;
    out_stats->kv_bytes_in_use = c->stats.slots_in_use * per_slot;
    out_stats->kv_bytes_peak = c->stats.peak_slots * per_slot;
    out_stats->eviction_lane = c->lane != NULL;
    return LKV_OK;
}

lkv_status lkv_cache_join(const lkv_cache *c)
{
    return c ? (c->lane ? lkv_lane_join(c) : lkv_background_join(c->bg)) : LKV_OK;
}

lkv_status lkv_cache_join_layer(const lkv_cache *c, int32_t layer)
{
    if (c && c->lane && layer >= 0 && layer < c->cfg.layers)
        return lkv_lane_join_layer(c, layer);
    return lkv_cache_join(c);
}

lkv_status lkv_check_owner(const lkv_cache *c, const lkv_given *given, const char *call,
                           const char *owned_call, const char *engine_call)
{
    int engine_io = given && given->engine;
    if (!c || (c->cfg.kv_owner == LKV_KV_ENGINE) == engine_io)
        return LKV_OK;
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    engine_io ? "%s: the cache owns its K/V (kv_owner LKV_KV_OWNED): use %s"
                              : "%s: the engine owns this cache's K/V (kv_owner LKV_KV_ENGINE): "
                                "hand its attention to %s",
                    call, engine_io ? owned_call : engine_call);
}

lkv_status lkv_check_seq(const lkv_cache *c, int32_t seq)
{
    if (!c)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cache is NULL");
    if (seq < 0 || seq >= c->cfg.sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "sequence %d is out of range: the cache holds %d",
                        seq, c->cfg.sequences);
    return LKV_OK;
}

lkv_status lkv_cache_sequence_info(const lkv_cache *c, int32_t seq, int32_t *out_length,
                                   int32_t *out_step)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_seq(c, seq);
    if (st != LKV_OK)
        return st;
    if (out_length)
        *out_length = c->seqs[seq].len[0];
    if (out_step)
        *out_step = c->seqs[seq].t;
    return LKV_OK;
}

lkv_status lkv_cache_read_slots(const lkv_cache *c, int32_t seq, int32_t layer, int32_t head,
                                lkv_slot_view *view, int32_t *out_n)
{
    lkv_clear_error();
    lkv_status joined = lkv_cache_join(c);
    if (joined != LKV_OK)
        return joined;
    lkv_status st = lkv_check_seq(c, seq);
    if (st != LKV_OK)
        return st;
    if (layer < 0 || layer >= c->cfg.layers || head < 0 || head >= c->heads)
        return lkv_fail(LKV_INVALID_ARGUMENT, "layer %d / head %d out of range (%d layers, %d cache heads)",
                        layer, head, c->cfg.layers, c->heads);
    int32_t n = c->seqs[seq].len[layer];
    if (view && view->cap < n)
        return lkv_fail(LKV_INVALID_ARGUMENT, "slot view has room for %d slots, the head holds %d",
                        view->cap, n);
    size_t off = (size_t)lkv_row_of(c, seq, layer, head) * (size_t)c->cfg.capacity * 4;
    struct { lkv_buffer *src; void *dst; } parts[] = {
        {c->buf.pos, view ? view->positions : NULL},
        {c->buf.state_a, view ? view->state_a : NULL},
        {c->buf.state_b, view ? view->state_b : NULL},
        {c->buf.state_f, view ? (void *)view->state_f : NULL},
    };
    for (size_t i = 0; i < 4 && st == LKV_OK; i++)
        if (parts[i].dst)
            st = c->ops->read(c->dev, parts[i].src, off, parts[i].dst, (size_t)n * 4);
    if (st == LKV_OK && out_n)
        *out_n = n;
    return st;
}

lkv_status lkv_check_call(const lkv_cache *c, const void *io, const char *call, int32_t seq,
                          int32_t layer)
{
    if (!c || !io)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call, c ? "io" : "cache");
    lkv_status st = lkv_check_seq(c, seq);
    if (st != LKV_OK)
        return st;
    if (layer < 0 || layer >= c->cfg.layers)
        return lkv_fail(LKV_INVALID_ARGUMENT, "layer %d is out of range: the cache has %d", layer,
                        c->cfg.layers);
    return LKV_OK;
}

lkv_status lkv_check_list(lkv_cache *c, const int32_t *seqs, int32_t n, const char *call)
{
    if (n < 1 || n > c->cfg.sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: n_sequences %d is out of range: expected 1..%d",
                        call, n, c->cfg.sequences);
    if (!seqs)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequences is NULL", call);
    lkv_status st = LKV_OK;
    int32_t i = 0;
    for (; i < n && st == LKV_OK; i++) {
        if ((st = lkv_check_seq(c, seqs[i])) != LKV_OK)
            st = lkv_fail_context(st, "%s: sequences[%d]", call, i);
        else if (c->listed[seqs[i]])
            st = lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d is listed twice (sequences[%d])",
                          call, seqs[i], i);
        else
            c->listed[seqs[i]] = 1;
    }
    for (int32_t j = 0; j < i; j++)
        if (seqs[j] >= 0 && seqs[j] < c->cfg.sequences)
            c->listed[seqs[j]] = 0;
    return st;
}

lkv_status lkv_check_batch(lkv_cache *c, const void *io, int32_t layer, const int32_t *seqs,
                           int32_t n, lkv_memory memory, const char *call)
{
    if (!c || !io)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call, c ? "io" : "cache");
    if (layer < 0 || layer >= c->cfg.layers)
        return lkv_fail(LKV_INVALID_ARGUMENT, "layer %d is out of range: the cache has %d", layer,
                        c->cfg.layers);
    lkv_status st = lkv_check_list(c, seqs, n, call);
    return st == LKV_OK ? lkv_check_memory(c, memory, call) : st;
}

lkv_status lkv_check_memory(const lkv_cache *c, lkv_memory memory, const char *call)
{
    if (memory == LKV_MEMORY_HOST)
        return LKV_OK;
    if (memory != LKV_MEMORY_DEVICE)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: memory kind %d is neither LKV_MEMORY_HOST nor LKV_MEMORY_DEVICE", call,
                        (int)memory);
    if (!c->ops->wrap || !c->ops->store)
        return lkv_fail(LKV_UNSUPPORTED, "%s: backend %s does not take device memory (yet)", call,
                        c->ops->name);
    return LKV_OK;
}

lkv_status lkv_check_input(const lkv_cache *c, const float *x, size_t count, int32_t width,
                           const char *what, int stored, int32_t seq, int32_t layer)
{
    /* f16 and bf16 storage turn anything above their largest finite value
     * into inf, and inf into NaN attention: refuse it here rather than
     * corrupt a head. */
    const float limit = stored ? lkv_dtype_largest(c->cfg.dtype) : FLT_MAX;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(x[i]))
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s[%zu][%zu] is %s (sequence %d, layer %d): inputs must be finite",
                            what, i / (size_t)width, i % (size_t)width,
                            isnan(x[i]) ? "NaN" : "infinite", seq, layer);
        if (fabsf(x[i]) > limit)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s[%zu][%zu] = %g (sequence %d, layer %d) overflows %s storage "
                            "(largest %g): scale the input or use f32 storage",
                            what, i / (size_t)width, i % (size_t)width, (double)x[i], seq, layer,
                            lkv_dtype_name(c->cfg.dtype), (double)limit);
    }
    return LKV_OK;
}

lkv_status lkv_cache_write_rows(lkv_cache *c, int32_t seq, int32_t layer, lkv_buffer *dst,
                                const float *src, int32_t n)
{
    lkv_status st = LKV_OK;
    for (int32_t h = 0; h < c->heads && st == LKV_OK; h++) {
        size_t off = (size_t)lkv_row_of(c, seq, layer, h) * (size_t)c->cfg.capacity * 4;
        st = c->ops->write(c->dev, dst, off, src + (size_t)h * (size_t)n, (size_t)n * 4);
    }
    return st;
}

void lkv_cache_unappend(lkv_cache *c, int32_t seq, int32_t layer, int32_t count)
{
    c->seqs[seq].len[layer] -= count;
    c->stats.slots_in_use -= (int64_t)count * c->heads;
    /* the peak stays: the slots were really held for a moment */
}

