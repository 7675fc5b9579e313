/* base/fp16.h, the portable binary16 conversion the f16 caches store with:
 * every half pattern widens exactly and round-trips, and float -> half
 * rounds to nearest even (overflow to inf at 65520, ties to even in the
 * subnormals too) against two independent references: a slow nearest-half
 * search in double, and GCC's _Float16 conversion where the compiler has
 * it. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp16.h"
#include "test_util.h"

#define HALF_INF 0x7c00u

static int is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

/* Same half, where any NaN equals any NaN of the same sign (payloads are
 * not part of the contract). */
static int same_half(uint16_t a, uint16_t b)
{
    if (is_half_nan(a) || is_half_nan(b))
        return is_half_nan(a) && is_half_nan(b) && (a & 0x8000u) == (b & 0x8000u);
    return a == b;
}

/* Magnitude of pattern h in 0..0x7c00 for rounding: 0x7c00 stands for
 * 65536, the next power of two, so ties at 65520 go to it (even) = inf. */
static double rounding_value(uint16_t h) { return h == HALF_INF ? 65536.0 : tu_half_value(h); }

/* Slow reference: the nearest half by binary search, ties to even. */
static uint16_t nearest_half(float f)
{
    uint16_t sign = signbit(f) ? 0x8000u : 0u;
    if (isnan(f))
        return (uint16_t)(sign | 0x7e00u);
    double a = fabs((double)f);
    if (a >= 65536.0)
        return (uint16_t)(sign | HALF_INF);
    uint16_t lo = 0, hi = HALF_INF; /* invariant: value(lo) <= a < value(hi) */
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

/* ---- inputs ----------------------------------------------------------- */

typedef struct inputs {
    float *x;
    size_t n, cap;
} inputs;

static void push(inputs *in, float f)
{
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 1024;
        in->x = realloc(in->x, sizeof(float) * in->cap);
        cr_assert_not_null(in->x);
    }
    in->x[in->n++] = f;
}

/* f and -f */
static void push_pm(inputs *in, float f)
{
    push(in, f);
    push(in, -f);
}

static inputs edge_inputs(void)
{
    inputs in = {0};
    const float edges[] = {
        0.0f, FLT_TRUE_MIN, FLT_MIN, 0x1p-25f /* tie 0 / 2^-24: to 0 */,
        0x1.000002p-25f /* just above: 2^-24 */, 0x1p-24f, 0x1.8p-24f /* tie: to 2*2^-24 */,
        0x1.4p-23f /* 2.5 * 2^-24: tie to 2 */, 0x1.ff8p-15f /* largest subnormal */,
        0x1.ffcp-15f /* tie: carries into the smallest normal */, 0x1p-14f, 1.0f,
        0x1.002p0f /* tie 1 / 1+2^-10: to 1 */, 0x1.006p0f /* tie: to 1+2^-9 */, 65504.0f,
        65505.0f, 65519.0f, 0x1.ffdffep15f /* just below 65520 */, 65520.0f /* tie: inf */,
        65536.0f, 1e10f, FLT_MAX, INFINITY, NAN,
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        push_pm(&in, edges[i]);
    return in;
}

/* Halfway between every two neighbouring finite halves (and between 65504
 * and 65536), and the floats on either side of each midpoint. */
static inputs midpoint_inputs(void)
{
    inputs in = {0};
    for (uint16_t h = 0; h < HALF_INF; h++) {
        float mid = (float)((rounding_value(h) + rounding_value((uint16_t)(h + 1))) / 2);
        push_pm(&in, mid);
        push_pm(&in, nextafterf(mid, 0.0f));
        push_pm(&in, nextafterf(mid, INFINITY));
    }
    return in;
}

/* Random bit patterns (every exponent, inf and NaN included) and random
 * floats with exponents where halves live (2^-26 .. 2^16). */
static inputs random_inputs(void)
{
    inputs in = {0};
    uint64_t rng = 0xf16f16u;
    for (int i = 0; i < 500000; i++)
        push(&in, tu_float_of_bits((uint32_t)(tu_uniform(&rng) * 4294967296.0)));
    for (int i = 0; i < 500000; i++) {
        int e = -26 + (int)(tu_uniform(&rng) * 43.0);
        float m = (float)(1.0 + tu_uniform(&rng));
        push_pm(&in, ldexpf(m, e));
    }
    return in;
}

/* ---- checks ----------------------------------------------------------- */

/* Asserts lkv_float_to_half(x) == want(x) for every input; reports the
 * first mismatch in one assertion. */
static void check_float_to_half(inputs in, uint16_t (*want)(float), const char *ref)
{
    for (size_t i = 0; i < in.n; i++) {
        uint16_t got = lkv_float_to_half(in.x[i]), ref_h = want(in.x[i]);
        if (!same_half(got, ref_h))
            cr_assert_fail("float %a (bits 0x%08x): lkv_float_to_half 0x%04x, %s 0x%04x",
                           (double)in.x[i], tu_bits_of_float(in.x[i]), got, ref, ref_h);
    }
    cr_assert_gt(in.n, 0);
    free(in.x);
}

Test(fp16, every_half_round_trips_through_float)
{
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        float f = lkv_half_to_float((uint16_t)h);
        uint16_t back = lkv_float_to_half(f);
        if (is_half_nan((uint16_t)h) ? !isnan(f) || !same_half(back, (uint16_t)h)
                                     : back != h)
            cr_assert_fail("half 0x%04x -> float %a -> half 0x%04x", h, (double)f, back);
    }
}

Test(fp16, half_to_float_matches_the_binary16_formula)
{
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        float f = lkv_half_to_float((uint16_t)h);
        double want = tu_half_value((uint16_t)h);
        int ok = isnan(want) ? isnan(f) && !signbit(f) == !(h & 0x8000u)
                             : (double)f == want && !signbit(f) == !signbit(want);
        if (!ok)
            cr_assert_fail("half 0x%04x: lkv_half_to_float %a, formula %a", h, (double)f, want);
    }
}

Test(fp16, float_to_half_matches_nearest_half_search_on_edges)
{
    check_float_to_half(edge_inputs(), nearest_half, "nearest-half search");
}

Test(fp16, float_to_half_matches_nearest_half_search_on_midpoints)
{
    check_float_to_half(midpoint_inputs(), nearest_half, "nearest-half search");
}

Test(fp16, float_to_half_matches_nearest_half_search_on_random_floats)
{
    check_float_to_half(random_inputs(), nearest_half, "nearest-half search");
}

Test(fp16, nearest_half_search_rounds_the_known_cases)
{
    /* guards the reference itself on hand-checked values */
    cr_assert_eq(nearest_half(65519.0f), 0x7bffu);
    cr_assert_eq(nearest_half(65520.0f), HALF_INF);
    cr_assert_eq(nearest_half(-0.0f), 0x8000u);
    cr_assert_eq(nearest_half(0x1p-25f), 0x0000u);
    cr_assert_eq(nearest_half(0x1.000002p-25f), 0x0001u);
    cr_assert_eq(nearest_half(0x1.8p-24f), 0x0002u);
    cr_assert_eq(nearest_half(0x1.ffcp-15f), 0x0400u);
    cr_assert_eq(nearest_half(0x1.002p0f), 0x3c00u);
    cr_assert_eq(nearest_half(0x1.006p0f), 0x3c02u);
    cr_assert_eq(nearest_half(1.0f / 3.0f), 0x3555u);
}

#if defined(__FLT16_MAX__)
static uint16_t gcc_half(float f)
{
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}
#endif

Test(fp16, float_to_half_matches_float16_conversion)
{
#if defined(__FLT16_MAX__)
    check_float_to_half(edge_inputs(), gcc_half, "_Float16");
    check_float_to_half(midpoint_inputs(), gcc_half, "_Float16");
    check_float_to_half(random_inputs(), gcc_half, "_Float16");
#else
    cr_skip_test("this compiler has no _Float16; the nearest-half search tests stand in");
#endif
}

Test(fp16, half_to_float_matches_float16_widening)
{
#if defined(__FLT16_MAX__)
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        _Float16 x;
        uint16_t u = (uint16_t)h;
        memcpy(&x, &u, sizeof x);
        float want = (float)x, got = lkv_half_to_float(u);
        int ok = isnan(want) ? isnan(got) && !signbit(got) == !signbit(want)
                             : tu_bits_of_float(got) == tu_bits_of_float(want);
        if (!ok)
            cr_assert_fail("half 0x%04x: lkv_half_to_float %a, _Float16 %a", h, (double)got,
                           (double)want);
    }
#else
    cr_skip_test("this compiler has no _Float16; the binary16 formula test stands in");
#endif
}
