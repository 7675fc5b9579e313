/* qk_probs on CUDA/HIP: the row lists and the block table uploaded in one
 * copy, then one launch of the K dtype's kernel
 * (backends/gpu/kernels/qk_probs.cu) for every row of the batch. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

static lkv_gpu_kernel_id kernel_of(lkv_dtype dtype)
{
    return dtype == LKV_DTYPE_F16    ? LKV_GPU_K_lkv_qk_probs_f16
           : dtype == LKV_DTYPE_BF16 ? LKV_GPU_K_lkv_qk_probs_bf16
                                     : LKV_GPU_K_lkv_qk_probs_f32;
}

lkv_status lkv_gpu_qk_probs(lkv_device *d, const lkv_qk_probs_args *a)
{
    if (a->n <= 0)
        return LKV_OK;
    /* a dense layout uploads a one-entry table, never read */
    static const int32_t none = 0;
    int paged = a->block_size > 0;
    const int32_t *host[7] = {a->q_row, a->lse_at, a->len, (const int32_t *)(const void *)a->base,
                              paged ? a->tab_row : a->q_row, a->out_row,
                              paged ? a->table : &none};
    size_t n = (size_t)a->n;
    size_t counts[7] = {n, n, n, n, n, n,
                        paged ? (size_t)a->table_rows * (size_t)a->max_blocks : 1};
    lkv_gpu_ptr list[7] = {0, 0, 0, 0, 0, 0, 0};
    lkv_status st = lkv_gpu_upload(d, 7, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr q = a->q->ptr, lse = a->lse->ptr, k = a->k->ptr, probs = a->probs->ptr;
    int32_t rows = a->n, dim = a->dim, stride = a->stride, bs = a->block_size;
    int32_t mb = a->max_blocks;
    float scale = a->scale;
    uint32_t ss = a->slot_stride, bst = a->block_stride;
    void *args[] = {&list[0], &list[1], &list[2], &list[3], &list[4], &list[5], &list[6], &q,
                    &lse, &k, &probs, &rows, &dim, &stride, &scale, &ss, &bst, &bs, &mb};
    uint32_t gx = lkv_gpu_stride_blocks(lkv_gpu_longest(a->len, a->n), LKV_QK_BLOCK);
    return lkv_gpu_launch_kernel(d, kernel_of(a->dtype), gx, lkv_gpu_rows_y(d, a->n), 1,
                                 LKV_QK_BLOCK, args);
}
