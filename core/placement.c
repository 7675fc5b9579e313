/* Hole filling in caches that own their K/V (lkv_placement): the per-row
 * map of where each slot's K/V lies (lkv_cache_buffers.phys), its names,
 * the checks at create and its starting value. The ops keep the map; core
 * only makes it and copies it with a sequence's rows, and in a paged cache
 * fills its rows' places as blocks come (pages.c). */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"

static const char *const names[] = {"compact", "holes", "paged"};

const char *lkv_placement_name(lkv_placement p)
{
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : NULL;
}

lkv_status lkv_placement_from_name(const char *name, lkv_placement *out)
{
    lkv_clear_error();
    if (!name || !out)
        return lkv_fail_null("lkv_placement_from_name", !name ? "name" : "out_placement");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (lkv_placement)i;
            return LKV_OK;
        }
    return lkv_fail(LKV_INVALID_ARGUMENT, "placement \"%s\" is not compact, holes or paged", name);
}

lkv_status lkv_placement_check(const lkv_cache_config *cfg, const lkv_backend_ops *ops)
{
    if (!lkv_placement_name(cfg->placement))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "placement %d is not LKV_PLACEMENT_COMPACT, LKV_PLACEMENT_HOLES or "
                        "LKV_PLACEMENT_PAGED",
                        (int)cfg->placement);
    const char *name = lkv_placement_name(cfg->placement);
    if (cfg->placement != LKV_PLACEMENT_PAGED && (cfg->block_size || cfg->pool_blocks))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "block_size %d and pool_blocks %d are for placement paged, not %s: "
                        "leave them 0",
                        cfg->block_size, cfg->pool_blocks, name);
    if (cfg->placement == LKV_PLACEMENT_COMPACT)
        return LKV_OK;
    if (cfg->kv_owner == LKV_KV_ENGINE)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "placement %s is for a cache that owns its K/V: an engine-owned "
                        "cache places its tokens with lkv_slot_map",
                        name);
    if (!ops->holes)
        return lkv_fail(LKV_UNSUPPORTED,
                        "backend %s cannot fill holes (its attention reads K/V in slot "
                        "order): use placement compact",
                        ops->name);
    if (cfg->placement == LKV_PLACEMENT_PAGED && !ops->paged)
        return lkv_fail(LKV_UNSUPPORTED,
                        "backend %s has no paged K/V pool (its kernels address K/V by row): "
                        "use placement holes or compact",
                        ops->name);
    return LKV_OK;
}

lkv_status lkv_placement_resolve(lkv_cache_config *cfg, int32_t heads)
{
    if (cfg->placement != LKV_PLACEMENT_PAGED)
        return LKV_OK;
    if (cfg->block_size == 0)
        cfg->block_size = cfg->capacity < 16 ? cfg->capacity : 16;
    if (cfg->block_size < 1 || cfg->block_size > cfg->capacity)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "block_size %d is out of range: expected 1..%d (the capacity), or 0 "
                        "for 16",
                        cfg->block_size, cfg->capacity);
    int64_t per_row = (cfg->capacity + cfg->block_size - 1) / cfg->block_size;
    int64_t every = (int64_t)cfg->sequences * cfg->layers * heads * per_row;
    if (cfg->pool_blocks == 0 && every > INT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "every row at capacity is %lld blocks of %d, more than a pool holds "
                        "(%d): set pool_blocks",
                        (long long)every, cfg->block_size, INT32_MAX);
    if (cfg->pool_blocks == 0)
        cfg->pool_blocks = (int32_t)every;
    if (cfg->pool_blocks < per_row)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "pool_blocks %d is below one row at capacity (%lld blocks of %d): "
                        "expected at least that, or 0 for every row",
                        cfg->pool_blocks, (long long)per_row, cfg->block_size);
    return LKV_OK;
}

/* Every row starts as the identity: slot j's K/V at place j. One row's
 * worth of host memory, written row by row. */
lkv_status lkv_placement_init(lkv_cache *c)
{
    if (!c->buf.phys || c->buf.paged) /* a paged row has no places until it takes a block */
        return LKV_OK;
    int32_t cap = c->cfg.capacity;
    int32_t *row = malloc(sizeof(int32_t) * (size_t)cap);
    if (!row)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a hole map row of %d", cap);
    for (int32_t j = 0; j < cap; j++)
        row[j] = j;
    size_t rows = (size_t)c->cfg.sequences * (size_t)c->cfg.layers * (size_t)c->heads;
    size_t bytes = sizeof(int32_t) * (size_t)cap;
    lkv_status st = LKV_OK;
    for (size_t r = 0; r < rows && st == LKV_OK; r++)
        st = c->ops->write(c->dev, c->buf.phys, r * bytes, row, bytes);
    free(row);
    return st;
}
