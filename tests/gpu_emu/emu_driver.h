/* The emulator's driver (emu_driver.c): device memory is host memory, a
 * launch runs the CPU SIMT emulator synchronously. Exposed for the
 * emulator's own tests; everything else reaches it through the `gpu-emu`
 * backend (lkv_backend_gpu_emu) in lazykv-emu. */
#ifndef LKV_EMU_DRIVER_H
#define LKV_EMU_DRIVER_H

#include "gpu_emu_api.h"
#include "gpu_internal.h"

extern const lkv_gpu_driver lkv_emu_driver;
extern const lkv_backend_ops lkv_backend_gpu_emu;

/* A driver state for `warp` (32 or 64), a stream on memory of its own (its
 * lanes, lkv_emu_driver.lane_open, share that memory); release it with
 * lkv_emu_driver.close. */
lkv_status lkv_emu_api_create(int warp, void **out_api);

/* Events pass only at the next host wait (on: 1) or when recorded (0, the
 * default), and staged sources are checked for changes before their copy
 * passed; switching is itself a host wait. Per stream: a lane starts as
 * its device is when it opens. */
void lkv_emu_lag_events(void *api, int on);

/* The stream an open_external device borrowed (NULL for open's). */
void *lkv_emu_stream(void *api);

/* Launches a kernel that is not in the table (the emulator's test kernels)
 * with the checks lkv_emu_driver.launch makes. */
lkv_status lkv_emu_launch_custom(void *api, const lkv_emu_kernel *kernel, const uint32_t grid[3],
                                 uint32_t block, void **args);

/* The same as lkv_emu_driver.launch_cooperative does: UNSUPPORTED when the
 * grid has more blocks than the device's multiprocessors x 2 (what
 * occupancy answers) or LKV_EMU_COOPERATIVE_MAX; a device from
 * lkv_emu_api_create has 4 multiprocessors, one from the backend's open
 * what LKV_EMU_MULTIPROCESSORS says. */
lkv_status lkv_emu_launch_custom_cooperative(void *api, const lkv_emu_kernel *kernel,
                                             const uint32_t grid[3], uint32_t block, void **args);

#endif /* LKV_EMU_DRIVER_H */
