/* store on CUDA/HIP: the batch's entry lists in one upload, then one launch
 * writes every entry's K, V, positions and fresh state
 * (backends/gpu/kernels/store.cu). The inputs may be device arrays nobody
 * checked, so the kernel keeps the cache finite; what the host checks here
 * is the shape, so that no entry reaches outside the cache or the inputs
 * whatever the arrays hold. */
#include "dtype.h"
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

/* The slots, rows and input tokens the kernel would touch, against the
 * buffers' sizes. */
static lkv_status check_entry(const lkv_device *d, const lkv_store_args *a, int32_t e,
                              uint64_t rows, uint64_t tokens)
{
    const lkv_cache_buffers *c = a->cache;
    int64_t slot0 = a->slot0[e], count = a->count[e], row0 = a->row0[e], src = a->src_token[e];
    if (count < 0 || slot0 < 0 || slot0 + count > c->capacity || row0 < 0 ||
        (uint64_t)row0 + (uint64_t)a->cache_heads > rows || src < 0 ||
        (uint64_t)src + (uint64_t)count > tokens)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s store: entry %d (rows %lld.., slots %lld + %lld, "
                        "tokens %lld..) lies outside the cache (%llu rows of %d slots) or the "
                        "inputs (%llu tokens)", d->drv->name, (int)e, (long long)row0,
                        (long long)slot0, (long long)count, (long long)src,
                        (unsigned long long)rows, c->capacity, (unsigned long long)tokens);
    return LKV_OK;
}

static lkv_status check_shape(const lkv_device *d, const lkv_store_args *a, int32_t *out_longest)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_status st = lkv_dtype_check(c->dtype, d->drv->name, "store");
    if (st != LKV_OK)
        return st;
    if (c->head_dim <= 0 || c->capacity <= 0 || a->kv_heads <= 0 || a->cache_heads <= 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s store: head_dim %d, capacity %d, kv_heads %d, "
                        "cache_heads %d; all must be positive", d->drv->name, c->head_dim,
                        c->capacity, a->kv_heads, a->cache_heads);
    uint64_t row_bytes = (uint64_t)c->capacity * (uint64_t)c->head_dim * lkv_dtype_size(c->dtype);
    uint64_t token_bytes = (uint64_t)a->kv_heads * (uint64_t)c->head_dim * sizeof(float);
    /* a paged cache's K/V is a pool of places, not rows: the rows are the
     * metadata's (the places come from core's block tables) */
    uint64_t rows = UINT64_MAX, tokens = a->k->size / token_bytes;
    if (!c->paged) {
        uint64_t kv = c->k->size < c->v->size ? c->k->size : c->v->size;
        rows = kv / row_bytes;
    }
    tokens = a->v->size / token_bytes < tokens ? a->v->size / token_bytes : tokens;
    /* pos and the states hold [rows][capacity] words */
    uint64_t meta_rows = c->pos->size / ((uint64_t)c->capacity * 4);
    const lkv_buffer *meta[] = {c->state_a, c->state_b, c->state_f};
    for (int i = 0; i < 3; i++)
        if (meta[i]->size / ((uint64_t)c->capacity * 4) < meta_rows)
            meta_rows = meta[i]->size / ((uint64_t)c->capacity * 4);
    rows = meta_rows < rows ? meta_rows : rows;
    int64_t longest = 0;
    for (int32_t e = 0; e < a->n_entries && st == LKV_OK; e++) {
        st = check_entry(d, a, e, rows, tokens);
        int64_t items = (int64_t)a->count[e] * a->cache_heads * c->head_dim;
        longest = items > longest ? items : longest;
    }
    *out_longest = longest > INT32_MAX ? INT32_MAX : (int32_t)longest;
    return st;
}

static lkv_gpu_kernel_id kernel_for(lkv_dtype dtype)
{
    return dtype == LKV_DTYPE_F16    ? LKV_GPU_K_lkv_store_f16
           : dtype == LKV_DTYPE_BF16 ? LKV_GPU_K_lkv_store_bf16
                                     : LKV_GPU_K_lkv_store_f32;
}

lkv_status lkv_gpu_store(lkv_device *d, const lkv_store_args *a)
{
    int32_t longest = 0;
    lkv_status st = check_shape(d, a, &longest);
    if (st != LKV_OK || a->n_entries <= 0)
        return st;
    const int32_t *host[6] = {a->row0, a->slot0, a->count, a->src_token, a->position0,
                              a->last_init};
    size_t n = (size_t)a->n_entries, counts[6] = {n, n, n, n, n, n};
    lkv_gpu_ptr list[6];
    st = lkv_gpu_upload(d, 6, host, counts, list);
    if (st != LKV_OK)
        return st;
    const lkv_cache_buffers *c = a->cache;
    lkv_gpu_ptr kin = a->k->ptr, vin = a->v->ptr, k = c->k->ptr, v = c->v->ptr, pos = c->pos->ptr;
    lkv_gpu_ptr sa = c->state_a->ptr, sb = c->state_b->ptr, sf = c->state_f->ptr;
    lkv_gpu_ptr phys = c->phys ? c->phys->ptr : 0; /* K/V at their places when holes are filled */
    int32_t cap = c->capacity, kv_cap = c->paged ? 0 : cap, dim = c->head_dim;
    int32_t kv_heads = a->kv_heads;
    int32_t cache_heads = a->cache_heads, n_entries = a->n_entries;
    void *args[] = {&list[0], &list[1], &list[2], &list[3], &list[4], &list[5], &kin,
                    &vin,     &k,       &v,       &pos,     &sa,      &sb,      &sf,
                    &phys,    &cap,     &kv_cap,  &dim,     &kv_heads, &cache_heads, &n_entries};
    /* a few blocks per multiprocessor in all, over the entries */
    uint32_t gy = lkv_gpu_rows_y(d, n_entries);
    uint32_t gx = lkv_gpu_stride_blocks(longest, LKV_STORE_BLOCK);
    return lkv_gpu_launch_kernel(d, kernel_for(c->dtype), gx, gy, 1, LKV_STORE_BLOCK, args);
}
