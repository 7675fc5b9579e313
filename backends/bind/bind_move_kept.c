/* move_kept: a cache's plan applied to an engine's K or V from the kept
 * lists on the device. Per run of rows whose kept lists fit one binding
 * window, two dispatches: the moved slots into the kept scratch, then out
 * of it to their places (dispatches run in order, each seeing the writes
 * before it). The sizes, the scratch, the lists' room and the pipeline are
 * checked or acquired first, so a failure moves nothing. */
#include "error.h"
#include "bind_internal.h"

static lkv_status prepare(lkv_device *d, const lkv_move_kept_args *a, int64_t fit,
                          uint64_t held, size_t table_n)
{
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s move_kept: one kept list of %d slots exceeds this "
                        "device's binding range", lkv_bind_name(d), a->kept_stride);
    lkv_status st = lkv_bind_check_fits(d, lkv_bind_size(d, a->buf), "move_kept", "buffer");
    if (st == LKV_OK)
        st = lkv_bind_check_fits(d, held, "move_kept", "scratch");
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->compact_scratch, (size_t)held);
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_move_kept);
    /* the table once, the rows' list once per pass */
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, 2 * a->n + (int32_t)table_n, 5);
    return st;
}

static lkv_status pass(lkv_device *d, const lkv_move_kept_args *a, const int32_t *const *cols,
                       lkv_bind_buf tab, int64_t fit, uint32_t back)
{
    const lkv_engine_slots *sl = &a->slots;
    uint64_t row_bytes = (uint64_t)a->kept_stride * 4;
    lkv_status st = LKV_OK;
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->kept_row, a->n, first, fit, 1, &lo, &hi);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 5, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_window k = lkv_bind_window_of(d, a->kept, lo, hi, row_bytes, 4);
        lkv_bind_buf b[5] = {list, tab, k.bind, lkv_bind_whole(d, a->buf),
                             lkv_bind_whole(d, lkv_bind_of(d)->compact_scratch)};
        struct { uint32_t n, words, kept_stride, kept_skew, kept_base, slot_stride, block_stride,
                 block_size, max_blocks, back; } push = {
            (uint32_t)len, (uint32_t)a->words, (uint32_t)a->kept_stride, k.skew, (uint32_t)lo,
            sl->slot_stride, sl->block_stride, (uint32_t)sl->block_size,
            (uint32_t)sl->max_blocks, back};
        int64_t most = (int64_t)lkv_bind_longest(a->n_kept, first, len) * a->words;
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_move_kept, b, &push,
                               lkv_bind_groups(d, most, len), (uint32_t)len, 1);
    }
    return st;
}

lkv_status lkv_bind_move_kept(lkv_device *d, const lkv_move_kept_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    int64_t fit = lkv_bind_rows_fit(d, (uint64_t)a->kept_stride * 4);
    lkv_status st = prepare(d, a, fit, a->held ? a->held : 4, (size_t)lkv_bind_table_n(&a->slots));
    const int32_t *cols[5] = {a->kept_row, a->n_kept, (const int32_t *)(const void *)a->slots.base,
                              lkv_bind_tab_rows(&a->slots), (const int32_t *)(const void *)a->at};
    lkv_bind_buf tab;
    if (st == LKV_OK)
        st = lkv_bind_put_table(d, &a->slots, &tab);
    if (st == LKV_OK)
        st = pass(d, a, cols, tab, fit, 0);
    if (st == LKV_OK)
        st = pass(d, a, cols, tab, fit, 1);
    return st;
}
