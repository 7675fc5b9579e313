/* Binding windows. A storage-buffer binding spans at most
 * maxStorageBufferRange bytes (128 MiB on lavapipe) and starts at a multiple
 * of minStorageBufferOffsetAlignment, so a large cache is bound a window of
 * rows at a time; shaders index from the window's start plus a skew. */
#include "vk_internal.h"

lkv_vk_window lkv_vk_window_of(const lkv_device *d, const lkv_buffer *b, int64_t row_lo,
                               int64_t row_hi, VkDeviceSize row_bytes, uint32_t elem)
{
    VkDeviceSize off = (VkDeviceSize)row_lo * row_bytes;
    VkDeviceSize end = (VkDeviceSize)(row_hi + 1) * row_bytes;
    VkDeviceSize at = off / d->align * d->align;
    /* Shaders read f16 as 32-bit words: a row that ends mid-word needs the
     * whole word bound. b->size is a multiple of 4, so this stays inside. */
    end = (end + 3) & ~(VkDeviceSize)3;
    if (end > b->size)
        end = b->size;
    if (end <= at)
        end = at + 4 <= b->size ? at + 4 : b->size;
    lkv_vk_window w = {{b, at, end - at}, (uint32_t)((off - at) / elem)};
    return w;
}

int64_t lkv_vk_rows_fit(const lkv_device *d, VkDeviceSize row_bytes)
{
    if (row_bytes == 0)
        return INT64_MAX;
    return (int64_t)((d->max_range - d->align - 4) / row_bytes);
}

uint32_t lkv_vk_groups(const lkv_device *d, int64_t items, int64_t rows)
{
    int64_t g = (items + d->wg - 1) / d->wg;
    int64_t budget = d->max_groups / (rows > 0 ? rows : 1);
    int64_t cap = d->props.limits.maxComputeWorkGroupCount[0];
    budget = budget < 1 ? 1 : budget;
    g = g > budget ? budget : g; /* the shaders loop grid-stride over the rest */
    g = g > cap ? cap : g;
    return g < 1 ? 1 : (uint32_t)g;
}

int32_t lkv_vk_longest(const int32_t *v, int32_t first, int32_t len)
{
    int32_t most = 0;
    for (int32_t i = first; i < first + len; i++)
        most = v[i] > most ? v[i] : most;
    return most;
}

int32_t lkv_vk_run(const lkv_device *d, const int32_t *rows, int32_t count, int32_t first,
                   int64_t rows_fit, int32_t unit, int64_t *out_lo, int64_t *out_hi)
{
    int64_t max_len = d->props.limits.maxComputeWorkGroupCount[0];
    if (d->props.limits.maxComputeWorkGroupCount[1] < max_len)
        max_len = d->props.limits.maxComputeWorkGroupCount[1];
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
