/* observe: one dispatch per run of rows that one binding window
 * holds (normally all of them), each row at its own step (row_t). Everything it needs is acquired before it
 * records, so a failure leaves the policy state untouched. */
#include "error.h"
#include "bind_internal.h"

static lkv_status prepare(lkv_device *d, const lkv_observe_args *a, int64_t fit)
{
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s observe: one row of %d slots exceeds this "
                        "device's binding range", lkv_bind_name(d), a->cache->capacity);
    lkv_status st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_observe);
    return st == LKV_OK ? lkv_bind_list_room(d, a->n_rows, 3) : st;
}

lkv_status lkv_bind_observe(lkv_device *d, const lkv_observe_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t row_bytes = (uint64_t)c->capacity * 4;
    int64_t fit = lkv_bind_rows_fit(d, row_bytes);
    lkv_status st = prepare(d, a, fit);
    const int32_t *steps = st == LKV_OK ? lkv_bind_steps(d, a->row_t, a->t, a->n_rows) : NULL;
    if (st == LKV_OK && !steps)
        st = LKV_OUT_OF_MEMORY;
    const int32_t *cols[3] = {a->rows, a->row_n, steps};
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->rows, a->n_rows, first, fit, 1, &lo, &hi);
        int32_t most = lkv_bind_longest(a->row_n, first, len);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 3, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_window p = lkv_bind_window_of(d, a->probs, lo, hi, row_bytes, 4);
        lkv_bind_buf b[5] = {list, p.bind,
                             lkv_bind_window_of(d, c->state_a, lo, hi, row_bytes, 4).bind,
                             lkv_bind_window_of(d, c->state_b, lo, hi, row_bytes, 4).bind,
                             lkv_bind_window_of(d, c->state_f, lo, hi, row_bytes, 4).bind};
        struct { uint32_t cap, skew, row_base, kind; int32_t t; float alpha; } push =
            {(uint32_t)c->capacity, p.skew, (uint32_t)lo, (uint32_t)a->kind, a->t, a->alpha};
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_observe, b, &push, lkv_bind_groups(d, most, len),
                               (uint32_t)len, 1);
    }
    return st;
}
