/* compact, reference: slot-by-slot moves to the front. kept is ascending, so
 * destination j <= source kept[j] and an earlier move never overwrites a
 * later source. */
#include <string.h>

#include "ref_ops.h"
#include "dtype.h"

static void move_i32(const lkv_buffer *b, int32_t cap, int32_t row, int32_t dst, int32_t src)
{
    int32_t *r = lkv_hostmem_row_i32(b, cap, row);
    r[dst] = r[src];
}

lkv_status lkv_ref_compact(lkv_device *dev, const lkv_compact_args *a)
{
    (void)dev;
    const lkv_cache_buffers *c = a->cache;
    lkv_status st = lkv_dtype_check(c->dtype, "ref", "compact");
    if (st != LKV_OK)
        return st;
    size_t row_bytes = (size_t)c->head_dim * lkv_dtype_size(c->dtype);
    for (int32_t r = 0; r < a->n_rows; r++) {
        int32_t row = a->rows[r];
        const int32_t *kept = lkv_hostmem_row_i32(a->kept, c->capacity, row);
        for (int32_t j = 0; j < a->row_k[r]; j++) {
            int32_t src = kept[j];
            if (src == j)
                continue;
            memcpy(lkv_hostmem_kv_slot(c->k, c, row, j), lkv_hostmem_kv_slot(c->k, c, row, src),
                   row_bytes);
            memcpy(lkv_hostmem_kv_slot(c->v, c, row, j), lkv_hostmem_kv_slot(c->v, c, row, src),
                   row_bytes);
            move_i32(c->pos, c->capacity, row, j, src);
            move_i32(c->state_a, c->capacity, row, j, src);
            move_i32(c->state_b, c->capacity, row, j, src);
            float *f = lkv_hostmem_row_f32(c->state_f, c->capacity, row);
            f[j] = f[src];
        }
    }
    return LKV_OK;
}
