/* store: new tokens' K and V into cache slots, with their positions and
 * fresh policy state (core/backend.h, lkv_store_args), one dispatch per
 * run of entries whose rows one binding window holds (normally one for the
 * whole batch): the grid's y is the entry, x strides over its
 * count * cache_heads * head_dim elements (an entry whose rows one window
 * cannot hold is split by heads) (shaders/store.comp,
 * kernels/store.cl). The rounding and the rule for non-finite and
 * out-of-range inputs are done on the bits in the kernel, so every device
 * stores what lkv_dtype_store stores, whatever its float conversions.
 *
 * The K/V inputs are bound whole (they are one step's or one chunk's
 * tokens); the entries are checked against the buffers here, since a bad
 * slot or row would write outside the cache. Everything is acquired before
 * the first dispatch, so a failure stores nothing. */
#include <stdlib.h>

#include "dtype.h"
#include "error.h"
#include "bind_internal.h"

#define STORE_COLS 7

/* The dispatched entries: each an entry's run of `heads` cache heads from
 * head0 (all of them unless one window cannot hold an entry's rows). */
typedef struct store_plan {
    int32_t n, heads;
    int32_t *col[STORE_COLS]; /* row0, slot0, count, src_token, position0, last_init, head0 */
} store_plan;

/* The store of the cache's dtype; with a hole map, the one writing K/V at
 * each slot's place in it (LKV_HOLES). */
static lkv_bind_pipe pipe_of(const lkv_cache_buffers *c)
{
    if (c->phys)
        return c->dtype == LKV_DTYPE_F16 ? LKV_BIND_PIPE_store_f16_holes
               : c->dtype == LKV_DTYPE_BF16 ? LKV_BIND_PIPE_store_bf16_holes
                                            : LKV_BIND_PIPE_store_f32_holes;
    return c->dtype == LKV_DTYPE_F16 ? LKV_BIND_PIPE_store_f16
           : c->dtype == LKV_DTYPE_BF16 ? LKV_BIND_PIPE_store_bf16 : LKV_BIND_PIPE_store_f32;
}

static uint64_t kv_row_bytes(const lkv_cache_buffers *c)
{
    return (uint64_t)c->capacity * (uint64_t)c->head_dim * lkv_dtype_size(c->dtype);
}

static lkv_status check_shape(lkv_device *d, const lkv_store_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    if (a->n_entries < 0 || a->cache_heads < 1 || a->kv_heads < 1 || c->capacity < 1 ||
        c->head_dim < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s store: %d entries, %d cache heads, %d KV heads, "
                        "capacity %d, head_dim %d: each must be positive (entries may be 0)",
                        lkv_bind_name(d), a->n_entries, a->cache_heads, a->kv_heads, c->capacity,
                        c->head_dim);
    return LKV_OK;
}

/* Entry e's slots, rows and source tokens lie inside the buffers. */
static lkv_status check_entry(lkv_device *d, const lkv_store_args *a, int32_t e, uint64_t src_bytes)
{
    const lkv_cache_buffers *c = a->cache;
    int64_t n = a->count[e], slot = a->slot0[e], row = a->row0[e], tok = a->src_token[e];
    /* a paged cache's K/V is a pool of places, not rows: the rows are the
     * metadata's (the places come from core's block tables) */
    uint64_t rows = c->paged ? UINT64_MAX : lkv_bind_size(d, c->k) / kv_row_bytes(c);
    uint64_t meta_rows = lkv_bind_size(d, c->pos) / ((uint64_t)c->capacity * 4);
    rows = meta_rows < rows ? meta_rows : rows;
    uint64_t token_bytes = (uint64_t)a->kv_heads * (uint64_t)c->head_dim * 4;
    if (n < 0 || slot < 0 || slot + n > c->capacity || row < 0 ||
        (uint64_t)row + (uint64_t)a->cache_heads > rows || tok < 0 ||
        (uint64_t)(tok + n) * token_bytes > src_bytes)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s store: entry %d (rows %lld..%lld, slots "
                        "%lld..%lld, tokens %lld..%lld) lies outside the cache (%llu rows of %d "
                        "slots) or the K/V input (%llu tokens)", lkv_bind_name(d), e, (long long)row,
                        (long long)row + a->cache_heads - 1, (long long)slot,
                        (long long)(slot + n - 1), (long long)tok, (long long)(tok + n - 1),
                        (unsigned long long)rows, c->capacity,
                        (unsigned long long)(src_bytes / token_bytes));
    return LKV_OK;
}

/* The inputs' common size, and whether one binding spans it. */
static lkv_status check_inputs(lkv_device *d, const lkv_store_args *a, uint64_t *out_bytes)
{
    uint64_t kb = lkv_bind_size(d, a->k), vb = lkv_bind_size(d, a->v);
    uint64_t bytes = kb < vb ? kb : vb;
    uint64_t need = 0, token = (uint64_t)a->kv_heads * (uint64_t)a->cache->head_dim * 4;
    for (int32_t e = 0; e < a->n_entries; e++) {
        uint64_t end = ((uint64_t)a->src_token[e] + (uint64_t)a->count[e]) * token;
        need = end > need ? end : need;
    }
    if (need > lkv_bind_lim(d)->max_range)
        return lkv_fail(LKV_UNSUPPORTED, "%s store: the K/V input spans %llu bytes, over this "
                        "device's %llu-byte binding range: store fewer tokens per call",
                        lkv_bind_name(d), (unsigned long long)need,
                        (unsigned long long)lkv_bind_lim(d)->max_range);
    *out_bytes = bytes;
    return LKV_OK;
}

static lkv_status check(lkv_device *d, const lkv_store_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, lkv_bind_name(d), "store");
    if (st == LKV_OK)
        st = check_shape(d, a);
    uint64_t src_bytes = 0;
    if (st == LKV_OK && a->n_entries > 0)
        st = check_inputs(d, a, &src_bytes);
    for (int32_t e = 0; st == LKV_OK && e < a->n_entries; e++)
        st = check_entry(d, a, e, src_bytes);
    return st;
}

/* Rows one window holds of K, V and the per-slot buffers alike. */
static int64_t rows_fit(lkv_device *d, const lkv_store_args *a)
{
    int64_t kv = lkv_bind_kv_rows_fit(d, a->cache, kv_row_bytes(a->cache));
    int64_t meta = lkv_bind_rows_fit(d, (uint64_t)a->cache->capacity * 4);
    return kv < meta ? kv : meta;
}

static void plan_free(store_plan *p)
{
    for (int c = 0; c < STORE_COLS; c++)
        free(p->col[c]);
}

/* The entries split into runs of `heads` cache heads (rows). */
static lkv_status plan_entries(lkv_device *d, const lkv_store_args *a, int32_t heads,
                               store_plan *out)
{
    int32_t parts = (a->cache_heads + heads - 1) / heads;
    store_plan p = {a->n_entries * parts, heads, {NULL}};
    int ok = 1;
    for (int c = 0; c < STORE_COLS; c++)
        ok &= (p.col[c] = malloc(sizeof(int32_t) * (size_t)p.n)) != NULL;
    if (!ok) {
        plan_free(&p);
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s store: out of host memory for %d entries",
                        lkv_bind_name(d), p.n);
    }
    for (int32_t e = 0, i = 0; e < a->n_entries; e++)
        for (int32_t h0 = 0; h0 < a->cache_heads; h0 += heads, i++) {
            const int32_t v[STORE_COLS] = {a->row0[e] + h0, a->slot0[e], a->count[e],
                                           a->src_token[e], a->position0[e], a->last_init[e], h0};
            for (int c = 0; c < STORE_COLS; c++)
                p.col[c][i] = v[c];
        }
    *out = p;
    return LKV_OK;
}

static lkv_status store_run(lkv_device *d, const lkv_store_args *a, const store_plan *p,
                            int32_t first, int32_t len, int64_t lo, int64_t hi)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_bind_buf list;
    lkv_status st = lkv_bind_put_list(d, (const int32_t *const *)p->col, STORE_COLS, first, len,
                                      &list);
    if (st != LKV_OK)
        return st;
    uint32_t elem = (uint32_t)lkv_dtype_size(c->dtype);
    uint64_t meta_row = (uint64_t)c->capacity * 4;
    lkv_bind_window k = lkv_bind_kv_window(d, c, c->k, lo, hi, kv_row_bytes(c), elem);
    lkv_bind_window pos = lkv_bind_window_of(d, c->pos, lo, hi, meta_row, 4);
    /* the hole map shares the metadata's windows and skew; bound last */
    lkv_bind_buf b[10] = {list, lkv_bind_whole(d, a->k), lkv_bind_whole(d, a->v), k.bind,
                          lkv_bind_kv_window(d, c, c->v, lo, hi, kv_row_bytes(c), elem).bind,
                          pos.bind,
                          lkv_bind_window_of(d, c->state_a, lo, hi, meta_row, 4).bind,
                          lkv_bind_window_of(d, c->state_b, lo, hi, meta_row, 4).bind,
                          lkv_bind_window_of(d, c->state_f, lo, hi, meta_row, 4).bind,
                          c->phys ? lkv_bind_window_of(d, c->phys, lo, hi, meta_row, 4).bind
                                  : list};
    /* kv_cap: read by the LKV_HOLES pipelines only */
    struct { uint32_t cap, dim, heads, all_heads, kv_heads, skew, meta_skew, row_base, kv_cap; } push =
        {(uint32_t)c->capacity, (uint32_t)c->head_dim, (uint32_t)p->heads,
         (uint32_t)a->cache_heads, (uint32_t)a->kv_heads, k.skew, pos.skew, (uint32_t)lo,
         lkv_bind_kv_cap(c)};
    int64_t items = (int64_t)lkv_bind_longest(p->col[2], first, len) * p->heads * c->head_dim;
    return lkv_bind_dispatch(d, pipe_of(c), b, &push, lkv_bind_groups(d, items, len),
                             (uint32_t)len, 1);
}

/* One dispatch for the whole batch where one window holds the rows; a
 * cache too long for that (small binding ranges) stores fewer heads per
 * entry at a time. */
lkv_status lkv_bind_store(lkv_device *d, const lkv_store_args *a)
{
    lkv_status st = check(d, a);
    if (st != LKV_OK || a->n_entries == 0)
        return st;
    int64_t fit = rows_fit(d, a);
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s store: one cache row of %llu bytes exceeds this "
                        "device's %llu-byte binding range", lkv_bind_name(d),
                        (unsigned long long)kv_row_bytes(a->cache),
                        (unsigned long long)lkv_bind_lim(d)->max_range);
    int32_t heads = fit < a->cache_heads ? (int32_t)fit : a->cache_heads;
    store_plan p;
    st = plan_entries(d, a, heads, &p);
    if (st != LKV_OK)
        return st;
    st = lkv_bind_pipe_ready(d, pipe_of(a->cache));
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, p.n, STORE_COLS);
    for (int32_t first = 0, len = 0; st == LKV_OK && first < p.n; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, p.col[0], p.n, first, fit - (heads - 1), 1, &lo, &hi);
        st = store_run(d, a, &p, first, len, lo, hi + heads - 1);
    }
    plan_free(&p);
    return st;
}
