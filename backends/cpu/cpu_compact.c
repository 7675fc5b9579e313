/* compact, fast: the oracle's moves (ref_compact.c) by runs. kept is
 * ascending, so consecutive kept slots form runs that move as one block of
 * K and V (memmove: a run may overlap its own destination); positions and
 * state move word by word in one pass; rows in parallel. With a hole map no
 * K/V moves and the map is rebuilt in place, the evicted entries through a
 * scratch of their own. The same bytes as the oracle. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "dtype.h"
#include "error.h"

typedef struct compact_job {
    const lkv_compact_args *a;
    int32_t *evicted;   /* holes: every row's evicted map entries */
    size_t *evicted_at; /* [n_rows]: row r's from here */
} compact_job;

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

/* The map's kept entries to the front in order (a write at w <= j never
 * reaches an entry not yet read), the evicted ones after them via `out`. */
static void remap_row(const lkv_cache_buffers *c, int32_t row, const int32_t *kept, int32_t k,
                      int32_t n, int32_t *out)
{
    int32_t *phys = lkv_hostmem_row_i32(c->phys, c->capacity, row);
    int32_t w = 0, e = 0;
    for (int32_t j = 0; j < n; j++) {
        if (w < k && kept[w] == j)
            phys[w++] = phys[j];
        else
            out[e++] = phys[j];
    }
    memcpy(phys + k, out, sizeof(int32_t) * (size_t)e);
}

static void compact_row(const compact_job *job, int32_t r)
{
    const lkv_compact_args *a = job->a;
    const lkv_cache_buffers *c = a->cache;
    int32_t row = a->rows[r], k = a->row_k[r];
    const int32_t *kept = lkv_hostmem_row_i32(a->kept, c->capacity, row);
    size_t kv_elem = (size_t)c->head_dim * lkv_dtype_size(c->dtype);
    int32_t first = 0; /* slots before the first hole stay where they are */
    while (first < k && kept[first] == first)
        first++;
    if (c->phys) {
        remap_row(c, row, kept, k, a->row_n[r], job->evicted + job->evicted_at[r]);
        compact_words(c, row, kept, first, k);
        return;
    }
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

/* Room for every row's evicted entries, taken before anything moves. */
static lkv_status reserve_evicted(compact_job *job)
{
    const lkv_compact_args *a = job->a;
    job->evicted_at = malloc(sizeof(size_t) * ((size_t)a->n_rows + 1));
    if (!job->evicted_at)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cpu compact: no host memory for %d rows' lists",
                        a->n_rows);
    size_t total = 0;
    for (int32_t r = 0; r < a->n_rows; r++) {
        job->evicted_at[r] = total;
        total += (size_t)(a->row_n[r] - a->row_k[r]);
    }
    job->evicted = malloc(sizeof(int32_t) * (total ? total : 1));
    if (!job->evicted)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cpu compact: no host memory for %zu evicted slots",
                        total);
    return LKV_OK;
}

lkv_status lkv_cpu_compact(lkv_device *dev, const lkv_compact_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, "cpu", "compact");
    if (st != LKV_OK)
        return st;
    compact_job job = {a, NULL, NULL};
    if (a->cache->phys)
        st = reserve_evicted(&job);
    if (st == LKV_OK)
        lkv_pool_run(a->n_rows > 1 ? lkv_cpu_state_of(dev)->pool : NULL, a->n_rows, compact_rows,
                     &job);
    free(job.evicted);
    free(job.evicted_at);
    return st;
}
