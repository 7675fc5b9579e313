/* Paged caches (placement = paged) through the CUDA/HIP kernels and host
 * code, on the emulator: the attend split kernels, store and redundancy
 * reading and writing K/V at pool places (no row term: kv_cap 0), compact
 * rebuilding the map, and core's pool (pages.c) reading and writing the
 * map through the device's copies. The checks are test_paged's
 * (tests/paged_checks.h): every policy compacting against paged, outputs
 * bit for bit and the same slots, state and counters, then the pool read
 * back (every slot's place in the pool holding the compacting cache's K).
 * At warp 32 and 64, on 4 multiprocessors and on 132. */
#include "emu_runtime.h"
#include "paged_checks.h"

Test(gpu_emu_paged, every_policy_computes_as_compaction_f16_grouped, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("32", "4");
    pc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_INLINE, 5);
    lkv_runtime_close(rt);
}

/* head_dim 8 in f32 takes the 16-byte kernels too; blocks of 7 cut each
 * row's last block at the capacity. */
Test(gpu_emu_paged, every_policy_computes_as_compaction_f32_expanded_wave64, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("64", "132");
    pc_run_twins(rt, LKV_DTYPE_F32, LKV_GQA_EXPANDED, LKV_EVICTION_BACKGROUND, 7);
    lkv_runtime_close(rt);
}

/* A pool short of every row at capacity on the CUDA/HIP host code, whose
 * store and attend once bounded a paged cache's rows by its K/V pool. */
Test(gpu_emu_paged, a_short_pool_gives_emptied_blocks_back, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("32", "4");
    pc_expect_blocks_come_back(rt);
    lkv_runtime_close(rt);
}
