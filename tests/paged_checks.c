#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "paged_checks.h"
#include "twin_caches.h"

lkv_cache *pc_make(lkv_runtime *rt, lkv_cache_config cfg, lkv_placement placement,
                   int32_t block, int32_t pool)
{
    cfg.placement = placement;
    cfg.block_size = block;
    cfg.pool_blocks = pool;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

void pc_expect_pool_holds_twin(const lkv_cache *compact, const lkv_cache *paged, int forked,
                               const char *what)
{
    lkv_cache_config pc;
    TU_OK(lkv_cache_get_config(paged, &pc));
    int32_t cap = paged->cfg.capacity, block = pc.block_size;
    size_t rows = (size_t)pc.sequences * (size_t)pc.layers * (size_t)paged->heads;
    size_t kv_row = (size_t)pc.head_dim * lkv_dtype_size(pc.dtype);
    size_t places = (size_t)pc.pool_blocks * (size_t)block;
    int32_t *map = malloc(rows * (size_t)cap * 4);
    unsigned char *dense = malloc(rows * (size_t)cap * kv_row), *pool = malloc(places * kv_row);
    unsigned char *seen = calloc(places, 1), *used = calloc((size_t)pc.pool_blocks, 1);
    cr_assert(map && dense && pool && seen && used);
    TU_OK(paged->ops->read(paged->dev, paged->buf.phys, 0, map, rows * (size_t)cap * 4));
    TU_OK(paged->ops->read(paged->dev, paged->buf.k, 0, pool, places * kv_row));
    TU_OK(compact->ops->read(compact->dev, compact->buf.k, 0, dense, rows * (size_t)cap * kv_row));
    int64_t blocks = 0;
    for (size_t r = 0; r < rows; r++) {
        int32_t seq = (int32_t)(r / ((size_t)pc.layers * (size_t)paged->heads));
        int32_t layer = (int32_t)(r / (size_t)paged->heads % (size_t)pc.layers);
        int32_t n = paged->seqs[seq].len[layer];
        for (int32_t j = 0; j < n; j++) {
            int32_t at = map[r * (size_t)cap + (size_t)j];
            cr_assert(at >= 0 && (size_t)at < places, "%s: row %zu slot %d at place %d of %zu",
                      what, r, j, at, places);
            cr_assert(forked || !seen[at], "%s: place %d serves two slots", what, at);
            seen[at] = 1;
            blocks += !used[at / block];
            used[at / block] = 1;
            cr_assert(!memcmp(pool + (size_t)at * kv_row,
                              dense + (r * (size_t)cap + (size_t)j) * kv_row, kv_row),
                      "%s: row %zu slot %d: K at place %d is not the compacting cache's", what, r,
                      j, at);
        }
    }
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(paged, &st));
    cr_expect_leq(blocks, st.blocks_in_use, "%s: slots use %lld blocks, %lld counted", what,
                 (long long)blocks, (long long)st.blocks_in_use);
    cr_expect_leq(st.blocks_in_use, st.blocks_peak);
    free(map);
    free(dense);
    free(pool);
    free(seen);
    free(used);
}

void pc_run_twins(lkv_runtime *rt, lkv_dtype dtype, lkv_gqa_mode gqa, lkv_eviction_timing when,
                  int32_t block)
{
    for (size_t i = 0; i < TWIN_POLICIES; i++) {
        lkv_policy_kind kind = twin_every_policy[i];
        lkv_cache_config cfg = twin_config(kind);
        cfg.dtype = dtype;
        cfg.gqa = gqa;
        cfg.eviction = when;
        lkv_cache *compact = pc_make(rt, cfg, LKV_PLACEMENT_COMPACT, 0, 0);
        lkv_cache *paged = pc_make(rt, cfg, LKV_PLACEMENT_PAGED, block, 0);
        char what[64];
        snprintf(what, sizeof what, "%s block %d", lkv_policy_name(kind), block);
        twin_run(compact, paged, 31 + (uint64_t)kind, 60, what);
        pc_expect_pool_holds_twin(compact, paged, 0, what);
        lkv_cache_stats st;
        TU_OK(lkv_cache_get_stats(paged, &st));
        cr_expect(kind == LKV_POLICY_FULL || st.evictions > 0, "%s: no eviction to test", what);
        lkv_cache_destroy(compact);
        lkv_cache_destroy(paged);
    }
}

/* paged_checks.h says what and why. */
void pc_expect_blocks_come_back(lkv_runtime *rt)
{
    enum { L = 2, QH = 2, KVH = 2, D = 8, CAP = 96, P = 80, BLOCK = 4, ROWS = L * KVH };
    lkv_cache_config cfg = tu_config(L, QH, KVH, D, CAP);
    cfg.sequences = 2;
    lkv_policy_init(&cfg.policy, LKV_POLICY_STREAMING);
    cfg.policy.budget = 20;
    lkv_cache *compact = pc_make(rt, cfg, LKV_PLACEMENT_COMPACT, 0, 0);
    lkv_cache *paged =
        pc_make(rt, cfg, LKV_PLACEMENT_PAGED, BLOCK, ROWS * (P / BLOCK + 7));
    uint64_t rng = 5;
    float *q = tu_alloc_normal((size_t)P * QH * D, &rng, 2.0);
    float *k = tu_alloc_normal((size_t)P * KVH * D, &rng, 1.0);
    float *v = tu_alloc_normal((size_t)P * KVH * D, &rng, 1.0);
    for (int32_t l = 0; l < L; l++) {
        lkv_prefill_io io = {.n_tokens = P, .q = q, .k = k, .v = v};
        TU_OK(lkv_cache_prefill(compact, 0, l, &io));
        TU_OK(lkv_cache_prefill(paged, 0, l, &io));
    }
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(paged, &st));
    cr_expect_eq(st.blocks_in_use, ROWS * P / BLOCK, "the prompt took %lld blocks",
                 (long long)st.blocks_in_use);
    float oa[QH * D], ob[QH * D];
    for (int32_t t = 0; t < 100; t++) {
        tu_fill_normal(q, QH * D, &rng, 2.0);
        tu_fill_normal(k, KVH * D, &rng, 1.0);
        tu_fill_normal(v, KVH * D, &rng, 1.0);
        for (int32_t l = 0; l < L; l++) {
            lkv_decode_io da = {q, k, v, oa, LKV_MEMORY_HOST}, db = {q, k, v, ob, LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(compact, 0, l, &da));
            TU_OK(lkv_cache_decode(paged, 0, l, &db));
            cr_assert(!memcmp(oa, ob, sizeof oa), "step %d layer %d: outputs differ", t, l);
        }
        if (t == 0) {
            TU_OK(lkv_cache_get_stats(paged, &st));
            cr_expect_leq(st.blocks_in_use, ROWS * 7, "%lld blocks held after the prompt's "
                          "eviction", (long long)st.blocks_in_use);
        }
    }
    TU_OK(lkv_cache_get_stats(paged, &st));
    cr_expect_leq(st.blocks_in_use, ROWS * 7, "%lld blocks held", (long long)st.blocks_in_use);
    pc_expect_pool_holds_twin(compact, paged, 0, "streaming");
    for (int32_t l = 0; l < L; l++) {
        lkv_prefill_io io = {.n_tokens = P, .q = q, .k = k, .v = v};
        TU_OK(lkv_cache_prefill(paged, 1, l, &io));
    }
    TU_OK(lkv_cache_reset_sequence(paged, 0));
    TU_OK(lkv_cache_reset_sequence(paged, 1));
    TU_OK(lkv_cache_get_stats(paged, &st));
    cr_expect_eq(st.blocks_in_use, 0, "%lld blocks held after reset", (long long)st.blocks_in_use);
    free(q);
    free(k);
    free(v);
    lkv_cache_destroy(compact);
    lkv_cache_destroy(paged);
}
