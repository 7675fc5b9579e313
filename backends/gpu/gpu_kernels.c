/* The kernel entry-point names, in lkv_gpu_kernel_id order. */
#include "gpu_internal.h"

const char *const lkv_gpu_kernel_names[] = {
#define LKV_GPU_KERNEL(name) #name,
#include "gpu_kernels.h"
#undef LKV_GPU_KERNEL
    NULL, /* keeps the array non-empty while the list is */
};
