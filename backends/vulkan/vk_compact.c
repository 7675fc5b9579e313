/* compact on Vulkan: compact_kv.comp moves K and V, compact_meta.comp the
 * position and state; one workgroup per row. f16 rows that do not start on
 * a 4-byte boundary (odd capacity * head_dim) share a word with the previous
 * row, so they are compacted one row per dispatch. */
#include "error.h"
#include "vk_internal.h"

static lkv_status run_rows(lkv_device *d, const lkv_compact_args *a, int32_t first, int32_t len,
                           int64_t lo, int64_t hi)
{
    const lkv_cache_buffers *c = a->cache;
    uint32_t elem = c->dtype == LKV_DTYPE_F16 ? 2 : 4;
    VkDeviceSize meta_row = (VkDeviceSize)c->capacity * 4;
    VkDeviceSize kv_row = (VkDeviceSize)c->capacity * (VkDeviceSize)c->head_dim * elem;
    const int32_t *cols[2] = {a->rows, a->row_k};
    lkv_vk_binding list;
    lkv_status st = lkv_vk_put_list(d, cols, 2, first, len, &list);
    if (st != LKV_OK)
        return st;
    lkv_vk_window kept = lkv_vk_window_of(d, a->kept, lo, hi, meta_row, 4);
    lkv_vk_window k = lkv_vk_window_of(d, c->k, lo, hi, kv_row, elem);
    lkv_vk_binding bkv[4] = {list, kept.bind, k.bind,
                             lkv_vk_window_of(d, c->v, lo, hi, kv_row, elem).bind};
    struct { uint32_t cap, dim, kv_skew, row_base, meta_skew; } pkv =
        {(uint32_t)c->capacity, (uint32_t)c->head_dim, k.skew, (uint32_t)lo, kept.skew};
    st = lkv_vk_dispatch(d, elem == 2 ? LKV_VK_PIPE_compact_kv_f16 : LKV_VK_PIPE_compact_kv_f32, bkv,
                         &pkv, (uint32_t)len, 1, 1);
    lkv_vk_binding bm[6] = {list, kept.bind,
                            lkv_vk_window_of(d, c->pos, lo, hi, meta_row, 4).bind,
                            lkv_vk_window_of(d, c->state_a, lo, hi, meta_row, 4).bind,
                            lkv_vk_window_of(d, c->state_b, lo, hi, meta_row, 4).bind,
                            lkv_vk_window_of(d, c->state_f, lo, hi, meta_row, 4).bind};
    struct { uint32_t cap, skew, row_base; } pm = {(uint32_t)c->capacity, kept.skew, (uint32_t)lo};
    if (st == LKV_OK)
        st = lkv_vk_dispatch(d, LKV_VK_PIPE_compact_meta, bm, &pm, (uint32_t)len, 1, 1);
    return st;
}

lkv_status lkv_vk_compact(lkv_device *d, const lkv_compact_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    uint32_t elem = c->dtype == LKV_DTYPE_F16 ? 2 : 4;
    VkDeviceSize kv_row = (VkDeviceSize)c->capacity * (VkDeviceSize)c->head_dim * elem;
    int64_t fit = lkv_vk_rows_fit(d, kv_row);
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "vulkan compact: one cache row (%llu bytes) exceeds this "
                        "device's %llu-byte storage-buffer range",
                        (unsigned long long)kv_row, (unsigned long long)d->max_range);
    if (elem == 2 && ((int64_t)c->capacity * c->head_dim) % 2 != 0)
        fit = 1;
    for (int32_t first = 0, len = 0; first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_vk_run(d, a->rows, a->n_rows, first, fit, 1, &lo, &hi);
        lkv_status st = run_rows(d, a, first, len, lo, hi);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}
