/* score: score.comp per run of rows, each row at its own step (row_t;
 * in double where the device has shaderFloat64, as the oracle), then score_prior.comp when a previous
 * selection's slots must rank first. */
#include "error.h"
#include "bind_internal.h"

static lkv_status prior(lkv_device *d, const lkv_score_args *a, lkv_bind_buf list, int64_t lo,
                        int64_t hi, int32_t len)
{
    uint64_t row_bytes = (uint64_t)a->cache->capacity * 4;
    lkv_bind_window s = lkv_bind_window_of(d, a->scores, lo, hi, row_bytes, 4);
    lkv_bind_buf b[3] = {list, lkv_bind_window_of(d, a->prior_kept, lo, hi, row_bytes, 4).bind,
                         s.bind};
    struct { uint32_t cap, skew, row_base, prior_k; } push =
        {(uint32_t)a->cache->capacity, s.skew, (uint32_t)lo, (uint32_t)a->prior_k};
    return lkv_bind_dispatch(d, LKV_BIND_PIPE_score_prior, b, &push, lkv_bind_groups(d, a->prior_k, len),
                             (uint32_t)len, 1);
}

lkv_status lkv_bind_score(lkv_device *d, const lkv_score_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t row_bytes = (uint64_t)c->capacity * 4;
    int64_t fit = lkv_bind_rows_fit(d, row_bytes);
    int32_t unit = a->kind == LKV_SCORE_GROUP_MEAN ? a->rows_per_group : 1;
    lkv_bind_pipe pipe = lkv_bind_lim(d)->has_f64 ? LKV_BIND_PIPE_score_f64 : LKV_BIND_PIPE_score_f32;
    lkv_status st = lkv_bind_pipe_ready(d, pipe);
    if (st == LKV_OK && a->prior_kept)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_score_prior);
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, a->n_rows, 3);
    const int32_t *steps = st == LKV_OK ? lkv_bind_steps(d, a->row_t, a->t, a->n_rows) : NULL;
    if (!steps)
        return st == LKV_OK ? LKV_OUT_OF_MEMORY : st;
    const int32_t *cols[3] = {a->rows, a->row_n, steps};
    for (int32_t first = 0, len = 0; first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->rows, a->n_rows, first, fit, unit, &lo, &hi);
        if (hi - lo + 1 > fit)
            return lkv_fail(LKV_UNSUPPORTED, "%s score: the rows of one group (%lld .. %lld) "
                            "span more than one binding", lkv_bind_name(d), (long long)lo,
                            (long long)hi);
        int32_t most = lkv_bind_longest(a->row_n, first, len);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 3, first, len, &list);
        if (st != LKV_OK)
            return st;
        lkv_bind_window s = lkv_bind_window_of(d, a->scores, lo, hi, row_bytes, 4);
        lkv_bind_buf b[6] = {list, lkv_bind_window_of(d, c->pos, lo, hi, row_bytes, 4).bind,
                             lkv_bind_window_of(d, c->state_a, lo, hi, row_bytes, 4).bind,
                             lkv_bind_window_of(d, c->state_b, lo, hi, row_bytes, 4).bind,
                             lkv_bind_window_of(d, c->state_f, lo, hi, row_bytes, 4).bind, s.bind};
        struct {
            uint32_t cap, skew, row_base, kind;
            int32_t t, protect_head, protect_tail, pool_kernel;
            uint32_t rows_per_group, seed_lo, seed_hi;
        } push = {(uint32_t)c->capacity, s.skew, (uint32_t)lo, (uint32_t)a->kind, a->t,
                  a->protect_head, a->protect_tail, a->pool_kernel,
                  (uint32_t)(a->rows_per_group > 0 ? a->rows_per_group : 1),
                  (uint32_t)a->seed, (uint32_t)(a->seed >> 32)};
        st = lkv_bind_dispatch(d, pipe, b, &push, lkv_bind_groups(d, most, len), (uint32_t)len, 1);
        if (st == LKV_OK && a->prior_kept && a->prior_k > 0)
            st = prior(d, a, list, lo, hi, len);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}
