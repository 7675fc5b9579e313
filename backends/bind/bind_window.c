/* Binding windows, runs and row lists. A binding spans at most max_range
 * bytes (maxStorageBufferRange: 128 MiB on lavapipe) and starts at a
 * multiple of the device's alignment, so a large cache is bound a window of
 * rows at a time; kernels index from the window's start plus a skew. */
#include <stdlib.h>
#include <string.h>

#include "bind_internal.h"
#include "error.h"

const lkv_bind_pipe_info lkv_bind_pipes[LKV_BIND_PIPE_COUNT] = {
#define LKV_BIND_PIPE(name, source, defines, bindings, push) {#name, #source, defines, bindings, push},
#include "bind_pipes.h"
#undef LKV_BIND_PIPE
};

lkv_bind_window lkv_bind_window_of(lkv_device *d, const lkv_buffer *b, int64_t row_lo,
                                   int64_t row_hi, uint64_t row_bytes, uint32_t elem)
{
    uint64_t size = lkv_bind_size(d, b), align = lkv_bind_lim(d)->align;
    uint64_t off = (uint64_t)row_lo * row_bytes;
    uint64_t end = (uint64_t)(row_hi + 1) * row_bytes;
    uint64_t at = off / align * align;
    /* Kernels may read f16 and bf16 as 32-bit words: a row that ends
     * mid-word needs the whole word bound. Buffer sizes are multiples of 4,
     * so this stays inside. */
    end = (end + 3) & ~(uint64_t)3;
    if (end > size)
        end = size;
    if (end <= at)
        end = at + 4 <= size ? at + 4 : size;
    lkv_bind_window w = {{b, at, end - at}, (uint32_t)((off - at) / elem)};
    return w;
}

lkv_bind_buf lkv_bind_whole(lkv_device *d, const lkv_buffer *b)
{
    uint64_t size = lkv_bind_size(d, b), range = lkv_bind_lim(d)->max_range;
    lkv_bind_buf w = {b, 0, size < range ? size : range};
    return w;
}

lkv_bind_window lkv_bind_kv_window(lkv_device *d, const lkv_cache_buffers *c,
                                   const lkv_buffer *b, int64_t row_lo, int64_t row_hi,
                                   uint64_t row_bytes, uint32_t elem)
{
    if (!c->paged)
        return lkv_bind_window_of(d, b, row_lo, row_hi, row_bytes, elem);
    lkv_bind_window w = {lkv_bind_whole(d, b), 0};
    return w;
}

int64_t lkv_bind_kv_rows_fit(lkv_device *d, const lkv_cache_buffers *c, uint64_t row_bytes)
{
    return c->paged ? INT64_MAX : lkv_bind_rows_fit(d, row_bytes);
}

uint32_t lkv_bind_kv_cap(const lkv_cache_buffers *c)
{
    return c->paged ? 0 : (uint32_t)c->capacity;
}

lkv_status lkv_bind_check_cache(lkv_device *d, const lkv_cache_buffers *c)
{
    uint64_t size = c->paged ? lkv_bind_size(d, c->k) : 0;
    uint64_t range = lkv_bind_lim(d)->max_range, most = (uint64_t)1 << 34;
    if (size > range || size > most)
        return lkv_fail(LKV_UNSUPPORTED,
                        "%s: a paged cache's K/V pool of %llu bytes exceeds one binding "
                        "(%llu bytes), and the kernels bind the pool whole: make pool_blocks "
                        "smaller",
                        lkv_bind_name(d), (unsigned long long)size,
                        (unsigned long long)(range < most ? range : most));
    return LKV_OK;
}

lkv_status lkv_bind_check_fits(lkv_device *d, uint64_t size, const char *op, const char *what)
{
    /* the kernels index 32-bit words with 32-bit integers */
    uint64_t range = lkv_bind_lim(d)->max_range, most = (uint64_t)1 << 34;
    if (size > range || size > most)
        return lkv_fail(LKV_UNSUPPORTED,
                        "%s %s: the %s's %llu bytes exceed one binding (%llu bytes, at most "
                        "16 GiB of 32-bit words): apply the plan per smaller buffer",
                        lkv_bind_name(d), op, what, (unsigned long long)size,
                        (unsigned long long)(range < most ? range : most));
    return LKV_OK;
}

int32_t lkv_bind_table_n(const lkv_engine_slots *s)
{
    return s->block_size > 0 ? s->table_rows * s->max_blocks : 1;
}

lkv_status lkv_bind_put_table(lkv_device *d, const lkv_engine_slots *s, lkv_bind_buf *out_bind)
{
    /* a dense layout binds a one-entry table, never read */
    static const int32_t none = 0;
    const int32_t *table = s->block_size > 0 ? s->table : &none;
    return lkv_bind_put_list(d, &table, 1, 0, lkv_bind_table_n(s), out_bind);
}

const int32_t *lkv_bind_tab_rows(const lkv_engine_slots *s)
{
    return s->block_size > 0 ? s->tab_row : (const int32_t *)(const void *)s->base;
}

int64_t lkv_bind_rows_fit(lkv_device *d, uint64_t row_bytes)
{
    if (row_bytes == 0)
        return INT64_MAX;
    const lkv_bind_limits *lim = lkv_bind_lim(d);
    return (int64_t)((lim->max_range - lim->align - 4) / row_bytes);
}

static uint32_t groups_within(const lkv_bind_limits *lim, uint32_t most, int64_t items,
                              int64_t rows)
{
    int64_t g = (items + lim->wg - 1) / lim->wg;
    int64_t budget = most / (rows > 0 ? rows : 1);
    budget = budget < 1 ? 1 : budget;
    g = g > budget ? budget : g; /* the kernels loop grid-stride over the rest */
    g = g > lim->max_count[0] ? lim->max_count[0] : g;
    return g < 1 ? 1 : (uint32_t)g;
}

uint32_t lkv_bind_groups(lkv_device *d, int64_t items, int64_t rows)
{
    return groups_within(lkv_bind_lim(d), lkv_bind_lim(d)->max_groups, items, rows);
}

/* A device on the CPU runs a work-group's items one after another, so an
 * item that loops grid-stride reads slots a whole grid apart: at the CPU
 * budget and a batch of 64 rows, 5 work-groups a row, each item strides
 * 320 K rows, which no prefetcher follows (PoCL's logits ran 1.8x slower
 * per byte than its V pass). A run of consecutive slots per work-group
 * (attend_logits: a team of items per slot) reads K in order; these
 * kernels keep no per-group state, so the extra groups cost only their
 * launch. */
uint32_t lkv_bind_slot_groups(lkv_device *d, int64_t items, int64_t rows)
{
    return groups_within(lkv_bind_lim(d), lkv_bind_lim(d)->max_slot_groups, items, rows);
}

int32_t lkv_bind_longest(const int32_t *v, int32_t first, int32_t len)
{
    int32_t most = 0;
    for (int32_t i = first; i < first + len; i++)
        most = v[i] > most ? v[i] : most;
    return most;
}

int32_t lkv_bind_run(lkv_device *d, const int32_t *rows, int32_t count, int32_t first,
                     int64_t rows_fit, int32_t unit, int64_t *out_lo, int64_t *out_hi)
{
    const lkv_bind_limits *lim = lkv_bind_lim(d);
    int64_t max_len = lim->max_count[0] < lim->max_count[1] ? lim->max_count[0] : lim->max_count[1];
    if (unit < 1)
        unit = 1;
    int64_t lo = rows[first], hi = rows[first];
    int32_t len = 0;
    while (first + len < count) {
        int32_t take = count - first - len < unit ? count - first - len : unit;
        int64_t nlo = lo, nhi = hi;
        for (int32_t j = 0; j < take; j++) {
            int64_t r = rows[first + len + j];
            nlo = r < nlo ? r : nlo;
            nhi = r > nhi ? r : nhi;
        }
        if (len > 0 && (nhi - nlo + 1 > rows_fit || len + take > max_len))
            break;
        lo = nlo;
        hi = nhi;
        len += take;
    }
    *out_lo = lo;
    *out_hi = hi;
    return len;
}

size_t lkv_bind_list_bytes(lkv_device *d, int32_t n_rows, int ncols)
{
    size_t align = (size_t)lkv_bind_lim(d)->align;
    return (size_t)n_rows * ((size_t)ncols * 4 + align) + align;
}

/* The host staging holds the largest list the op can place, so placing it
 * later cannot fail for memory. */
lkv_status lkv_bind_list_room(lkv_device *d, int32_t n_rows, int ncols)
{
    lkv_bind_device *b = lkv_bind_of(d);
    size_t words = (size_t)n_rows * (size_t)ncols;
    if (words > b->list_cap) {
        uint32_t *grown = realloc(b->list_words, words * sizeof *grown);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for a list of %d rows",
                            b->drv->name, n_rows);
        b->list_words = grown;
        b->list_cap = words;
    }
    return b->drv->list_room(d, lkv_bind_list_bytes(d, n_rows, ncols));
}

lkv_status lkv_bind_put_list(lkv_device *d, const int32_t *const *cols, int ncols, int32_t first,
                             int32_t len, lkv_bind_buf *out_bind)
{
    lkv_bind_device *b = lkv_bind_of(d);
    if ((size_t)len * (size_t)ncols > b->list_cap)
        return lkv_fail(LKV_INTERNAL, "%s: a list of %d rows placed without room made for it",
                        b->drv->name, len);
    for (int32_t i = 0; i < len; i++)
        for (int c = 0; c < ncols; c++)
            b->list_words[(size_t)i * (size_t)ncols + (size_t)c] = (uint32_t)cols[c][first + i];
    return b->drv->list_put(d, b->list_words, (size_t)len * (size_t)ncols * 4, out_bind);
}

const int32_t *lkv_bind_steps(lkv_device *d, const int32_t *row_t, int32_t t, int32_t n_rows)
{
    lkv_bind_device *b = lkv_bind_of(d);
    if (row_t)
        return row_t;
    if ((size_t)n_rows > b->steps_cap) {
        int32_t *grown = realloc(b->steps, (size_t)n_rows * sizeof *grown);
        if (!grown) {
            lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for the steps of %d rows",
                     b->drv->name, n_rows);
            return NULL;
        }
        b->steps = grown;
        b->steps_cap = (size_t)n_rows;
    }
    for (int32_t i = 0; i < n_rows; i++)
        b->steps[i] = t;
    return b->steps;
}

void lkv_bind_release(lkv_bind_device *b)
{
    free(b->steps);
    b->steps = NULL;
    b->steps_cap = 0;
    free(b->list_words);
    b->list_words = NULL;
    b->list_cap = 0;
}

lkv_status lkv_bind_wrap_check(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes)
{
    uint64_t align = lkv_bind_lim(d)->align;
    if (handle == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s wrap: the handle is 0 (no buffer)",
                        lkv_bind_name(d));
    if (offset % align != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s wrap: offset %llu is not a multiple of this "
                        "device's binding alignment, %llu bytes: place the array at a multiple "
                        "of %llu", lkv_bind_name(d), (unsigned long long)offset,
                        (unsigned long long)align, (unsigned long long)align);
    if (bytes == 0 || offset > UINT64_MAX - bytes)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s wrap: %zu bytes at offset %llu is no range",
                        lkv_bind_name(d), bytes, (unsigned long long)offset);
    return LKV_OK;
}
