/* A runtime on the emulator's gpu-emu backend at a given warp width and
 * multiprocessor count, for the tests that run lazykv's caches through the
 * CUDA/HIP kernels (test_gpu_emu_holes, test_gpu_emu_paged). */
#ifndef LKV_EMU_RUNTIME_H
#define LKV_EMU_RUNTIME_H

#include <stdlib.h>

#include "emu_driver.h"
#include "runtime.h"
#include "test_util.h"

static inline lkv_runtime *emu_runtime(const char *warp, const char *sms)
{
    setenv("LKV_EMU_WARP", warp, 1);
    setenv("LKV_EMU_MULTIPROCESSORS", sms, 1);
    lkv_runtime *rt = calloc(1, sizeof *rt);
    cr_assert(rt);
    rt->ops = &lkv_backend_gpu_emu;
    TU_OK(rt->ops->open(0, &rt->dev));
    return rt;
}

#endif
