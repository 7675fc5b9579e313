/* qk_probs on CUDA/HIP: the row lists and the engine's slots uploaded in
 * one copy, then one launch of backends/gpu/kernels/qk_probs.cu for every
 * row of the batch. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

lkv_status lkv_gpu_qk_probs(lkv_device *d, const lkv_qk_probs_args *a)
{
    if (a->n <= 0)
        return LKV_OK;
    const lkv_engine_slots *s = &a->slots;
    const int32_t *cols[4] = {a->q_row, a->lse_at, a->len, a->out_row};
    lkv_gpu_ptr list[7] = {0, 0, 0, 0, 0, 0, 0};
    lkv_status st = lkv_gpu_upload_slots(d, 4, cols, a->n, s, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr q = a->q->ptr, lse = a->lse->ptr, k = a->k->ptr, probs = a->probs->ptr;
    int32_t rows = a->n, dim = a->dim, stride = a->stride, bs = s->block_size;
    int32_t mb = s->max_blocks;
    int32_t kind = a->dtype == LKV_DTYPE_F16 ? 1 : a->dtype == LKV_DTYPE_BF16 ? 2 : 0;
    float scale = a->scale;
    uint32_t ss = s->slot_stride, bst = s->block_stride;
    /* list: q_row, lse_at, len, out_row, then base, tab_row, table */
    void *args[] = {&list[0], &list[1], &list[2], &list[4], &list[5], &list[3], &list[6], &q,
                    &lse, &k, &probs, &rows, &dim, &stride, &scale, &ss, &bst, &bs, &mb, &kind};
    uint32_t gx = lkv_gpu_stride_blocks(lkv_gpu_longest(a->len, a->n), LKV_QK_BLOCK);
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_qk_probs, gx, lkv_gpu_rows_y(d, a->n), 1,
                                 LKV_QK_BLOCK, args);
}
