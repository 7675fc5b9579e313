/* select: one workgroup per row (radix select, see select.comp),
 * one dispatch per run of rows that one binding window holds. */
#include "error.h"
#include "bind_internal.h"

lkv_status lkv_bind_select(lkv_device *d, const lkv_select_args *a)
{
    uint64_t row_bytes = (uint64_t)a->capacity * 4;
    int64_t fit = lkv_bind_rows_fit(d, row_bytes);
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s select: one row of %d slots exceeds this "
                        "device's binding range", lkv_bind_name(d), a->capacity);
    lkv_status st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_select);
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, a->n_rows, 3);
    const int32_t *cols[3] = {a->rows, a->row_n, a->row_k};
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->rows, a->n_rows, first, fit, 1, &lo, &hi);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 3, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_window s = lkv_bind_window_of(d, a->scores, lo, hi, row_bytes, 4);
        lkv_bind_buf b[3] = {list, s.bind, lkv_bind_window_of(d, a->kept, lo, hi, row_bytes, 4).bind};
        struct { uint32_t cap, skew, row_base; } push = {(uint32_t)a->capacity, s.skew, (uint32_t)lo};
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_select, b, &push, (uint32_t)len, 1, 1);
    }
    return st;
}
