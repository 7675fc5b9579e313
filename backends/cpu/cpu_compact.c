/* compact, fast: the oracle's moves (ref_compact.c) by runs. kept is
 * ascending, so consecutive kept slots form runs that move as one block of
 * K and V (memmove: a run may overlap its own destination); positions and
 * state move word by word in one pass; rows in parallel. The same bytes as
 * the oracle. */
#include <string.h>

#include "cpu_internal.h"
#include "dtype.h"

static void move_run(const lkv_buffer *b, size_t elem, int32_t cap, int32_t row, int32_t dst,
                     int32_t src, int32_t len)
{
    unsigned char *base = b->data + (size_t)row * (size_t)cap * elem;
    memmove(base + (size_t)dst * elem, base + (size_t)src * elem, (size_t)len * elem);
}

/* The four 4-byte rows (positions, state): runs there are tens of bytes, so
 * one pass of word moves from the first slot that moves beats a memmove per
 * run and per row. */
static void compact_words(const lkv_cache_buffers *c, int32_t row, const int32_t *kept,
                          int32_t first, int32_t k)
{
    int32_t *w[4] = {lkv_hostmem_row_i32(c->pos, c->capacity, row),
                     lkv_hostmem_row_i32(c->state_a, c->capacity, row),
                     lkv_hostmem_row_i32(c->state_b, c->capacity, row),
                     lkv_hostmem_row_i32(c->state_f, c->capacity, row)}; /* f32 bits */
    for (int b = 0; b < 4; b++)
        for (int32_t j = first; j < k; j++)
            w[b][j] = w[b][kept[j]];
}

static void compact_row(const lkv_compact_args *a, int32_t r)
{
    const lkv_cache_buffers *c = a->cache;
    int32_t row = a->rows[r], k = a->row_k[r];
    const int32_t *kept = lkv_hostmem_row_i32(a->kept, c->capacity, row);
    size_t kv_elem = (size_t)c->head_dim * lkv_dtype_size(c->dtype);
    int32_t first = 0; /* slots before the first hole stay where they are */
    while (first < k && kept[first] == first)
        first++;
    for (int32_t j = first; j < k;) {
        int32_t len = 1;
        while (j + len < k && kept[j + len] == kept[j] + len)
            len++;
        move_run(c->k, kv_elem, c->capacity, row, j, kept[j], len);
        move_run(c->v, kv_elem, c->capacity, row, j, kept[j], len);
        j += len;
    }
    compact_words(c, row, kept, first, k);
}

static void compact_rows(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t r = begin; r < end; r++)
        compact_row(ctx, (int32_t)r);
}

lkv_status lkv_cpu_compact(lkv_device *dev, const lkv_compact_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, "cpu", "compact");
    if (st != LKV_OK)
        return st;
    lkv_pool_run(a->n_rows > 1 ? lkv_cpu_state_of(dev)->pool : NULL, a->n_rows, compact_rows,
                 (void *)a);
    return LKV_OK;
}
