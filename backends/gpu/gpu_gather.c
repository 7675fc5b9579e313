/* gather on CUDA/HIP: the sources into the device's kept scratch, then the
 * scratch to the destinations, two launches of one kernel
 * (backends/gpu/kernels/gather.cu) in stream order, so moves in place
 * cannot race. The scratch is grown and kept (an outgrown one is freed at
 * the next host wait: freeing device memory would wait now), and the lists
 * are uploaded before the first launch, so a failure moves nothing. */
#include <stdlib.h>

#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

static lkv_status launch(lkv_device *d, lkv_gpu_ptr from_list, lkv_gpu_ptr to_list,
                         lkv_gpu_ptr src, lkv_gpu_ptr dst, int32_t n, int32_t words)
{
    uint64_t blocks = lkv_gpu_div_up((uint64_t)n * (uint64_t)words, LKV_GATHER_BLOCK);
    uint32_t gx = blocks > LKV_GPU_STRIDE_GX ? LKV_GPU_STRIDE_GX : (uint32_t)blocks;
    void *args[] = {&from_list, &to_list, &src, &dst, &n, &words};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_gather_spans, gx, 1, 1, LKV_GATHER_BLOCK, args);
}

lkv_status lkv_gpu_gather(lkv_device *d, const lkv_gather_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    int32_t *held = malloc(sizeof(int32_t) * (size_t)a->n); /* span i's place in scratch */
    if (!held)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s gather: out of host memory for %d spans",
                        d->drv->name, a->n);
    for (int32_t i = 0; i < a->n; i++)
        held[i] = (int32_t)((uint32_t)i * (uint32_t)a->words);
    /* the word offsets are moved as they are: their bits read as int32 */
    const int32_t *host[3] = {(const int32_t *)(const void *)a->src_word,
                              (const int32_t *)(const void *)a->dst_word, held};
    size_t counts[3] = {(size_t)a->n, (size_t)a->n, (size_t)a->n};
    lkv_gpu_ptr list[3] = {0, 0, 0};
    lkv_status st = lkv_gpu_reserve(d, &d->compact_scratch, (size_t)a->n * (size_t)a->words * 4);
    if (st == LKV_OK)
        st = lkv_gpu_upload(d, 3, host, counts, list);
    free(held);
    lkv_gpu_ptr buf = a->buf->ptr, scratch = st == LKV_OK ? d->compact_scratch->ptr : 0;
    if (st == LKV_OK)
        st = launch(d, list[0], list[2], buf, scratch, a->n, a->words);
    if (st == LKV_OK)
        st = launch(d, list[2], list[1], scratch, buf, a->n, a->words);
    return st;
}
