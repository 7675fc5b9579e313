/* reduce_rows: one dispatch per run of rows whose source groups fit one
 * binding window and whose destination rows fit another (normally the
 * whole batch). Double sums where the device has f64, as the oracle; the
 * pipeline and the lists' room are acquired first, so a failure writes
 * nothing. */
#include "error.h"
#include "bind_internal.h"

typedef struct span {
    int64_t lo, hi;
} span;

static int grow(span *s, int64_t lo, int64_t hi, int64_t fit)
{
    int64_t nlo = lo < s->lo ? lo : s->lo, nhi = hi > s->hi ? hi : s->hi;
    if (nhi - nlo + 1 > fit)
        return 0;
    s->lo = nlo, s->hi = nhi;
    return 1;
}

/* Entries from `first` on that one dispatch takes: at most the device's
 * groups along y, both spans within their windows' rows. */
static int32_t run_of(lkv_device *d, const lkv_reduce_rows_args *a, int32_t first,
                      const int64_t fit[2], span out[2])
{
    int64_t most = lkv_bind_lim(d)->max_count[1], g = a->group - 1;
    out[0] = (span){a->src_row[first], a->src_row[first] + g};
    out[1] = (span){a->dst_row[first], a->dst_row[first]};
    int32_t len = 1;
    for (; first + len < a->n && len < most; len++) {
        span s = out[0], t = out[1];
        int64_t r = a->src_row[first + len], w = a->dst_row[first + len];
        if (!grow(&s, r, r + g, fit[0]) || !grow(&t, w, w, fit[1]))
            break;
        out[0] = s, out[1] = t;
    }
    return len;
}

static lkv_status prepare(lkv_device *d, const lkv_reduce_rows_args *a, const int64_t fit[2],
                          lkv_bind_pipe pipe)
{
    if (fit[0] < a->group || fit[1] < 1)
        return lkv_fail(LKV_UNSUPPORTED,
                        "%s reduce_rows: a group of %d rows of %d words (or one row of %d) "
                        "exceeds this device's binding range",
                        lkv_bind_name(d), a->group, a->src_stride, a->dst_stride);
    lkv_status st = lkv_bind_pipe_ready(d, pipe);
    return st == LKV_OK ? lkv_bind_list_room(d, a->n, 3) : st;
}

lkv_status lkv_bind_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a)
{
    if (a->n <= 0)
        return LKV_OK;
    uint64_t bytes[2] = {(uint64_t)a->src_stride * 4, (uint64_t)a->dst_stride * 4};
    int64_t fit[2] = {lkv_bind_rows_fit(d, bytes[0]), lkv_bind_rows_fit(d, bytes[1])};
    lkv_bind_pipe pipe =
        lkv_bind_lim(d)->has_f64 ? LKV_BIND_PIPE_reduce_rows_f64 : LKV_BIND_PIPE_reduce_rows_f32;
    lkv_status st = prepare(d, a, fit, pipe);
    const int32_t *cols[3] = {a->src_row, a->dst_row, a->len};
    uint32_t mean = a->reduce == LKV_REDUCE_MEAN && a->group > 1;
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n; first += len) {
        span sp[2];
        len = run_of(d, a, first, fit, sp);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 3, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_window s = lkv_bind_window_of(d, a->src, sp[0].lo, sp[0].hi, bytes[0], 4);
        lkv_bind_window t = lkv_bind_window_of(d, a->dst, sp[1].lo, sp[1].hi, bytes[1], 4);
        lkv_bind_buf b[3] = {list, s.bind, t.bind};
        struct { uint32_t n, group, mean, src_stride, dst_stride, src_skew, dst_skew, src_base,
                 dst_base; } push = {(uint32_t)len, (uint32_t)a->group, mean,
                                     (uint32_t)a->src_stride, (uint32_t)a->dst_stride, s.skew,
                                     t.skew, (uint32_t)sp[0].lo, (uint32_t)sp[1].lo};
        int32_t most = lkv_bind_longest(a->len, first, len);
        st = lkv_bind_dispatch(d, pipe, b, &push, lkv_bind_groups(d, most, len), (uint32_t)len, 1);
    }
    return st;
}
