/* score on Vulkan: score.comp per run of rows (in double where the device
 * has shaderFloat64, as the oracle), then score_prior.comp when a previous
 * selection's slots must rank first. */
#include "error.h"
#include "vk_internal.h"

static lkv_status prior(lkv_device *d, const lkv_score_args *a, lkv_vk_binding list, int64_t lo,
                        int64_t hi, int32_t len)
{
    VkDeviceSize row_bytes = (VkDeviceSize)a->cache->capacity * 4;
    lkv_vk_window s = lkv_vk_window_of(d, a->scores, lo, hi, row_bytes, 4);
    lkv_vk_binding b[3] = {list, lkv_vk_window_of(d, a->prior_kept, lo, hi, row_bytes, 4).bind,
                           s.bind};
    struct { uint32_t cap, skew, row_base, prior_k; } push =
        {(uint32_t)a->cache->capacity, s.skew, (uint32_t)lo, (uint32_t)a->prior_k};
    return lkv_vk_dispatch(d, LKV_VK_PIPE_score_prior, b, &push, lkv_vk_groups(d, a->prior_k, len),
                           (uint32_t)len, 1);
}

lkv_status lkv_vk_score(lkv_device *d, const lkv_score_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    VkDeviceSize row_bytes = (VkDeviceSize)c->capacity * 4;
    int64_t fit = lkv_vk_rows_fit(d, row_bytes);
    int32_t unit = a->kind == LKV_SCORE_GROUP_MEAN ? a->rows_per_group : 1;
    lkv_vk_pipe_id pipe = d->has_f64 ? LKV_VK_PIPE_score_f64 : LKV_VK_PIPE_score_f32;
    lkv_status st = lkv_vk_pipe_ready(d, pipe);
    if (st == LKV_OK && a->prior_kept)
        st = lkv_vk_pipe_ready(d, LKV_VK_PIPE_score_prior);
    if (st == LKV_OK)
        st = lkv_vk_arena_room(d, lkv_vk_list_bytes(d, a->n_rows, 2));
    if (st != LKV_OK)
        return st;
    const int32_t *cols[2] = {a->rows, a->row_n};
    for (int32_t first = 0, len = 0; first < a->n_rows; first += len) {
        int64_t lo, hi;
        len = lkv_vk_run(d, a->rows, a->n_rows, first, fit, unit, &lo, &hi);
        if (hi - lo + 1 > fit)
            return lkv_fail(LKV_UNSUPPORTED, "vulkan score: the rows of one group (%lld .. %lld) "
                            "span more than one storage-buffer binding", (long long)lo, (long long)hi);
        int32_t most = lkv_vk_longest(a->row_n, first, len);
        lkv_vk_binding list;
        st = lkv_vk_put_list(d, cols, 2, first, len, &list);
        if (st != LKV_OK)
            return st;
        lkv_vk_window s = lkv_vk_window_of(d, a->scores, lo, hi, row_bytes, 4);
        lkv_vk_binding b[6] = {list, lkv_vk_window_of(d, c->pos, lo, hi, row_bytes, 4).bind,
                               lkv_vk_window_of(d, c->state_a, lo, hi, row_bytes, 4).bind,
                               lkv_vk_window_of(d, c->state_b, lo, hi, row_bytes, 4).bind,
                               lkv_vk_window_of(d, c->state_f, lo, hi, row_bytes, 4).bind, s.bind};
        struct {
            uint32_t cap, skew, row_base, kind;
            int32_t t, protect_head, protect_tail, pool_kernel;
            uint32_t rows_per_group, seed_lo, seed_hi;
        } push = {(uint32_t)c->capacity, s.skew, (uint32_t)lo, (uint32_t)a->kind, a->t,
                  a->protect_head, a->protect_tail, a->pool_kernel,
                  (uint32_t)(a->rows_per_group > 0 ? a->rows_per_group : 1),
                  (uint32_t)a->seed, (uint32_t)(a->seed >> 32)};
        st = lkv_vk_dispatch(d, pipe, b, &push, lkv_vk_groups(d, most, len), (uint32_t)len, 1);
        if (st == LKV_OK && a->prior_kept && a->prior_k > 0)
            st = prior(d, a, list, lo, hi, len);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}
