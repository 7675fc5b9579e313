/* compact on Vulkan: compact_kv.comp moves K and V, compact_meta.comp the
 * position and state, in rounds of gather-to-scratch then write (see the
 * shaders for why in place is safe). Every round covers every listed row, so
 * all workgroups of the device share the work; the scratch, and so the extra
 * memory an eviction needs, is bounded by LKV_VK_COMPACT_SCRATCH. f16 rows
 * that do not start on a 4-byte boundary (odd capacity * head_dim) share a
 * word with the previous row, so they are compacted one row per dispatch. */
#include "error.h"
#include "vk_internal.h"

#define LKV_VK_COMPACT_SCRATCH ((VkDeviceSize)16 << 20)

typedef struct compact_run {
    int32_t first, len;
    int64_t lo, hi;
    lkv_vk_binding list;
    lkv_vk_window kept;
} compact_run;

/* compact_kv takes a slot per workgroup: one per slot of the round, within
 * the device's budget (the workgroups loop over the rest). */
static uint32_t slot_groups(const lkv_device *d, int32_t rows, uint32_t slots)
{
    uint32_t g = d->max_groups / (uint32_t)rows;
    g = g < 1 ? 1 : g;
    return g < slots ? g : slots;
}

/* Slots per round per row, when each slot takes `bytes` of scratch. */
static uint32_t round_slots(const lkv_device *d, int32_t rows, uint32_t bytes)
{
    VkDeviceSize cap = LKV_VK_COMPACT_SCRATCH < d->max_range - d->align ? LKV_VK_COMPACT_SCRATCH
                                                                        : d->max_range - d->align;
    VkDeviceSize w = cap / ((VkDeviceSize)rows * bytes);
    return w < 1 ? 1 : (uint32_t)w;
}

static lkv_status move_kv(lkv_device *d, const lkv_compact_args *a, const compact_run *run)
{
    const lkv_cache_buffers *c = a->cache;
    int f16 = c->dtype == LKV_DTYPE_F16;
    uint32_t elem = f16 ? 2 : 4;
    VkDeviceSize kv_row = (VkDeviceSize)c->capacity * (VkDeviceSize)c->head_dim * elem;
    lkv_vk_window k = lkv_vk_window_of(d, c->k, run->lo, run->hi, kv_row, elem);
    /* Whole 32-bit words per slot unless f16 rows or slots straddle words. */
    int halves = f16 && (c->head_dim % 2 != 0 || k.skew % 2 != 0);
    uint32_t words = f16 && !halves ? (uint32_t)c->head_dim / 2 : (uint32_t)c->head_dim;
    uint32_t skew = f16 && !halves ? k.skew / 2 : k.skew;
    /* 16-byte units where every slot and the window skew allow. */
    int vec = !halves && words % 4 == 0 && skew % 4 == 0;
    uint32_t unit = vec ? 4 : 1;
    uint32_t slot_words = halves ? (words + 3) / 2 : words;
    int64_t most = lkv_vk_longest(a->row_k, run->first, run->len);
    uint32_t per_round = round_slots(d, run->len, slot_words * 8);
    VkDeviceSize scratch = (VkDeviceSize)run->len * per_round * slot_words * 8;
    lkv_status st = lkv_vk_reserve(d, &d->compact_scratch, (size_t)scratch);
    if (st != LKV_OK)
        return st;
    lkv_vk_binding b[5] = {run->list, run->kept.bind, k.bind,
                           lkv_vk_window_of(d, c->v, run->lo, run->hi, kv_row, elem).bind,
                           {d->compact_scratch, 0, scratch}};
    for (int64_t first = 0; st == LKV_OK && first < most; first += per_round)
        for (uint32_t phase = 0; st == LKV_OK && phase < 2; phase++) {
            struct { uint32_t cap, words, skew, row_base, meta_skew, phase, first, slots, half; } p =
                {(uint32_t)c->capacity, words / unit, skew / unit, (uint32_t)run->lo, run->kept.skew,
                 phase, (uint32_t)first, per_round, (uint32_t)(scratch / 8 / unit)};
            lkv_vk_pipe_id pipe = halves ? LKV_VK_PIPE_compact_kv_halves
                                         : vec ? LKV_VK_PIPE_compact_kv_vec : LKV_VK_PIPE_compact_kv;
            st = lkv_vk_dispatch(d, pipe, b, &p, slot_groups(d, run->len, per_round),
                                 (uint32_t)run->len, 1);
        }
    return st;
}

static lkv_status move_meta(lkv_device *d, const lkv_compact_args *a, const compact_run *run)
{
    const lkv_cache_buffers *c = a->cache;
    VkDeviceSize row = (VkDeviceSize)c->capacity * 4;
    int64_t most = lkv_vk_longest(a->row_k, run->first, run->len);
    uint32_t per_round = round_slots(d, run->len, 16);
    lkv_status st = lkv_vk_reserve(d, &d->compact_scratch, (size_t)run->len * per_round * 16);
    if (st != LKV_OK)
        return st;
    lkv_vk_binding b[7] = {run->list, run->kept.bind,
                           lkv_vk_window_of(d, c->pos, run->lo, run->hi, row, 4).bind,
                           lkv_vk_window_of(d, c->state_a, run->lo, run->hi, row, 4).bind,
                           lkv_vk_window_of(d, c->state_b, run->lo, run->hi, row, 4).bind,
                           lkv_vk_window_of(d, c->state_f, run->lo, run->hi, row, 4).bind,
                           {d->compact_scratch, 0, (VkDeviceSize)run->len * per_round * 16}};
    for (int64_t first = 0; st == LKV_OK && first < most; first += per_round)
        for (uint32_t phase = 0; st == LKV_OK && phase < 2; phase++) {
            struct { uint32_t cap, skew, row_base, phase, first, words; } p =
                {(uint32_t)c->capacity, run->kept.skew, (uint32_t)run->lo, phase, (uint32_t)first,
                 per_round};
            st = lkv_vk_dispatch(d, LKV_VK_PIPE_compact_meta, b, &p,
                                 lkv_vk_groups(d, per_round, run->len), (uint32_t)run->len, 1);
        }
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
    const int32_t *cols[2] = {a->rows, a->row_k};
    compact_run run = {0};
    for (run.first = 0; run.first < a->n_rows; run.first += run.len) {
        run.len = lkv_vk_run(d, a->rows, a->n_rows, run.first, fit, 1, &run.lo, &run.hi);
        lkv_status st = lkv_vk_put_list(d, cols, 2, run.first, run.len, &run.list);
        if (st != LKV_OK)
            return st;
        run.kept = lkv_vk_window_of(d, a->kept, run.lo, run.hi, (VkDeviceSize)c->capacity * 4, 4);
        st = move_kv(d, a, &run);
        if (st == LKV_OK)
            st = move_meta(d, a, &run);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}
