/* select, fast: the oracle's decision (ref_select.c: order by score
 * descending, NaN last, ties by slot ascending; keep the first k; list them
 * ascending) without sorting. Scores map to unsigned keys that order as the
 * floats do (NaN lowest, -0 equal to +0); a radix select over the key's four
 * bytes finds the k-th key T, and one ascending scan keeps every slot above
 * T and the lowest-numbered slots at T until k are kept, which is the
 * oracle's tie order. Two passes over the row (the radix passes look only
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

/* One radix pass over the m candidates in scratch (all sharing the key bits
 * above the digit): histograms the 8-bit digit at `shift`, finds the bin b
 * of the k-th largest, packs the candidates in b to the front and returns
 * how many there are, with their least and greatest key. Counts go to four
 * histograms in turn (one counter incremented back to back waits on its own
 * store) and the packing is branch-free. */
static int32_t radix_pass(uint32_t *scratch, int32_t m, int shift, int32_t k, int32_t *above,
                          uint32_t *out_lo, uint32_t *out_hi)
{
    int32_t hist[4][256] = {{0}};
    for (int32_t i = 0; i < m; i++)
        hist[i & 3][(scratch[i] >> shift) & 0xffu]++;
    uint32_t b = 255;
    int32_t count;
    while (*above + (count = hist[0][b] + hist[1][b] + hist[2][b] + hist[3][b]) < k) {
        *above += count;
        b--;
    }
    uint32_t lo = UINT32_MAX, hi = 0;
    int32_t left = 0;
    for (int32_t i = 0; i < m; i++) {
        uint32_t key = scratch[i];
        int32_t match = ((key >> shift) & 0xffu) == b;
        scratch[left] = key;
        left += match;
        lo = match && key < lo ? key : lo;
        hi = match && key > hi ? key : hi;
    }
    *out_lo = lo;
    *out_hi = hi;
    return left;
}

/* The k-th largest key of s[0..n) (1 <= k <= n) and how many keys exceed it.
 * The first pass only computes the keys into `scratch` (n entries) and their
 * range, which vectorizes. Each radix pass then takes the 8 bits below the
 * bits every candidate shares (the highest bit where the least and greatest
 * candidate differ), so scores of one row, which share their sign and most
 * of their exponent, are not histogrammed on bytes that cannot split them;
 * and the search ends as soon as the candidates left are one key, which is
 * where a policy's ties (many slots with the same score) end it at once. */
static uint32_t kth_key(const float *s, int32_t n, int32_t k, uint32_t *scratch,
                        int32_t *out_above)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int32_t i = 0; i < n; i++) {
        uint32_t key = key_of(s[i]);
        scratch[i] = key;
        lo = key < lo ? key : lo;
        hi = key > hi ? key : hi;
    }
    int32_t above = 0, m = n; /* above: keys above every candidate */
    while (lo != hi) {
        int top = 31 - __builtin_clz(lo ^ hi);
        m = radix_pass(scratch, m, top < 7 ? 0 : top - 7, k, &above, &lo, &hi);
    }
    *out_above = above;
    return lo;
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
