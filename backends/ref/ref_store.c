/* store, reference: each entry's tokens into consecutive slots of every
 * cache head of its (sequence, layer), in the storage type, with positions
 * and fresh policy state (K/V to the places the hole map gives, if any).
 * Device inputs reach it unchecked, so a value the storage cannot hold is
 * made finite here (the rule of lkv_store_args). */
#include <math.h>

#include "ref_ops.h"
#include "dtype.h"

static float storable(lkv_dtype dtype, float x)
{
    if (!isfinite(x))
        return 0.0f;
    float top = lkv_dtype_largest(dtype);
    return x > top ? top : x < -top ? -top : x;
}

static void store_token(const lkv_cache_buffers *c, const float *x, lkv_buffer *dst, int32_t row,
                        int32_t slot)
{
    unsigned char *out = lkv_hostmem_kv_at(dst, c, row, slot);
    for (int32_t i = 0; i < c->head_dim; i++)
        lkv_dtype_store(c->dtype, out, (size_t)i, storable(c->dtype, x[i]));
}

static void store_entry(const lkv_store_args *a, int32_t e)
{
    const lkv_cache_buffers *c = a->cache;
    const float *k = (const float *)(const void *)a->k->data;
    const float *v = (const float *)(const void *)a->v->data;
    size_t width = (size_t)a->kv_heads * (size_t)c->head_dim;
    for (int32_t h = 0; h < a->cache_heads; h++) {
        int32_t row = a->row0[e] + h;
        size_t kv_head = (size_t)(h * a->kv_heads / a->cache_heads);
        for (int32_t j = 0; j < a->count[e]; j++) {
            int32_t slot = a->slot0[e] + j;
            size_t at = (size_t)(a->src_token[e] + j) * width + kv_head * (size_t)c->head_dim;
            store_token(c, k + at, c->k, row, slot);
            store_token(c, v + at, c->v, row, slot);
            lkv_hostmem_row_i32(c->pos, c->capacity, row)[slot] = a->position0[e] + j;
            lkv_hostmem_row_i32(c->state_a, c->capacity, row)[slot] = a->last_init[e];
            lkv_hostmem_row_i32(c->state_b, c->capacity, row)[slot] = 0;
            lkv_hostmem_row_f32(c->state_f, c->capacity, row)[slot] = 0.0f;
        }
    }
}

lkv_status lkv_ref_store(lkv_device *dev, const lkv_store_args *a)
{
    (void)dev;
    lkv_status st = lkv_dtype_check(a->cache->dtype, "ref", "store");
    if (st != LKV_OK)
        return st;
    for (int32_t e = 0; e < a->n_entries; e++)
        store_entry(a, e);
    return LKV_OK;
}
