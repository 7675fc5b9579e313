/* Hole filling (placement = holes) through the CUDA/HIP kernels and host
 * code, on the emulator: the attend split kernels and store reading and
 * writing K/V through the hole map, and compact rebuilding the map
 * (lkv_compact_phys) instead of moving K/V. The checks are test_holes'
 * (tests/holes_checks.h): every policy compacting against filling holes,
 * outputs bit for bit and the same slots, state and counters; the buffers
 * read back (a permutation whose places hold the compacting cache's K/V,
 * one place written a row per step); rows of 97 slots. At warp 32 and 64,
 * on 4 multiprocessors and on 132 (more, shorter attention splits). */
#include "emu_runtime.h"
#include "holes_checks.h"

Test(gpu_emu_holes, every_policy_computes_as_compaction_f16_grouped, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("32", "4");
    hc_run_twins(rt, LKV_DTYPE_F16, LKV_GQA_GROUPED, LKV_EVICTION_INLINE);
    lkv_runtime_close(rt);
}

Test(gpu_emu_holes, every_policy_computes_as_compaction_bf16_expanded_wave64, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("64", "132");
    hc_run_twins(rt, LKV_DTYPE_BF16, LKV_GQA_EXPANDED, LKV_EVICTION_INLINE);
    lkv_runtime_close(rt);
}

/* head_dim 6 takes the kernels that load an element at a time, 16 the
 * 16-byte ones. */
Test(gpu_emu_holes, an_eviction_moves_no_kv, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("32", "4");
    hc_eviction_moves_no_kv(rt, 6, LKV_DTYPE_F32);
    hc_eviction_moves_no_kv(rt, 16, LKV_DTYPE_F16);
    lkv_runtime_close(rt);
}

Test(gpu_emu_holes, long_rows_compute_as_compaction, .timeout = 900)
{
    lkv_runtime *rt = emu_runtime("64", "4");
    hc_long_rows(rt, "gpu-emu");
    lkv_runtime_close(rt);
}
