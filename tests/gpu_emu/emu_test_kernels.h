/* The emulator's own test kernels (emu_test_kernels.cpp). */
#ifndef LKV_EMU_TEST_KERNELS_H
#define LKV_EMU_TEST_KERNELS_H

#include "gpu_emu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const lkv_emu_kernel lkv_emu_test_block_sum;
extern const lkv_emu_kernel lkv_emu_test_block_scan;
extern const lkv_emu_kernel lkv_emu_test_warp;
extern const lkv_emu_kernel lkv_emu_test_divergent_barrier;
extern const lkv_emu_kernel lkv_emu_test_two_barriers;
extern const lkv_emu_kernel lkv_emu_test_shuffle_missing_lane;
extern const lkv_emu_kernel lkv_emu_test_shuffle_vs_barrier;
extern const lkv_emu_kernel lkv_emu_test_geometry;
extern const lkv_emu_kernel lkv_emu_test_atomics;
extern const lkv_emu_kernel lkv_emu_test_shared_fresh;
extern const lkv_emu_kernel lkv_emu_test_missing_barrier;
extern const lkv_emu_kernel lkv_emu_test_half;
extern const lkv_emu_kernel lkv_emu_test_bf16;
extern const lkv_emu_kernel lkv_emu_test_params;
extern const lkv_emu_kernel lkv_emu_test_misc;
extern const lkv_emu_kernel lkv_emu_test_grid_sum;
extern const lkv_emu_kernel lkv_emu_test_grid_two_phases;
extern const lkv_emu_kernel lkv_emu_test_grid_wait_divergent;

#ifdef __cplusplus
}
#endif

#endif /* LKV_EMU_TEST_KERNELS_H */
