// The project's kernels (backends/gpu/kernels/lazykv.cu) compiled for the emulator, and
// their table in lkv_gpu_kernel_id order: both come from the one list in
// backends/gpu/gpu_kernels.h, so a listed name without a kernel fails here,
// at link time of the test build, rather than at run time on a GPU.
#include "lazykv.cu"

#include "emu_bind.h"

extern "C" const lkv_emu_kernel lkv_emu_kernels[] = {
#define LKV_GPU_KERNEL(name) LKV_EMU_BIND(name),
#include "gpu_kernels.h"
#undef LKV_GPU_KERNEL
    lkv_emu_kernel{nullptr, nullptr, 0, 0}, // keeps the array non-empty while the list is
};

extern "C" const int lkv_emu_kernel_count =
    (int)(sizeof lkv_emu_kernels / sizeof lkv_emu_kernels[0]) - 1;
