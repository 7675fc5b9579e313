/* The CPU SIMT emulator as the test suite's C code sees it: the kernel table
 * (emu_kernels.cpp, from backends/gpu/gpu_kernels.h), the launch
 * (gpu_emu.cpp) and the device's settings from the environment. */
#ifndef LKV_GPU_EMU_API_H
#define LKV_GPU_EMU_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel: `call` unpacks cuLaunchKernel-style arguments (args[i] points
 * at parameter i's value; a pointer parameter's value is a 64-bit address)
 * and runs the kernel for the current thread. */
typedef struct lkv_emu_kernel {
    const char *name;
    void (*call)(void *const *args);
    int n_params;
    uint64_t pointer_params; /* bit i set: parameter i is a device pointer */
} lkv_emu_kernel;

/* Every kernel of backends/gpu/kernels/lazykv.cu, in lkv_gpu_kernel_id order. */
extern const lkv_emu_kernel lkv_emu_kernels[];
extern const int lkv_emu_kernel_count;

/* Runs every block of the grid, one after the other, with `block` threads
 * each in warps of `warp` lanes. Returns 0, or -1 with the reason in `why`
 * (a bad shape, a divergent __syncthreads or lkv_grid_wait, a shuffle some
 * lane of a warp did not reach, an lkv_grid_wait that would have to wait,
 * no memory for fiber stacks); the launch stops at the first failing block. Launches from several OS threads run one at a time. */
int lkv_emu_run(const lkv_emu_kernel *kernel, void *const *args, const uint32_t grid[3],
                uint32_t block, int warp, char *why, size_t why_len);

/* The most blocks a cooperative launch may have: while a block waits at an
 * lkv_grid_wait another cannot pass, it is parked with a fiber per thread
 * of its own (stacks of 128 KiB, 256 KiB under ASan, touched only as used)
 * and a copy of shared memory, so the cap bounds what parked blocks hold. */
#define LKV_EMU_COOPERATIVE_MAX 32

/* lkv_emu_run for a cooperative launch (all blocks resident at once, as
 * cuLaunchCooperativeKernel guarantees): a block that reaches an
 * lkv_grid_wait whose condition does not hold yet is parked (its fibers
 * and shared memory kept) and the next block starts; once every block has
 * started, parked blocks are resumed in turn as their conditions hold. A
 * round over the parked blocks in which none can go on fails the launch
 * (nothing could ever raise their counters), naming the blocks and the
 * counters' values. At most LKV_EMU_COOPERATIVE_MAX blocks (-1 beyond). In
 * lkv_emu_run, an lkv_grid_wait whose condition does not hold when the
 * block reaches it fails the launch: on a GPU it could hang. */
int lkv_emu_run_cooperative(const lkv_emu_kernel *kernel, void *const *args,
                            const uint32_t grid[3], uint32_t block, int warp, char *why,
                            size_t why_len);

/* The warp width LKV_EMU_WARP asks for: 32 when unset or empty, 64; anything
 * else is -1 with the reason. */
int lkv_emu_warp_from_env(int *out_warp, char *why, size_t why_len);

/* The multiprocessor count LKV_EMU_MULTIPROCESSORS asks for: 4 when unset or
 * empty, else 1 to 1024 in decimal digits; anything else is -1 with the
 * reason. The emulator runs one block at a time whatever the count: it only
 * changes how the host code divides work (132 plans splits as for an H200). */
int lkv_emu_multiprocessors_from_env(int *out_count, char *why, size_t why_len);

/* Fiber switches the calling OS thread's scheduler has made (for measuring). */
uint64_t lkv_emu_switch_count(void);

#ifdef __cplusplus
}
#endif

#endif /* LKV_GPU_EMU_API_H */
