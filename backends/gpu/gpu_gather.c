/* gather on CUDA/HIP: one launch over every word of every span
 * (backends/gpu/kernels/gather.cu). The span lists are uploaded before the
 * launch, so a failure moves nothing. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

lkv_status lkv_gpu_gather(lkv_device *d, const lkv_gather_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    /* the words are moved as they are: the lists' bits read as int32 */
    const int32_t *host[2] = {(const int32_t *)(const void *)a->src_word,
                              (const int32_t *)(const void *)a->dst_word};
    size_t counts[2] = {(size_t)a->n, (size_t)a->n};
    lkv_gpu_ptr list[2] = {0, 0};
    lkv_status st = lkv_gpu_upload(d, 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr src = a->src->ptr, dst = a->dst->ptr;
    int32_t n = a->n, words = a->words;
    uint64_t total = (uint64_t)n * (uint64_t)words;
    uint64_t blocks = lkv_gpu_div_up(total, LKV_GATHER_BLOCK);
    uint32_t gx = blocks > LKV_GPU_STRIDE_GX ? LKV_GPU_STRIDE_GX : (uint32_t)blocks;
    void *args[] = {&list[0], &list[1], &src, &dst, &n, &words};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_gather_spans, gx, 1, 1, LKV_GATHER_BLOCK, args);
}
