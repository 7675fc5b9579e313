/* redundancy: per run of rows whose K and per-slot windows fit one binding
 * each, redundancy.comp (redundancy.cl) twice, a work-group per slot (the
 * row sums and spared slots, then the columns), and redundancy_mix once, a
 * work-group per row (the softmax and the mix); the pipelines and the
 * list's room are acquired first, so a failure writes nothing. */
#include "error.h"
#include "bind_internal.h"

static lkv_bind_pipe pipe_of(const lkv_cache_buffers *c)
{
    static const lkv_bind_pipe pipes[2][3] = {
        {LKV_BIND_PIPE_redundancy_f32, LKV_BIND_PIPE_redundancy_f16,
         LKV_BIND_PIPE_redundancy_bf16},
        {LKV_BIND_PIPE_redundancy_f32_holes, LKV_BIND_PIPE_redundancy_f16_holes,
         LKV_BIND_PIPE_redundancy_bf16_holes}};
    return pipes[c->phys != NULL][c->dtype];
}

/* The two passes over the run's slots, then the mix. */
static lkv_status run(lkv_device *d, const lkv_redundancy_args *a, lkv_bind_buf list,
                      int64_t lo, int64_t hi, int32_t first, int32_t len)
{
    const lkv_cache_buffers *c = a->cache;
    uint32_t elem = (uint32_t)lkv_dtype_size(c->dtype);
    uint64_t meta_row = (uint64_t)c->capacity * 4;
    uint64_t kv_row = (uint64_t)c->capacity * (uint64_t)c->head_dim * elem;
    lkv_bind_window k = lkv_bind_kv_window(d, c, c->k, lo, hi, kv_row, elem);
    lkv_bind_window w = lkv_bind_window_of(d, a->work, lo, hi, meta_row, 4);
    lkv_bind_buf b[5] = {list, k.bind, w.bind,
                         lkv_bind_window_of(d, a->match, lo, hi, meta_row, 4).bind,
                         c->phys ? lkv_bind_window_of(d, c->phys, lo, hi, meta_row, 4).bind
                                 : w.bind};
    struct {
        uint32_t cap, dim, kv_skew, meta_skew, row_base, n_rows;
        float threshold;
        uint32_t pass, kv_cap; /* kv_cap: read by the LKV_HOLES pipelines only */
    } push = {(uint32_t)c->capacity, (uint32_t)c->head_dim, k.skew, w.skew, (uint32_t)lo,
              (uint32_t)len, a->threshold, 0, lkv_bind_kv_cap(c)};
    int64_t most = lkv_bind_longest(a->row_n, first, len), gx_max = lkv_bind_lim(d)->max_count[0];
    uint32_t gx = (uint32_t)(most < 1 ? 1 : most > gx_max ? gx_max : most);
    lkv_status st = LKV_OK;
    for (push.pass = 0; st == LKV_OK && push.pass < 2; push.pass++)
        st = lkv_bind_dispatch(d, pipe_of(c), b, &push, gx, (uint32_t)len, 1);
    lkv_bind_buf m[3] = {list, w.bind, lkv_bind_window_of(d, a->scores, lo, hi, meta_row, 4).bind};
    struct {
        uint32_t cap, meta_skew, row_base, n_rows;
        int32_t protect_tail;
        float lambda, scale;
    } mix = {(uint32_t)c->capacity, w.skew, (uint32_t)lo, (uint32_t)len, a->protect_tail,
             a->mix_lambda, a->importance_scale};
    if (st == LKV_OK)
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_redundancy_mix, m, &mix, 1, (uint32_t)len, 1);
    return st;
}

lkv_status lkv_bind_redundancy(lkv_device *d, const lkv_redundancy_args *a)
{
    if (a->n_rows <= 0)
        return LKV_OK;
    const lkv_cache_buffers *c = a->cache;
    uint64_t kv_row = (uint64_t)c->capacity * (uint64_t)c->head_dim * lkv_dtype_size(c->dtype);
    int64_t fit = lkv_bind_kv_rows_fit(d, c, kv_row);
    int64_t meta_fit = lkv_bind_rows_fit(d, (uint64_t)c->capacity * 4);
    fit = fit < meta_fit ? fit : meta_fit;
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s redundancy: one row's keys (%llu bytes) exceed "
                        "this device's binding range", lkv_bind_name(d),
                        (unsigned long long)kv_row);
    lkv_status st = lkv_bind_pipe_ready(d, pipe_of(c));
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_redundancy_mix);
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, a->n_rows, 2);
    const int32_t *cols[2] = {a->rows, a->row_n};
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->rows, a->n_rows, first, fit, 1, &lo, &hi);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 2, first, len, &list);
        if (st == LKV_OK)
            st = run(d, a, list, lo, hi, first, len);
    }
    return st;
}
