/* compact, reference: slot-by-slot moves to the front. kept is ascending, so
 * destination j <= source kept[j] and an earlier move never overwrites a
 * later source. With a hole map the K/V stay and the map's row is rebuilt
 * from a copy: the kept slots' places in order, then the evicted ones'. */
#include <stdlib.h>
#include <string.h>

#include "ref_ops.h"
#include "dtype.h"
#include "error.h"

static void move_i32(const lkv_buffer *b, int32_t cap, int32_t row, int32_t dst, int32_t src)
{
    int32_t *r = lkv_hostmem_row_i32(b, cap, row);
    r[dst] = r[src];
}

static void move_kv(const lkv_cache_buffers *c, int32_t row, int32_t dst, int32_t src)
{
    size_t row_bytes = (size_t)c->head_dim * lkv_dtype_size(c->dtype);
    memcpy(lkv_hostmem_kv_slot(c->k, c, row, dst), lkv_hostmem_kv_slot(c->k, c, row, src),
           row_bytes);
    memcpy(lkv_hostmem_kv_slot(c->v, c, row, dst), lkv_hostmem_kv_slot(c->v, c, row, src),
           row_bytes);
}

/* old: the row's map before the eviction, its first n entries. */
static void remap_row(const lkv_cache_buffers *c, int32_t row, const int32_t *kept, int32_t k,
                      int32_t n, const int32_t *old)
{
    int32_t *phys = lkv_hostmem_row_i32(c->phys, c->capacity, row);
    int32_t w = 0, e = k;
    for (int32_t j = 0; j < n; j++) {
        if (w < k && kept[w] == j)
            phys[w++] = old[j];
        else
            phys[e++] = old[j];
    }
}

lkv_status lkv_ref_compact(lkv_device *dev, const lkv_compact_args *a)
{
    (void)dev;
    const lkv_cache_buffers *c = a->cache;
    lkv_status st = lkv_dtype_check(c->dtype, "ref", "compact");
    if (st != LKV_OK)
        return st;
    int32_t *old = c->phys ? malloc(sizeof(int32_t) * (size_t)c->capacity) : NULL;
    if (c->phys && !old)
        return lkv_fail(LKV_OUT_OF_MEMORY, "ref compact: no host memory for a hole map row of %d",
                        c->capacity);
    for (int32_t r = 0; r < a->n_rows; r++) {
        int32_t row = a->rows[r];
        const int32_t *kept = lkv_hostmem_row_i32(a->kept, c->capacity, row);
        if (old) {
            memcpy(old, lkv_hostmem_row_i32(c->phys, c->capacity, row),
                   sizeof(int32_t) * (size_t)a->row_n[r]);
            remap_row(c, row, kept, a->row_k[r], a->row_n[r], old);
        }
        for (int32_t j = 0; j < a->row_k[r]; j++) {
            int32_t src = kept[j];
            if (src == j)
                continue;
            if (!old)
                move_kv(c, row, j, src);
            move_i32(c->pos, c->capacity, row, j, src);
            move_i32(c->state_a, c->capacity, row, j, src);
            move_i32(c->state_b, c->capacity, row, j, src);
            float *f = lkv_hostmem_row_f32(c->state_f, c->capacity, row);
            f[j] = f[src];
        }
    }
    free(old);
    return LKV_OK;
}
