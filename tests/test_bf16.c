/* base/bf16.h, the conversion bf16 caches store with, and the public dtype
 * table (lkv_dtype_name/size/from_name): every bf16 pattern widens exactly
 * (checked against the bfloat16 formula in double) and round-trips, and
 * float -> bf16 rounds to nearest even, overflowing to inf only from the
 * midpoint above the largest finite value, against a slow nearest-value
 * search in double. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "dtype.h"
#include "lazykv.h"
#include "test_util.h"

#define BF16_INF 0x7f80u

static int is_bf16_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

/* Magnitude of pattern b in 0..0x7f80 for rounding: 0x7f80 stands for
 * 2^128, the next power of two, so the tie above the largest finite value
 * goes to it (even) = inf. */
static double rounding_value(uint16_t b)
{
    return b == BF16_INF ? ldexp(1.0, 128) : tu_bf16_value(b);
}

/* Slow reference: the nearest bf16 by binary search, ties to even. */
static uint16_t nearest_bf16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000u : 0u;
    double a = fabs((double)f);
    if (a >= ldexp(1.0, 128))
        return (uint16_t)(sign | BF16_INF);
    uint16_t lo = 0, hi = BF16_INF; /* invariant: value(lo) <= a < value(hi) */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (rounding_value(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double mid = (rounding_value(lo) + rounding_value(hi)) / 2; /* exact in double */
    uint16_t pick = a < mid ? lo : a > mid ? hi : (lo & 1u) ? hi : lo;
    return (uint16_t)(sign | pick);
}

/* lkv_float_to_bf16(f) against the search, for a finite or infinite f. */
static void check_one(float f)
{
    uint16_t got = lkv_float_to_bf16(f), want = nearest_bf16(f);
    if (got != want)
        cr_assert_fail("float %a (bits 0x%08x): lkv_float_to_bf16 0x%04x, nearest 0x%04x",
                       (double)f, tu_bits_of_float(f), got, want);
}

Test(bf16, every_bf16_widens_to_the_formula_and_round_trips)
{
    for (uint32_t b = 0; b <= 0xffffu; b++) {
        float f = lkv_bf16_to_float((uint16_t)b);
        double want = tu_bf16_value((uint16_t)b);
        int ok = isnan(want) ? isnan(f) && !signbit(f) == !(b & 0x8000u)
                             : (double)f == want && !signbit(f) == !signbit(want);
        if (!ok)
            cr_assert_fail("bf16 0x%04x: lkv_bf16_to_float %a, formula %a", b, (double)f, want);
        uint16_t back = lkv_float_to_bf16(f);
        if (is_bf16_nan((uint16_t)b) ? !is_bf16_nan(back) || (back & 0x8000u) != (b & 0x8000u)
                                     : back != b)
            cr_assert_fail("bf16 0x%04x -> float %a -> bf16 0x%04x", b, (double)f, back);
    }
}

Test(bf16, float_to_bf16_rounds_to_nearest_even_at_every_midpoint)
{
    /* the midpoint between every two neighbouring finite magnitudes (and
     * between the largest and 2^128), and the floats on either side */
    for (uint16_t b = 0; b < BF16_INF; b++) {
        float mid = (float)((rounding_value(b) + rounding_value((uint16_t)(b + 1))) / 2);
        const float near[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (int i = 0; i < 3; i++) {
            check_one(near[i]);
            check_one(-near[i]);
        }
    }
}

Test(bf16, float_to_bf16_matches_the_search_on_random_floats_and_edges)
{
    const float edges[] = {0.0f,    FLT_TRUE_MIN, FLT_MIN,          1.0f,      0x1.01p0f,
                           0x1.03p0f, 0x1.fep127f, 0x1.fefffep127f, 0x1.ffp127f, FLT_MAX,
                           INFINITY};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        check_one(edges[i]);
        check_one(-edges[i]);
    }
    uint64_t rng = 0xbf16bf16u;
    for (int i = 0; i < 1000000; i++) {
        float f = tu_float_of_bits((uint32_t)(tu_uniform(&rng) * 4294967296.0));
        if (!isnan(f))
            check_one(f);
    }
}

Test(bf16, overflow_starts_at_the_midpoint_above_the_largest_value)
{
    /* guards the reference, and the refusal limit in base/dtype.c: the
     * largest value the cache accepts is the largest bf16 exactly */
    cr_assert_eq(tu_bits_of_float(lkv_dtype_largest(LKV_DTYPE_BF16)), 0x7f7f0000u);
    cr_assert_eq(lkv_float_to_bf16(0x1.fep127f), 0x7f7fu); /* largest, 3.3895314e38 */
    cr_assert_eq(lkv_float_to_bf16(0x1.fefffep127f), 0x7f7fu);
    cr_assert_eq(lkv_float_to_bf16(0x1.ffp127f), BF16_INF); /* tie: to even = inf */
    cr_assert_eq(nearest_bf16(0x1.ffp127f), BF16_INF);
    cr_assert_eq(nearest_bf16(0x1.01p0f), 0x3f80u); /* tie 1 / 1+2^-7: to 1 */
    cr_assert_eq(nearest_bf16(0x1.03p0f), 0x3f82u); /* tie: to 1+2^-6 */
    cr_assert_eq(nearest_bf16(1.0f / 3.0f), 0x3eabu);
}

Test(bf16, nan_stays_nan_with_its_sign)
{
    /* payloads only in the low 16 bits must not truncate or round to inf */
    const uint32_t nans[] = {0x7f800001u, 0x7f80ffffu, 0x7fc00000u, 0x7fffffffu, 0x7f810000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
        for (int neg = 0; neg < 2; neg++) {
            uint32_t sign = neg ? 0x80000000u : 0u;
            uint16_t b = lkv_float_to_bf16(tu_float_of_bits(nans[i] | sign));
            cr_assert(is_bf16_nan(b), "NaN 0x%08x became 0x%04x", nans[i] | sign, b);
            cr_assert_eq(b & 0x8000u, sign >> 16, "NaN 0x%08x lost its sign", nans[i] | sign);
            cr_assert(b & 0x40u, "NaN 0x%08x became signalling 0x%04x", nans[i] | sign, b);
        }
}

/* ---- the public dtype table ------------------------------------------- */

Test(dtype, names_and_sizes_round_trip)
{
    const struct { lkv_dtype d; const char *name; size_t size; } all[] = {
        {LKV_DTYPE_F32, "f32", 4}, {LKV_DTYPE_F16, "f16", 2}, {LKV_DTYPE_BF16, "bf16", 2}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        cr_assert_str_eq(lkv_dtype_name(all[i].d), all[i].name);
        cr_assert_eq(lkv_dtype_size(all[i].d), all[i].size, "%s", all[i].name);
        lkv_dtype d = (lkv_dtype)-1;
        cr_assert_eq(lkv_dtype_from_name(all[i].name, &d), LKV_OK, "%s", all[i].name);
        cr_assert_eq(d, all[i].d, "%s", all[i].name);
    }
}

Test(dtype, unknown_values_and_names_are_refused)
{
    cr_assert_null(lkv_dtype_name((lkv_dtype)3));
    cr_assert_null(lkv_dtype_name((lkv_dtype)-1));
    cr_assert_eq(lkv_dtype_size((lkv_dtype)3), 0);
    const char *bad[] = {"F16", "bfloat16", "", "f8", "f16 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_dtype d = LKV_DTYPE_F16;
        cr_assert_eq(lkv_dtype_from_name(bad[i], &d), LKV_INVALID_ARGUMENT, "'%s'", bad[i]);
        cr_assert_eq(d, LKV_DTYPE_F16, "'%s' changed the output", bad[i]);
        char want[32];
        snprintf(want, sizeof want, "'%s'", bad[i]);
        cr_assert(strstr(lkv_last_error(), want), "%s", lkv_last_error());
    }
    cr_assert_eq(lkv_dtype_from_name(NULL, &(lkv_dtype){0}), LKV_INVALID_ARGUMENT);
}

Test(dtype, a_cache_of_an_unknown_dtype_is_refused)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.dtype = (lkv_dtype)7;
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("cpu", &rt), LKV_OK);
    lkv_cache *c = (lkv_cache *)&cfg; /* must stay untouched */
    lkv_status st = lkv_cache_create(rt, &cfg, &c);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "dtype 7"), "%s", lkv_last_error());
    cr_assert_eq(c, (lkv_cache *)&cfg);
    lkv_runtime_close(rt);
}
