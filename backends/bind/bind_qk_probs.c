/* qk_probs: one dispatch for the batch, the K dtype's pipeline in double
 * where the device has f64. K, q, lse and the probabilities are bound
 * whole (each must fit one binding); the sizes, the pipeline and the
 * lists' room are checked or acquired first, so a failure writes nothing. */
#include "error.h"
#include "bind_internal.h"

static lkv_bind_pipe pipe_of(lkv_device *d, lkv_dtype dtype)
{
    int f64 = lkv_bind_lim(d)->has_f64;
    if (dtype == LKV_DTYPE_F16)
        return f64 ? LKV_BIND_PIPE_qk_probs_f16_f64 : LKV_BIND_PIPE_qk_probs_f16;
    if (dtype == LKV_DTYPE_BF16)
        return f64 ? LKV_BIND_PIPE_qk_probs_bf16_f64 : LKV_BIND_PIPE_qk_probs_bf16;
    return f64 ? LKV_BIND_PIPE_qk_probs_f32_f64 : LKV_BIND_PIPE_qk_probs_f32;
}

static lkv_status prepare(lkv_device *d, const lkv_qk_probs_args *a, lkv_bind_pipe pipe,
                          int32_t table_n)
{
    const lkv_buffer *bufs[4] = {a->k, a->q, a->lse, a->probs};
    const char *names[4] = {"K", "queries", "lse", "probabilities"};
    lkv_status st = LKV_OK;
    for (int i = 0; i < 4 && st == LKV_OK; i++)
        st = lkv_bind_check_fits(d, lkv_bind_size(d, bufs[i]), "qk_probs", names[i]);
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, pipe);
    return st == LKV_OK ? lkv_bind_list_room(d, a->n + table_n, 6) : st;
}

lkv_status lkv_bind_qk_probs(lkv_device *d, const lkv_qk_probs_args *a)
{
    if (a->n <= 0)
        return LKV_OK;
    const lkv_engine_slots *sl = &a->slots;
    lkv_bind_pipe pipe = pipe_of(d, a->dtype);
    lkv_status st = prepare(d, a, pipe, lkv_bind_table_n(sl));
    const int32_t *cols[6] = {a->q_row, a->lse_at, a->len, (const int32_t *)(const void *)sl->base,
                              lkv_bind_tab_rows(sl), a->out_row};
    lkv_bind_buf list, tab;
    if (st == LKV_OK)
        st = lkv_bind_put_table(d, sl, &tab);
    if (st == LKV_OK)
        st = lkv_bind_put_list(d, cols, 6, 0, a->n, &list);
    if (st != LKV_OK)
        return st;
    lkv_bind_buf b[6] = {list, tab, lkv_bind_whole(d, a->q), lkv_bind_whole(d, a->lse),
                         lkv_bind_whole(d, a->k), lkv_bind_whole(d, a->probs)};
    struct { uint32_t n, dim, stride; float scale; uint32_t slot_stride, block_stride,
             block_size, max_blocks; } push = {
        (uint32_t)a->n, (uint32_t)a->dim, (uint32_t)a->stride, a->scale, sl->slot_stride,
        sl->block_stride, (uint32_t)sl->block_size, (uint32_t)sl->max_blocks};
    uint32_t gy = (uint32_t)a->n < lkv_bind_lim(d)->max_count[1] ? (uint32_t)a->n
                                                                  : lkv_bind_lim(d)->max_count[1];
    uint32_t gx = lkv_bind_groups(d, lkv_bind_longest(a->len, 0, a->n), gy);
    return lkv_bind_dispatch(d, pipe, b, &push, gx, gy, 1);
}
