/* Hole filling in owned caches (placement = LKV_PLACEMENT_HOLES): for every
 * policy a cache that fills holes and one that compacts, fed the same
 * tokens, give the same attention outputs bit for bit at every step and hold
 * the same slots, positions, policy state and counters (ref and cpu, f32 and
 * f16, grouped and expanded, evictions inline and in the background; Vulkan
 * on lavapipe and OpenCL on PoCL, f16 and bf16; the CUDA/HIP kernels in
 * tests/gpu_emu/test_gpu_emu_holes.c); the
 * map stays a permutation whose places hold the compacting cache's K/V, and
 * an eviction writes no K/V (read from the buffers); fork, truncate and
 * reset keep the twins equal; bad placements are refused naming them. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "holes_checks.h"
#include "twin_caches.h"

Test(holes, every_policy_on_ref_computes_as_compaction)
{
    hc_run_twins(tu_runtime(), LKV_DTYPE_F32, LKV_GQA_GROUPED, LKV_EVICTION_INLINE);
    hc_run_twins(tu_runtime(), LKV_DTYPE_BF16, LKV_GQA_EXPANDED, LKV_EVICTION_INLINE);
}

Test(holes, every_policy_on_cpu_computes_as_compaction)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    hc_run_twins(rt, LKV_DTYPE_F32, LKV_GQA_GROUPED, LKV_EVICTION_INLINE);
    hc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_EXPANDED, LKV_EVICTION_BACKGROUND);
    lkv_runtime_close(rt);
}

/* The GPU backends' attention, store and compaction through the map, on
 * lavapipe and PoCL where they are (required where LAZYKV_REQUIRE_BACKENDS
 * names them). head_dim 8 takes the 16-byte kernels. */
static void on_each_gpu(void (*check)(lkv_runtime *rt, const char *backend))
{
    const char *gpus[] = {"vulkan", "opencl"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        lkv_runtime *rt = tu_open_backend(gpus[i]);
        if (!rt)
            continue;
        check(rt, gpus[i]);
        lkv_runtime_close(rt);
    }
}

static void gpu_twins(lkv_runtime *rt, const char *backend)
{
    (void)backend;
    hc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_INLINE);
    hc_run_twins(rt, LKV_DTYPE_BF16, LKV_GQA_EXPANDED, LKV_EVICTION_INLINE);
}

Test(holes, every_policy_on_vulkan_and_opencl_computes_as_compaction, .timeout = 600)
{
    on_each_gpu(gpu_twins);
}

Test(holes, long_rows_on_vulkan_and_opencl_compute_as_compaction)
{
    on_each_gpu(hc_long_rows);
}

Test(holes, an_eviction_moves_no_kv)
{
    hc_eviction_moves_no_kv(tu_runtime(), 16, LKV_DTYPE_F32);
}

/* The same on lavapipe and PoCL; head_dim 6 takes the kernels that load an
 * element at a time, 16 the 16-byte ones. */
static void gpu_moves(lkv_runtime *rt, const char *backend)
{
    (void)backend;
    hc_eviction_moves_no_kv(rt, 6, LKV_DTYPE_F32);
    hc_eviction_moves_no_kv(rt, 16, LKV_DTYPE_F16);
}

Test(holes, an_eviction_moves_no_kv_on_vulkan_and_opencl)
{
    on_each_gpu(gpu_moves);
}

/* Fork, truncate and reset on both twins at the same points. */
Test(holes, fork_truncate_and_reset_keep_the_twins_equal)
{
    lkv_cache_config cfg = twin_config(LKV_POLICY_LAZY);
    lkv_cache *a = hc_make(tu_runtime(), cfg, LKV_PLACEMENT_COMPACT);
    lkv_cache *b = hc_make(tu_runtime(), cfg, LKV_PLACEMENT_HOLES);
    uint64_t rng = 12;
    enum { QW = TWIN_QH * TWIN_D, KW = TWIN_KVH * TWIN_D };
    float q[3 * QW], k[3 * KW], v[3 * KW];
    for (int32_t t = 0; t < 70; t++) {
        int32_t n = t < 30 ? 1 : 3;
        if (t == 30)
            for (int32_t s = 1; s < 3; s++) {
                TU_OK(lkv_cache_fork_sequence(a, 0, s));
                TU_OK(lkv_cache_fork_sequence(b, 0, s));
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
    }
    hc_expect_same_k(a, b, 70);
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
}

Test(holes, bad_placements_are_refused_naming_them)
{
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 8);
    lkv_cache *c = NULL;
    cfg.placement = (lkv_placement)9;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "placement 9"), "%s", lkv_last_error());
    cfg.placement = LKV_PLACEMENT_HOLES;
    cfg.kv_owner = LKV_KV_ENGINE;
    cr_expect_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "lkv_slot_map"), "%s", lkv_last_error());
    cr_expect_null(c);
    lkv_placement p = LKV_PLACEMENT_COMPACT;
    TU_OK(lkv_placement_from_name("holes", &p));
    cr_expect_eq(p, LKV_PLACEMENT_HOLES);
    cr_expect_str_eq(lkv_placement_name(p), "holes");
    cr_expect_eq(lkv_placement_from_name("gaps", &p), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "\"gaps\""), "%s", lkv_last_error());
    cr_expect_null(lkv_placement_name((lkv_placement)5));
}

/* A backend whose attention reads K/V in slot order (ops->holes 0) refuses
 * holes at create, naming itself. */
Test(holes, a_backend_without_holes_refuses_them)
{
    lkv_backend_ops slot_order = {.name = "slot-order", .holes = 0};
    lkv_cache_config cfg = tu_config(1, 2, 1, 4, 8);
    cfg.placement = LKV_PLACEMENT_HOLES;
    cr_expect_eq(lkv_placement_check(&cfg, &slot_order), LKV_UNSUPPORTED);
    cr_expect(strstr(lkv_last_error(), "slot-order"), "%s", lkv_last_error());
    slot_order.holes = 1;
    TU_OK(lkv_placement_check(&cfg, &slot_order));
}
