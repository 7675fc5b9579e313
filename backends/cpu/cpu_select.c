/* select, fast: the oracle's decision (ref_select.c: order by score
 * descending, NaN last, ties by slot ascending; keep the first k; list them
 * ascending) without sorting. Scores map to unsigned keys that order as the
 * floats do (NaN lowest, -0 equal to +0); a radix select over the key's four
 * bytes finds the k-th key T, and one ascending scan keeps every slot above
 * T and the lowest-numbered slots at T until k are kept, which is the
 * oracle's tie order. Five passes over the row, no scratch, rows in
 * parallel: the same slots as the oracle, bit for bit. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static inline uint32_t key_of(float f)
{
    if (isnan(f))
        return 0;
    if (f == 0.0f)
        f = 0.0f; /* -0 ties with +0, as the oracle's float compare */
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

/* The k-th largest key of s[0..n) (1 <= k <= n) and how many keys exceed it. */
static uint32_t kth_key(const float *s, int32_t n, int32_t k, int32_t *out_above)
{
    uint32_t prefix = 0, mask = 0;
    int32_t above = 0; /* keys above every candidate so far */
    for (int shift = 24; shift >= 0; shift -= 8) {
        int32_t hist[256] = {0};
        for (int32_t i = 0; i < n; i++) {
            uint32_t key = key_of(s[i]);
            if ((key & mask) == prefix)
                hist[(key >> shift) & 0xffu]++;
        }
        int32_t b = 255;
        while (above + hist[b] < k)
            above += hist[b--];
        prefix |= (uint32_t)b << shift;
        mask |= 0xffu << shift;
    }
    *out_above = above;
    return prefix;
}

static void select_row(const lkv_select_args *a, int32_t r)
{
    int32_t row = a->rows[r], n = a->row_n[r], k = a->row_k[r];
    const float *s = lkv_hostmem_row_f32(a->scores, a->capacity, row);
    int32_t *kept = lkv_hostmem_row_i32(a->kept, a->capacity, row);
    if (k <= 0 || n <= 0)
        return;
    if (k >= n) {
        for (int32_t i = 0; i < n; i++)
            kept[i] = i;
        return;
    }
    int32_t above = 0;
    uint32_t t = kth_key(s, n, k, &above);
    int32_t at_t = k - above, out = 0;
    for (int32_t i = 0; i < n && out < k; i++) {
        uint32_t key = key_of(s[i]);
        if (key > t || (key == t && at_t-- > 0))
            kept[out++] = i;
    }
}

static void select_rows(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t r = begin; r < end; r++)
        select_row(ctx, (int32_t)r);
}

lkv_status lkv_cpu_select(lkv_device *dev, const lkv_select_args *a)
{
    int64_t slots = 0;
    for (int32_t r = 0; r < a->n_rows; r++)
        slots += a->row_n[r];
    /* five passes per slot: worth the pool from a few rows of thousands */
    lkv_pool *pool = slots >= 16384 ? lkv_cpu_state_of(dev)->pool : NULL;
    lkv_pool_run(pool, a->n_rows, select_rows, (void *)a);
    return LKV_OK;
}
