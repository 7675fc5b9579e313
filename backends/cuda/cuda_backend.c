/* The CUDA backend's ops table: probe and open are CUDA's own, everything
 * else is the host code shared with HIP (backends/gpu/), run through the
 * driver table of cuda_driver.c. */
#include "cuda_internal.h"

const lkv_backend_ops lkv_backend_cuda = {
    .name = "cuda",
    .probe = lkv_cu_probe,
    .open = lkv_cu_open,
    .open_external = lkv_cu_open_external,
    LKV_GPU_OPS_COMMON,
    .row_steps = 1,
};
