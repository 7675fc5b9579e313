/* store: new tokens' K and V into cache slots, with their positions and
 * fresh policy state (core/backend.h, lkv_store_args), one dispatch per
 * run of entries whose rows one binding window holds (normally one for the
 * whole batch): the grid's y is the entry, x strides over its
 * count * cache_heads * head_dim elements (shaders/store.comp,
 * kernels/store.cl). The rounding and the rule for non-finite and
 * out-of-range inputs are done on the bits in the kernel, so every device
 * stores what lkv_dtype_store stores, whatever its float conversions.
 *
 * The K/V inputs are bound whole (they are one step's or one chunk's
 * tokens); the entries are checked against the buffers here, since a bad
 * slot or row would write outside the cache. Everything is acquired before
 * the first dispatch, so a failure stores nothing. */
#include "dtype.h"
#include "error.h"
#include "bind_internal.h"

#define STORE_COLS 6

static lkv_bind_pipe pipe_of(lkv_dtype dtype)
{
    return dtype == LKV_DTYPE_F16 ? LKV_BIND_PIPE_store_f16
           : dtype == LKV_DTYPE_BF16 ? LKV_BIND_PIPE_store_bf16 : LKV_BIND_PIPE_store_f32;
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
    uint64_t rows = lkv_bind_size(d, c->k) / kv_row_bytes(c);
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

/* Rows one window holds, less the cache heads an entry adds past its row0. */
static int64_t entry_fit(lkv_device *d, const lkv_store_args *a)
{
    int64_t kv = lkv_bind_rows_fit(d, kv_row_bytes(a->cache));
    int64_t meta = lkv_bind_rows_fit(d, (uint64_t)a->cache->capacity * 4);
    return (kv < meta ? kv : meta) - (a->cache_heads - 1);
}

static lkv_status store_run(lkv_device *d, const lkv_store_args *a, int32_t first, int32_t len,
                            int64_t lo, int64_t hi)
{
    const lkv_cache_buffers *c = a->cache;
    const int32_t *cols[STORE_COLS] = {a->row0, a->slot0, a->count,
                                       a->src_token, a->position0, a->last_init};
    lkv_bind_buf list;
    lkv_status st = lkv_bind_put_list(d, cols, STORE_COLS, first, len, &list);
    if (st != LKV_OK)
        return st;
    uint32_t elem = (uint32_t)lkv_dtype_size(c->dtype);
    uint64_t meta_row = (uint64_t)c->capacity * 4;
    lkv_bind_window k = lkv_bind_window_of(d, c->k, lo, hi, kv_row_bytes(c), elem);
    lkv_bind_window pos = lkv_bind_window_of(d, c->pos, lo, hi, meta_row, 4);
    lkv_bind_buf b[9] = {list, lkv_bind_whole(d, a->k), lkv_bind_whole(d, a->v), k.bind,
                         lkv_bind_window_of(d, c->v, lo, hi, kv_row_bytes(c), elem).bind, pos.bind,
                         lkv_bind_window_of(d, c->state_a, lo, hi, meta_row, 4).bind,
                         lkv_bind_window_of(d, c->state_b, lo, hi, meta_row, 4).bind,
                         lkv_bind_window_of(d, c->state_f, lo, hi, meta_row, 4).bind};
    struct { uint32_t cap, dim, heads, kv_heads, skew, meta_skew, row_base; } push =
        {(uint32_t)c->capacity, (uint32_t)c->head_dim, (uint32_t)a->cache_heads,
         (uint32_t)a->kv_heads, k.skew, pos.skew, (uint32_t)lo};
    int64_t items = (int64_t)lkv_bind_longest(a->count, first, len) * a->cache_heads * c->head_dim;
    return lkv_bind_dispatch(d, pipe_of(c->dtype), b, &push, lkv_bind_groups(d, items, len),
                             (uint32_t)len, 1);
}

lkv_status lkv_bind_store(lkv_device *d, const lkv_store_args *a)
{
    lkv_status st = check(d, a);
    if (st != LKV_OK || a->n_entries == 0)
        return st;
    int64_t fit = entry_fit(d, a);
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s store: %d cache rows of %llu bytes exceed this "
                        "device's %llu-byte binding range", lkv_bind_name(d), a->cache_heads,
                        (unsigned long long)kv_row_bytes(a->cache),
                        (unsigned long long)lkv_bind_lim(d)->max_range);
    st = lkv_bind_pipe_ready(d, pipe_of(a->cache->dtype));
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, a->n_entries, STORE_COLS);
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n_entries; first += len) {
        int64_t lo, hi;
        len = lkv_bind_run(d, a->row0, a->n_entries, first, fit, 1, &lo, &hi);
        st = store_run(d, a, first, len, lo, hi + a->cache_heads - 1);
    }
    return st;
}
