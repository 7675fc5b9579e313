/* select, fast: the oracle's decision (ref_select.c: order by score
 * descending, NaN last, ties by slot ascending; keep the first k; list them
 * ascending) without sorting. Scores map to unsigned keys that order as the
 * floats do (NaN lowest, -0 equal to +0); a radix select over 8-bit digits
 * of the key finds the k-th key T, and one ascending scan keeps every slot
 * above T and the lowest-numbered slots at T until k are kept, which is the
 * oracle's tie order. Two passes over the row (the radix passes look only
 * at the candidates left, in the kept row as scratch; a row of one score
 * and the window's infinities, as at a first eviction, needs one), rows in
 * parallel: the same slots as the oracle, bit for bit. */
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

/* Counts of one 8-bit digit of the candidates, in four histograms taken in
 * turn (one counter incremented back to back waits on its own store). */
typedef struct digit_hist {
    int32_t h[4][256];
} digit_hist;

static void count_digit(digit_hist *d, const uint32_t *keys, int32_t m, int shift)
{
    memset(d, 0, sizeof *d);
    for (int32_t i = 0; i < m; i++)
        d->h[i & 3][(keys[i] >> shift) & 0xffu]++;
}

/* The bin holding the k-th largest key; *above grows by the keys in the
 * bins over it. */
static uint32_t kth_bin(const digit_hist *d, int32_t k, int32_t *above)
{
    uint32_t b = 255;
    int32_t count;
    while (*above + (count = d->h[0][b] + d->h[1][b] + d->h[2][b] + d->h[3][b]) < k) {
        *above += count;
        b--;
    }
    return b;
}

/* The digit counted with the keys: a float's exponent, where scores of one
 * sign that differ in magnitude differ first. */
#define FIRST_SHIFT 23

/* The k-th largest key of s[0..n) (1 <= k <= n) and how many keys exceed it.
 * The first pass computes the keys into `scratch` (n entries), the bits all
 * of them have and any of them has, and counts their exponents. Each radix
 * pass keeps the candidates whose digit is the k-th's, packed to the front
 * of scratch (branch-free), and counts the next 8 bits of those it keeps. The
 * candidates share every bit above the highest one where `all` and `any`
 * differ, so a digit is only ever taken at or below that bit (a row's
 * scores share their sign and most of their exponent: those bytes are not
 * counted), and the search ends as soon as one key is left (all == any),
 * which is where a policy's ties (many slots with the same score) end it at
 * once. */
static uint32_t kth_key(const float *s, int32_t n, int32_t k, uint32_t *scratch,
                        int32_t *out_above)
{
    uint32_t all = UINT32_MAX, any = 0; /* the bits every key has, and any key */
    digit_hist d;
    memset(&d, 0, sizeof d);
    for (int32_t i = 0; i < n; i++) {
        uint32_t key = key_of(s[i]);
        scratch[i] = key;
        all &= key;
        any |= key;
        d.h[i & 3][(key >> FIRST_SHIFT) & 0xffu]++;
    }
    int32_t above = 0, m = n; /* above: keys above every candidate */
    int counted = FIRST_SHIFT; /* the shift of the digit d counts; -1: none */
    while (all != any) {
        int top = 31 - __builtin_clz(all ^ any);
        int shift = counted;
        if (shift < 0 || top < shift || top > shift + 7) { /* none, or no split in it */
            shift = top < 7 ? 0 : top - 7;
            count_digit(&d, scratch, m, shift);
        }
        uint32_t b = kth_bin(&d, k, &above);
        int next = shift >= 8 ? shift - 8 : 0;
        memset(&d, 0, sizeof d);
        int32_t left = 0;
        for (int32_t i = 0; i < m; i++) {
            uint32_t key = scratch[i];
            int32_t match = ((key >> shift) & 0xffu) == b;
            scratch[left] = key;
            d.h[i & 3][(key >> next) & 0xffu] += match;
            left += match;
        }
        m = left;
        /* apart from the packing, which does not vectorize: this does */
        all = UINT32_MAX;
        any = 0;
        for (int32_t i = 0; i < m; i++) {
            all &= scratch[i];
            any |= scratch[i];
        }
        counted = shift >= 8 ? next : -1;
    }
    *out_above = above;
    return all;
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
