/* Paged caches (placement = LKV_PLACEMENT_PAGED): K/V in a pool of blocks
 * shared by every sequence. For every policy a paged cache and a compacting
 * one fed the same tokens give the same attention outputs bit for bit and
 * hold the same slots, state and counters (ref and cpu, block sizes 16, 5
 * and 1, f32 grouped and f16 expanded, evictions inline and in the
 * background; 7, which does not divide the capacity); what the buffers
 * hold is read back: every slot's place lies
 * in the pool and holds the compacting cache's K, no two slots share a
 * place unless forked, and the blocks the maps use are the ones counted.
 * An eviction that empties blocks gives them back; a pool too small for a
 * call refuses it naming the counts and changes nothing, and a reset
 * sequence's blocks serve another; fork shares blocks and copies one only
 * when a store lands in it. Bad settings and backends without a pool are
 * refused naming them. The same twins on Vulkan (lavapipe) and OpenCL
 * (PoCL), the latter also with its bindings cut to 64 KiB, where a pool
 * past one binding is refused at create. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "paged_checks.h"
#include "twin_caches.h"

Test(paged, every_policy_on_ref_computes_as_compaction)
{
    pc_run_twins(tu_runtime(), LKV_DTYPE_F32, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 16);
    pc_run_twins(tu_runtime(), LKV_DTYPE_BF16, LKV_GQA_EXPANDED, LKV_EVICTION_INLINE, 5);
    /* 7 does not divide the capacity (96): a row's last block is cut */
    pc_run_twins(tu_runtime(), LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_BACKGROUND, 7);
}

Test(paged, every_policy_on_cpu_computes_as_compaction)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    pc_run_twins(rt, LKV_DTYPE_F32, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 5);
    pc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_EXPANDED, LKV_EVICTION_BACKGROUND, 16);
    pc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 1);
    lkv_runtime_close(rt);
}

/* A pool shorter than every row at capacity (paged_checks.h's
 * pc_expect_blocks_come_back), on ref and, where they are, on lavapipe and
 * PoCL, whose store and attend once bounded a paged cache's rows by its
 * K/V pool as if it were rows. */
Test(paged, an_eviction_that_empties_blocks_gives_them_back, .timeout = 300)
{
    pc_expect_blocks_come_back(tu_runtime());
    const char *gpus[] = {"vulkan", "opencl"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        lkv_runtime *rt = tu_open_backend(gpus[i]);
        if (!rt)
            continue;
        pc_expect_blocks_come_back(rt);
        lkv_runtime_close(rt);
    }
}

static void prompt(lkv_cache *c, int32_t seq, int32_t n, uint64_t seed, lkv_status want)
{
    enum { QH = 2, KVH = 1, D = 4 };
    uint64_t rng = seed;
    float *q = tu_alloc_normal((size_t)n * QH * D, &rng, 1.0);
    float *k = tu_alloc_normal((size_t)n * KVH * D, &rng, 1.0);
    float *v = tu_alloc_normal((size_t)n * KVH * D, &rng, 1.0);
    lkv_prefill_io io = {.n_tokens = n, .q = q, .k = k, .v = v};
    cr_expect_eq(lkv_cache_prefill(c, seq, 0, &io), want, "%s", lkv_last_error());
    free(q);
    free(k);
    free(v);
}

/* A pool of 10 blocks of 4 in a cache of 3 sequences: two prompts of 16
 * take 8; a third is refused, naming the counts, and nothing changes;
 * once a sequence is reset its blocks serve the third. */
Test(paged, a_short_pool_refuses_a_call_and_a_reset_frees_room)
{
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 32);
    cfg.sequences = 3;
    lkv_cache *c = pc_make(tu_runtime(), cfg, LKV_PLACEMENT_PAGED, 4, 10);
    prompt(c, 0, 16, 1, LKV_OK);
    prompt(c, 1, 16, 2, LKV_OK);
    lkv_cache_stats before, after;
    TU_OK(lkv_cache_get_stats(c, &before));
    cr_expect_eq(before.blocks_in_use, 8);
    prompt(c, 2, 16, 3, LKV_OUT_OF_MEMORY);
    cr_expect(strstr(lkv_last_error(), "needs 4 blocks") && strstr(lkv_last_error(), "2 free of 10"),
              "%s", lkv_last_error());
    TU_OK(lkv_cache_get_stats(c, &after));
    cr_expect(!memcmp(&before, &after, sizeof before), "the refused call changed the stats");
    int32_t len = -1, step = -1;
    TU_OK(lkv_cache_sequence_info(c, 2, &len, &step));
    cr_expect_eq(len, 0);
    /* one decode step past the pool: refused the same way */
    float q[8] = {0}, kv[4] = {0}, out[8];
    lkv_decode_io io = {q, kv, kv, out, LKV_MEMORY_HOST};
    prompt(c, 2, 8, 4, LKV_OK); /* 2 blocks: the pool is full */
    cr_expect_eq(lkv_cache_decode(c, 2, 0, &io), LKV_OUT_OF_MEMORY);
    TU_OK(lkv_cache_sequence_info(c, 2, &len, &step));
    cr_expect(len == 8 && step == 0, "sequence 2 holds %d at step %d", len, step);
    TU_OK(lkv_cache_reset_sequence(c, 0));
    TU_OK(lkv_cache_decode(c, 2, 0, &io));
    prompt(c, 0, 12, 5, LKV_OK);
    TU_OK(lkv_cache_get_stats(c, &after));
    cr_expect_eq(after.blocks_in_use, 4 + 3 + 3, "%lld", (long long)after.blocks_in_use);
    lkv_cache_destroy(c);
}

/* Fork shares blocks: no block is taken at the fork, and the first steps
 * of the three sequences copy only blocks their new tokens land in (one a
 * row at most) or take new ones; twins compare as everywhere. */
Test(paged, fork_shares_blocks_and_copies_one_on_write)
{
    lkv_cache_config cfg = twin_config(LKV_POLICY_LAZY);
    lkv_cache *a = pc_make(tu_runtime(), cfg, LKV_PLACEMENT_COMPACT, 0, 0);
    lkv_cache *b = pc_make(tu_runtime(), cfg, LKV_PLACEMENT_PAGED, 4, 0);
    int32_t rows = TWIN_LAYERS * lkv_cache_heads(b);
    uint64_t rng = 12;
    enum { QW = TWIN_QH * TWIN_D, KW = TWIN_KVH * TWIN_D };
    float q[3 * QW], k[3 * KW], v[3 * KW];
    lkv_cache_stats st;
    int64_t at_fork = 0;
    for (int32_t t = 0; t < 70; t++) {
        int32_t n = t < 30 ? 1 : 3;
        if (t == 30) {
            TU_OK(lkv_cache_get_stats(b, &st));
            at_fork = st.blocks_in_use;
            for (int32_t s = 1; s < 3; s++) {
                TU_OK(lkv_cache_fork_sequence(a, 0, s));
                TU_OK(lkv_cache_fork_sequence(b, 0, s));
            }
            TU_OK(lkv_cache_get_stats(b, &st));
            cr_expect_eq(st.blocks_in_use, at_fork, "fork took blocks: %lld -> %lld",
                         (long long)at_fork, (long long)st.blocks_in_use);
        }
        if (t == 45) {
            TU_OK(lkv_cache_truncate_sequence(a, 1, 2));
            TU_OK(lkv_cache_truncate_sequence(b, 1, 2));
            TU_OK(lkv_cache_reset_sequence(a, 2));
            TU_OK(lkv_cache_reset_sequence(b, 2));
        }
        tu_fill_normal(q, (size_t)n * QW, &rng, 2.0);
        tu_fill_normal(k, (size_t)n * KW, &rng, 1.0);
        tu_fill_normal(v, (size_t)n * KW, &rng, 1.0);
        twin_step(a, b, n, q, k, v, "lazy fork", t);
        twin_same_state(a, b, "lazy fork", t);
        if (t == 30) {
            TU_OK(lkv_cache_get_stats(b, &st));
            cr_expect_leq(st.blocks_in_use, at_fork + 3 * rows,
                         "one step after the fork: %lld blocks from %lld", 
                         (long long)st.blocks_in_use, (long long)at_fork);
            pc_expect_pool_holds_twin(a, b, 1, "after the fork");
        }
    }
    pc_expect_pool_holds_twin(a, b, 1, "lazy fork");
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
}

Test(paged, bad_settings_are_refused_naming_them)
{
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 32);
    lkv_cache *c = NULL;
    cfg.block_size = 16;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "block_size 16") && strstr(lkv_last_error(), "compact"),
              "%s", lkv_last_error());
    cfg.placement = LKV_PLACEMENT_PAGED;
    cfg.block_size = 33;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "block_size 33"), "%s", lkv_last_error());
    cfg.block_size = 8;
    cfg.pool_blocks = 3;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "pool_blocks 3"), "%s", lkv_last_error());
    cfg.pool_blocks = -1;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cfg.pool_blocks = 0;
    cfg.kv_owner = LKV_KV_ENGINE;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "placement paged"), "%s", lkv_last_error());
    cr_expect_null(c);
    cfg.kv_owner = LKV_KV_OWNED;
    TU_OK(lkv_cache_create(tu_runtime(), &cfg, &c));
    lkv_cache_config got;
    TU_OK(lkv_cache_get_config(c, &got));
    cr_expect(got.block_size == 8 && got.pool_blocks == 4, "block %d pool %d", got.block_size,
              got.pool_blocks);
    lkv_cache_destroy(c);
    lkv_placement p = LKV_PLACEMENT_COMPACT;
    TU_OK(lkv_placement_from_name("paged", &p));
    cr_expect_eq(p, LKV_PLACEMENT_PAGED);
    cr_expect_str_eq(lkv_placement_name(p), "paged");
}

/* A backend whose kernels address K/V by row (ops->paged 0) refuses a paged
 * cache, naming itself. */
Test(paged, a_backend_without_a_pool_refuses_it)
{
    lkv_backend_ops rows_only = {.name = "rows-only", .holes = 1, .paged = 0};
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 8);
    cfg.placement = LKV_PLACEMENT_PAGED;
    cr_expect_eq(lkv_placement_check(&cfg, &rows_only), LKV_UNSUPPORTED);
    cr_expect(strstr(lkv_last_error(), "rows-only"), "%s", lkv_last_error());
    rows_only.paged = 1;
    TU_OK(lkv_placement_check(&cfg, &rows_only));
}

/* Vulkan on lavapipe and OpenCL on PoCL where they are (required where
 * LAZYKV_REQUIRE_BACKENDS names them): attend, store and redundancy read and
 * write the pool bound whole (kv_cap 0). head_dim 8 takes the 16-byte
 * kernels. */
Test(paged, every_policy_on_vulkan_and_opencl_computes_as_compaction, .timeout = 600)
{
    setenv("LAZYKV_LANES", "1", 1); /* the background twins evict on a lane (pages trim there) */
    const char *gpus[] = {"vulkan", "opencl"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        lkv_runtime *rt = tu_open_backend(gpus[i]);
        if (!rt)
            continue;
        pc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 5);
        pc_run_twins(rt, LKV_DTYPE_BF16, LKV_GQA_EXPANDED, LKV_EVICTION_BACKGROUND, 16);
        lkv_runtime_close(rt);
    }
}

/* With OpenCL's bindings cut to 64 KiB the metadata and the map are bound
 * as windows and the pool whole: a pool within one binding runs as
 * compaction does, one past it is refused at create, naming the sizes. */
Test(paged, a_pool_past_one_binding_is_refused_at_create)
{
    setenv("LAZYKV_OPENCL_MAX_RANGE", "65536", 1);
    lkv_runtime *rt = tu_open_backend("opencl");
    if (!rt)
        return;
    pc_run_twins(rt, LKV_DTYPE_F32, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 16);
    lkv_cache_config cfg = tu_config(1, 4, 4, 64, 256);
    cfg.placement = LKV_PLACEMENT_PAGED;
    lkv_cache *c = NULL;
    cr_expect_eq(lkv_cache_create(rt, &cfg, &c), LKV_UNSUPPORTED);
    cr_expect(strstr(lkv_last_error(), "pool of 262144 bytes") &&
                  strstr(lkv_last_error(), "65536"),
              "%s", lkv_last_error());
    cr_expect_null(c);
    cfg.pool_blocks = 16; /* 16 blocks of 16 slots x 64 f32: 64 KiB */
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    lkv_cache_destroy(c);
    lkv_runtime_close(rt);
}
