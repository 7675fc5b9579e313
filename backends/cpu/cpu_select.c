/* select, fast: the oracle's decision (ref_select.c: order by score
 * descending, NaN last, ties by slot ascending; keep the first k; list them
 * ascending) without sorting. Scores map to unsigned keys that order as the
 * floats do (NaN lowest, -0 equal to +0); a radix select over the key's four
 * bytes finds the k-th key T, and one ascending scan keeps every slot above
 * T and the lowest-numbered slots at T until k are kept, which is the
 * oracle's tie order. Two passes over the row (the other bytes look only
 * at the candidates left, in the kept row as scratch), rows in parallel:
 * the same slots as the oracle, bit for bit. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static inline uint32_t key_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    b = b == 0x80000000u ? 0u : b; /* -0 ties with +0, as the oracle's float compare */
    uint32_t key = b & 0x80000000u ? ~b : b | 0x80000000u;
    return isnan(f) ? 0u : key;
}

/* The k-th largest key of s[0..n) (1 <= k <= n) and how many keys exceed it.
 * One pass computes the keys into `scratch` (n entries) and histograms the
 * top byte; each later byte histograms only the candidates left, which are
 * packed to the front of scratch as they are found, so the row is read once
 * and the rest touches a shrinking set. Scores of one row share their top
 * bytes, so counts go to four histograms in turn (one counter incremented
 * back to back waits on its own store) and the packing is branch-free. */
static uint32_t kth_key(const float *s, int32_t n, int32_t k, uint32_t *scratch,
                        int32_t *out_above)
{
    int32_t hist[4][256] = {{0}};
    for (int32_t i = 0; i < n; i++) {
        uint32_t key = key_of(s[i]);
        scratch[i] = key;
        hist[i & 3][key >> 24]++;
    }
    uint32_t prefix = 0;
    int32_t above = 0, m = n; /* above: keys above every candidate so far */
    for (int shift = 24;; shift -= 8) {
        uint32_t b = 255;
        int32_t count;
        while (above + (count = hist[0][b] + hist[1][b] + hist[2][b] + hist[3][b]) < k) {
            above += count;
            b--;
        }
        prefix |= b << shift;
        if (shift == 0)
            break;
        memset(hist, 0, sizeof hist);
        int32_t left = 0;
        for (int32_t i = 0; i < m; i++) {
            uint32_t key = scratch[i];
            int32_t match = ((key >> shift) & 0xffu) == b;
            scratch[left] = key;
            hist[i & 3][(key >> (shift - 8)) & 0xffu] += match;
            left += match;
        }
        m = left;
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
    /* kept is the scratch until the final scan writes it */
    uint32_t t = kth_key(s, n, k, (uint32_t *)kept, &above);
    int32_t at_t = k - above, out = 0;
    /* branch-free: whether a slot is kept is a coin flip at a 50% budget */
    for (int32_t i = 0; i < n && out < k; i++) {
        uint32_t key = key_of(s[i]);
        int32_t tie = key == t, take = (key > t) | (tie & (at_t > 0));
        at_t -= tie & take;
        kept[out] = i;
        out += take;
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
    /* two passes per slot: worth the pool from a few rows of thousands */
    lkv_pool *pool = slots >= 16384 ? lkv_cpu_state_of(dev)->pool : NULL;
    lkv_pool_run(pool, a->n_rows, select_rows, (void *)a);
    return LKV_OK;
}
