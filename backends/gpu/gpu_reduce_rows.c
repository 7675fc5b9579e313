/* reduce_rows on CUDA/HIP: the three lists uploaded in one copy, then one
 * launch of backends/gpu/kernels/reduce_rows.cu for every row of the
 * batch; a failed upload launches nothing. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

lkv_status lkv_gpu_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a)
{
    if (a->n <= 0)
        return LKV_OK;
    const int32_t *host[3] = {a->src_row, a->dst_row, a->len};
    size_t counts[3] = {(size_t)a->n, (size_t)a->n, (size_t)a->n};
    lkv_gpu_ptr list[3] = {0, 0, 0};
    lkv_status st = lkv_gpu_upload(d, 3, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr src = a->src->ptr, dst = a->dst->ptr;
    int32_t n = a->n, group = a->group, mean = a->reduce == LKV_REDUCE_MEAN && a->group > 1;
    int32_t ss = a->src_stride, ds = a->dst_stride;
    void *args[] = {&list[0], &list[1], &list[2], &src, &dst, &n, &group, &mean, &ss, &ds};
    uint32_t gx = lkv_gpu_stride_blocks(lkv_gpu_longest(a->len, a->n), LKV_REDUCE_BLOCK);
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_reduce_rows, gx, lkv_gpu_rows_y(d, a->n), 1,
                                 LKV_REDUCE_BLOCK, args);
}
