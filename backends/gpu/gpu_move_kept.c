/* move_kept on CUDA/HIP: the row lists and the engine's slots uploaded in
 * one copy, then two launches of backends/gpu/kernels/move_kept.cu (into
 * the kept scratch, back out of it) in stream order. The scratch is grown
 * and kept as gather's is; a failure before the first launch moves
 * nothing. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

static lkv_status launch(lkv_device *d, const lkv_move_kept_args *a, lkv_gpu_ptr *list,
                         lkv_gpu_ptr scratch, int32_t back)
{
    const lkv_engine_slots *s = &a->slots;
    lkv_gpu_ptr kept = a->kept->ptr, buf = a->buf->ptr;
    int32_t n = a->n, words = a->words, ks = a->kept_stride, bs = s->block_size;
    int32_t mb = s->max_blocks;
    uint32_t ss = s->slot_stride, bst = s->block_stride;
    /* list: kept_row, n_kept, at, then base, tab_row, table */
    void *args[] = {&list[0], &list[1], &list[3], &list[4], &list[2], &list[5], &kept, &buf,
                    &scratch, &n, &words, &ks, &ss, &bst, &bs, &mb, &back};
    uint64_t items = (uint64_t)lkv_gpu_longest(a->n_kept, a->n) * (uint64_t)a->words;
    uint64_t blocks = lkv_gpu_div_up(items ? items : 1, LKV_MOVE_BLOCK);
    uint32_t gx = blocks > LKV_GPU_STRIDE_GX ? LKV_GPU_STRIDE_GX : (uint32_t)blocks;
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_move_kept, gx, lkv_gpu_rows_y(d, a->n), 1,
                                 LKV_MOVE_BLOCK, args);
}

lkv_status lkv_gpu_move_kept(lkv_device *d, const lkv_move_kept_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    const int32_t *cols[3] = {a->kept_row, a->n_kept, (const int32_t *)(const void *)a->at};
    lkv_gpu_ptr list[6] = {0, 0, 0, 0, 0, 0};
    lkv_status st = lkv_gpu_reserve(d, &d->compact_scratch, (size_t)(a->held ? a->held : 4));
    if (st == LKV_OK)
        st = lkv_gpu_upload_slots(d, 3, cols, a->n, &a->slots, list);
    lkv_gpu_ptr scratch = st == LKV_OK ? d->compact_scratch->ptr : 0;
    if (st == LKV_OK)
        st = launch(d, a, list, scratch, 0);
    if (st == LKV_OK)
        st = launch(d, a, list, scratch, 1);
    return st;
}
