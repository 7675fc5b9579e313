/* model/dequant.c against the block formats as ggml defines them: each test
 * packs chosen quants, scales and minimums into blocks with a packer of its
 * own, works out in double what the format says the values are (scale * q
 * - min), and expects the dequantized floats to match within float
 * rounding. f16 and bf16 are checked on every bit pattern against a
 * decoding by ldexp. Then the type table and the refusals. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "test_util.h"

#define NB 3 /* blocks per test row: the steps between blocks count too */

/* ---- reference helpers ---------------------------------------------------- */

static uint32_t next_u32(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Uniform in lo..hi inclusive. */
static int draw(uint64_t *s, int lo, int hi)
{
    return lo + (int)(next_u32(s) % (uint32_t)(hi - lo + 1));
}

/* A finite half of either sign between 2^-9 and 2^6, any mantissa. */
static uint16_t draw_half(uint64_t *s)
{
    return (uint16_t)(draw(s, 0, 1) << 15 | draw(s, 6, 21) << 10 | draw(s, 0, 1023));
}

static void put_half(uint8_t *p, uint16_t h)
{
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
}

/* Each value within a few float roundings of the exact one, relative to the
 * size of the terms it was computed from (`mag`). */
static void expect_close(const float *got, const double *want, const double *mag, int n,
                         const char *type)
{
    for (int i = 0; i < n; i++) {
        double tol = 4.0 * FLT_EPSILON * mag[i];
        cr_assert(fabs((double)got[i] - want[i]) <= tol,
                  "%s element %d (block %d): got %.9g, want %.9g (tolerance %.3g)", type, i,
                  i / (n / NB), (double)got[i], want[i], tol);
    }
}

static void dequant_ok(uint32_t type, const uint8_t *src, float *dst, int64_t n)
{
    TU_OK(lkv_dequant_row(type, src, dst, n));
}

/* ---- f32, f16, bf16 -------------------------------------------------------- */

Test(dequant, f32_copies_the_bits)
{
    static const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0xc0490fdbu,
                                    0x00000001u, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                                    0x7fc00001u};
    enum { N = sizeof bits / sizeof bits[0] };
    uint8_t src[4 * N];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++)
            src[4 * i + k] = (uint8_t)(bits[i] >> (8 * k));
    float out[N];
    dequant_ok(LKV_GGML_F32, src, out, N);
    for (int i = 0; i < N; i++) {
        uint32_t got;
        memcpy(&got, &out[i], 4);
        cr_assert_eq(got, bits[i], "element %d: %08x, want %08x", i, got, bits[i]);
    }
}

/* All 65536 patterns of a 16-bit type widen to exactly the value `value`
 * gives, NaNs to NaNs, each with its sign. */
static void expect_every_pattern(uint32_t type, const char *name, double (*value)(uint16_t))
{
    enum { N = 65536 };
    uint8_t *src = malloc(2 * N);
    float *out = malloc(sizeof(float) * N);
    cr_assert(src && out);
    for (int h = 0; h < N; h++)
        put_half(src + 2 * h, (uint16_t)h);
    dequant_ok(type, src, out, N);
    for (int h = 0; h < N; h++) {
        double want = value((uint16_t)h);
        int same = isnan(want) ? isnan(out[h]) : (double)out[h] == want;
        cr_assert(same && !signbit(out[h]) == !(h & 0x8000), "%s %04x: got %.9g, want %.9g",
                  name, h, (double)out[h], want);
    }
    free(src);
    free(out);
}

Test(dequant, every_f16_pattern_widens_exactly)
{
    expect_every_pattern(LKV_GGML_F16, "half", tu_half_value);
}

Test(dequant, every_bf16_pattern_widens_exactly)
{
    expect_every_pattern(LKV_GGML_BF16, "bf16", tu_bf16_value);
}

/* ---- quantized blocks -------------------------------------------------------- */

/* Packs block b (zeroed, `bytes` long) from draws on *s and writes the exact
 * value of each of its elements to want[] and the size of the terms it is
 * computed from to mag[]. */
typedef void (*pack_fn)(uint8_t *blk, int b, uint64_t *s, double *want, double *mag);

/* A quantized type's layout as the test knows it, written here rather than
 * taken from the type table so that a wrong table entry shows. */
typedef struct block_case {
    uint32_t type;
    const char *name;
    int elems, bytes;
    uint64_t seed;
    pack_fn pack;
} block_case;

/* NB blocks packed by the case's packer dequantize to their exact values
 * within float rounding. */
static void expect_blocks(const block_case *c)
{
    int n = c->elems * NB;
    uint8_t *src = calloc(NB, (size_t)c->bytes);
    double *want = malloc(sizeof(double) * (size_t)n), *mag = malloc(sizeof(double) * (size_t)n);
    float *out = malloc(sizeof(float) * (size_t)n);
    cr_assert(src && want && mag && out);
    uint64_t s = c->seed;
    for (int b = 0; b < NB; b++)
        c->pack(src + (size_t)c->bytes * b, b, &s, want + c->elems * b, mag + c->elems * b);
    dequant_ok(c->type, src, out, n);
    expect_close(out, want, mag, n, c->name);
    free(src);
    free(want);
    free(mag);
    free(out);
}

/* The four-bit quants of a 32-element block: element j in the low nibble of
 * byte j, element j + 16 in the high nibble of byte j. */
static void put_nibble(uint8_t *qs, int j, int q)
{
    qs[j % 16] |= (uint8_t)(q << (j < 16 ? 0 : 4));
}

/* q4_0: d (f16), then the 16 nibble bytes; x = (q - 8) * d. */
static void pack_q4_0(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s);
    put_half(blk, d);
    for (int j = 0; j < 32; j++) {
        int q = b == 0 && j < 16 ? j : draw(s, 0, 15);
        put_nibble(blk + 2, j, q);
        want[j] = (q - 8) * tu_half_value(d);
        mag[j] = fabs(want[j]);
    }
}

Test(dequant, q4_0_is_d_times_q_minus_8)
{
    expect_blocks(&(block_case){LKV_GGML_Q4_0, "q4_0", 32, 18, 1, pack_q4_0});
}

/* q4_1: d, m (f16), then the nibbles as in q4_0; x = q * d + m. */
static void pack_q4_1(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s), m = draw_half(s);
    put_half(blk, d);
    put_half(blk + 2, m);
    for (int j = 0; j < 32; j++) {
        int q = b == 0 && j < 16 ? 15 - j : draw(s, 0, 15);
        put_nibble(blk + 4, j, q);
        want[j] = q * tu_half_value(d) + tu_half_value(m);
        mag[j] = fabs(q * tu_half_value(d)) + fabs(tu_half_value(m));
    }
}

Test(dequant, q4_1_is_d_times_q_plus_m)
{
    expect_blocks(&(block_case){LKV_GGML_Q4_1, "q4_1", 32, 20, 2, pack_q4_1});
}

/* Five-bit quants: the low four bits as in q4_0, the fifth bit of element j
 * in bit j of a little-endian 32-bit qh. */
static void pack_q5(uint8_t *qh, uint8_t *qs, const int *q)
{
    uint32_t h = 0;
    for (int j = 0; j < 32; j++) {
        put_nibble(qs, j, q[j] & 15);
        h |= (uint32_t)(q[j] >> 4) << j;
    }
    for (int k = 0; k < 4; k++)
        qh[k] = (uint8_t)(h >> (8 * k));
}

/* q5_0: d, qh, qs; x = (q - 16) * d. */
static void pack_q5_0(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s);
    put_half(blk, d);
    int q[32];
    for (int j = 0; j < 32; j++) {
        q[j] = b == 0 ? j : draw(s, 0, 31);
        want[j] = (q[j] - 16) * tu_half_value(d);
        mag[j] = fabs(want[j]);
    }
    pack_q5(blk + 2, blk + 6, q);
}

Test(dequant, q5_0_is_d_times_q_minus_16)
{
    expect_blocks(&(block_case){LKV_GGML_Q5_0, "q5_0", 32, 22, 3, pack_q5_0});
}

/* q5_1: d, m, qh, qs; x = q * d + m. */
static void pack_q5_1(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s), m = draw_half(s);
    put_half(blk, d);
    put_half(blk + 2, m);
    int q[32];
    for (int j = 0; j < 32; j++) {
        q[j] = b == 0 ? 31 - j : draw(s, 0, 31);
        want[j] = q[j] * tu_half_value(d) + tu_half_value(m);
        mag[j] = fabs(q[j] * tu_half_value(d)) + fabs(tu_half_value(m));
    }
    pack_q5(blk + 4, blk + 8, q);
}

Test(dequant, q5_1_is_d_times_q_plus_m)
{
    expect_blocks(&(block_case){LKV_GGML_Q5_1, "q5_1", 32, 24, 4, pack_q5_1});
}

/* q8_0: d, then 32 signed bytes; x = q * d. */
static void pack_q8_0(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s);
    put_half(blk, d);
    for (int j = 0; j < 32; j++) {
        int q = b == 0 && j < 2 ? (j ? 127 : -128) : draw(s, -128, 127);
        blk[2 + j] = (uint8_t)(q & 0xff);
        want[j] = q * tu_half_value(d);
        mag[j] = fabs(want[j]);
    }
}

Test(dequant, q8_0_is_d_times_signed_q)
{
    expect_blocks(&(block_case){LKV_GGML_Q8_0, "q8_0", 32, 34, 5, pack_q8_0});
}

/* ---- 256-element super-blocks -------------------------------------------- */

/* The 12 scale bytes of q4_K and q5_K: eight 6-bit scales and eight 6-bit
 * mins. Sub-blocks 0..3 keep theirs in the low six bits of bytes 0..3
 * (scales) and 4..7 (mins); sub-blocks 4..7 keep their low four bits in the
 * nibbles of bytes 8..11 (scale low, min high) and their top two bits in
 * the top bits of bytes 0..3 (scales) and 4..7 (mins). */
static void pack_k_scales(uint8_t *out, const int *sc, const int *mn)
{
    for (int k = 0; k < 4; k++) {
        out[k] = (uint8_t)(sc[k] | (sc[k + 4] >> 4) << 6);
        out[k + 4] = (uint8_t)(mn[k] | (mn[k + 4] >> 4) << 6);
        out[k + 8] = (uint8_t)((sc[k + 4] & 15) | (mn[k + 4] & 15) << 4);
    }
}

/* d, dmin and the packed scales and mins of block b of q4_K or q5_K: block 0
 * takes the extremes and values that need both high bits, the others random
 * six-bit values. */
typedef struct k_head {
    double d, dmin;
    int sc[8], mn[8];
} k_head;

static k_head put_k_head(uint8_t *blk, int b, uint64_t *s)
{
    static const int sc0[8] = {0, 63, 17, 48, 63, 0, 33, 16};
    static const int mn0[8] = {63, 0, 32, 15, 1, 62, 47, 31};
    k_head h;
    uint16_t d = draw_half(s), dmin = draw_half(s);
    put_half(blk, d);
    put_half(blk + 2, dmin);
    h.d = tu_half_value(d);
    h.dmin = tu_half_value(dmin);
    for (int i = 0; i < 8; i++) {
        h.sc[i] = b == 0 ? sc0[i] : draw(s, 0, 63);
        h.mn[i] = b == 0 ? mn0[i] : draw(s, 0, 63);
    }
    pack_k_scales(blk + 4, h.sc, h.mn);
    return h;
}

/* Element e (quant q) of a q4_K / q5_K block: d*sc*q - dmin*m of its sub-block. */
static void k_value(const k_head *h, int e, int q, double *want, double *mag)
{
    double a = h->d * h->sc[e / 32] * q, m = h->dmin * h->mn[e / 32];
    want[e] = a - m;
    mag[e] = fabs(a) + fabs(m);
}

/* q4_K: d, dmin (f16), 12 scale bytes, 128 quant bytes. Sub-block s (32
 * elements) of each pair 2p, 2p + 1 shares bytes 32p..32p+31: the even one
 * in the low nibbles, the odd one in the high; x = d*sc*q - dmin*m. */
static void pack_q4_k(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    k_head h = put_k_head(blk, b, s);
    for (int e = 0; e < 256; e++) {
        int sub = e / 32, l = e % 32, q = draw(s, 0, 15);
        blk[16 + 32 * (sub / 2) + l] |= (uint8_t)(q << (sub % 2 ? 4 : 0));
        k_value(&h, e, q, want, mag);
    }
}

Test(dequant, q4_k_is_scale_times_q_minus_min)
{
    expect_blocks(&(block_case){LKV_GGML_Q4_K, "q4_K", 256, 144, 6, pack_q4_k});
}

/* q5_K: as q4_K with qh[32] before the quants: the fifth bit of element l
 * of sub-block s is bit s of qh[l]. */
static void pack_q5_k(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    k_head h = put_k_head(blk, b, s);
    for (int e = 0; e < 256; e++) {
        int sub = e / 32, l = e % 32, q = draw(s, 0, 31);
        blk[16 + l] |= (uint8_t)((q >> 4) << sub);
        blk[48 + 32 * (sub / 2) + l] |= (uint8_t)((q & 15) << (sub % 2 ? 4 : 0));
        k_value(&h, e, q, want, mag);
    }
}

Test(dequant, q5_k_is_scale_times_q_minus_min)
{
    expect_blocks(&(block_case){LKV_GGML_Q5_K, "q5_K", 256, 176, 7, pack_q5_k});
}

/* q6_K: ql[128], qh[64], 16 signed scales (one per 16 elements), d. In each
 * half h of 128 elements, element 32k + l (k = 0..3) takes its low four
 * bits from ql[64h + l + 32(k & 1)] (low nibble for k < 2, high for k >= 2)
 * and its top two from bits 2k, 2k+1 of qh[32h + l]; x = d*sc*(q - 32). */
static void pack_q6_k(uint8_t *blk, int b, uint64_t *s, double *want, double *mag)
{
    uint16_t d = draw_half(s);
    put_half(blk + 208, d);
    int sc[16];
    for (int i = 0; i < 16; i++) {
        sc[i] = b == 0 && i < 2 ? (i ? 127 : -128) : draw(s, -128, 127);
        blk[192 + i] = (uint8_t)(sc[i] & 0xff);
    }
    for (int e = 0; e < 256; e++) {
        int h = e / 128, k = e % 128 / 32, l = e % 32;
        int q = b == 0 && e < 64 ? e : draw(s, 0, 63);
        blk[64 * h + l + 32 * (k & 1)] |= (uint8_t)((q & 15) << (k >= 2 ? 4 : 0));
        blk[128 + 32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
        want[e] = tu_half_value(d) * sc[e / 16] * (q - 32);
        mag[e] = fabs(want[e]);
    }
}

Test(dequant, q6_k_is_scale_times_q_minus_32)
{
    expect_blocks(&(block_case){LKV_GGML_Q6_K, "q6_K", 256, 210, 8, pack_q6_k});
}

/* ---- the type table ------------------------------------------------------- */

typedef struct expected_type {
    uint32_t type;
    const char *name;
    int elems, bytes, readable;
} expected_type;

/* From ggml's block structs: halves are 2 bytes, QK_K = 256. */
static const expected_type expected_types[] = {
    {0, "f32", 1, 4, 1},          {1, "f16", 1, 2, 1},
    {2, "q4_0", 32, 2 + 16, 1},   {3, "q4_1", 32, 2 + 2 + 16, 1},
    {6, "q5_0", 32, 2 + 4 + 16, 1}, {7, "q5_1", 32, 2 + 2 + 4 + 16, 1},
    {8, "q8_0", 32, 2 + 32, 1},   {9, "q8_1", 32, 2 + 2 + 32, 0},
    {10, "q2_K", 256, 16 + 64 + 2 + 2, 0},
    {11, "q3_K", 256, 32 + 64 + 12 + 2, 0},
    {12, "q4_K", 256, 2 + 2 + 12 + 128, 1},
    {13, "q5_K", 256, 2 + 2 + 12 + 32 + 128, 1},
    {14, "q6_K", 256, 128 + 64 + 16 + 2, 1},
    {15, "q8_K", 256, 4 + 256 + 16 * 2, 0},
    {24, "i8", 1, 1, 0},          {25, "i16", 1, 2, 0},
    {26, "i32", 1, 4, 0},         {27, "i64", 1, 8, 0},
    {28, "f64", 1, 8, 0},         {30, "bf16", 1, 2, 1},
};

Test(dequant, type_table_gives_each_block_and_which_are_readable)
{
    int readable = 0;
    for (uint32_t t = 0; t < 256; t++) {
        const lkv_ggml_type_info *info = lkv_ggml_type_get(t);
        if (info && info->readable)
            readable++;
    }
    cr_assert_eq(readable, 11, "f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q4_K q5_K q6_K");
    for (size_t i = 0; i < sizeof expected_types / sizeof expected_types[0]; i++) {
        const expected_type *e = &expected_types[i];
        const lkv_ggml_type_info *info = lkv_ggml_type_get(e->type);
        cr_assert_not_null(info, "type %u", e->type);
        cr_assert_str_eq(info->name, e->name);
        cr_assert_eq(info->block_elems, e->elems, "%s", e->name);
        cr_assert_eq(info->block_bytes, e->bytes, "%s", e->name);
        cr_assert_eq(info->readable, e->readable, "%s", e->name);
    }
    /* Numbers ggml retired or never used. */
    static const uint32_t undefined[] = {4, 5, 31, 32, 33, 36, 37, 38, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof undefined / sizeof undefined[0]; i++)
        cr_assert_null(lkv_ggml_type_get(undefined[i]), "type %u", undefined[i]);
}

/* The call returned `want` with a message that says `needle`. */
static void expect_error(lkv_status got, lkv_status want, const char *needle)
{
    cr_assert_eq(got, want, "%s, want %s: %s", lkv_status_name(got), lkv_status_name(want),
                 lkv_last_error());
    cr_assert(strstr(lkv_last_error(), needle), "'%s' should say '%s'", lkv_last_error(), needle);
}

Test(dequant, row_bytes_counts_whole_blocks)
{
    static const struct {
        uint32_t type;
        int64_t n;
        uint64_t bytes;
    } cases[] = {{LKV_GGML_Q4_1, 576, 576 / 32 * 20},
                 {LKV_GGML_Q6_K, 1536, 6 * 210},
                 {LKV_GGML_F32, 7, 28},
                 {LKV_GGML_Q3_K, 512, 220}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = 1;
        TU_OK(lkv_ggml_row_bytes(cases[i].type, cases[i].n, &bytes));
        cr_assert_eq(bytes, cases[i].bytes, "case %zu", i);
    }
    uint64_t bytes = 1;
    expect_error(lkv_ggml_row_bytes(LKV_GGML_Q8_0, 33, &bytes), LKV_INVALID_ARGUMENT,
                 "33 elements of q8_0");
    cr_assert_eq(bytes, 0);
    expect_error(lkv_ggml_row_bytes(5, 32, &bytes), LKV_INVALID_ARGUMENT, "unknown ggml type 5");
}

/* A byte count that wraps would let a tensor's data look small enough to
 * lie inside its file. */
Test(dequant, row_bytes_that_overflow_64_bits_are_refused)
{
    static const struct {
        uint32_t type;
        int64_t n;
        const char *named;
    } cases[] = {{LKV_GGML_F32, INT64_C(1) << 62, "4611686018427387904 elements of f32"},
                 {LKV_GGML_F32, INT64_MAX, "9223372036854775807 elements of f32"},
                 {28, INT64_C(1) << 61, "2305843009213693952 elements of f64"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = 1;
        expect_error(lkv_ggml_row_bytes(cases[i].type, cases[i].n, &bytes), LKV_INVALID_ARGUMENT,
                     cases[i].named);
        cr_assert_eq(bytes, 0, "case %zu", i);
    }
    uint64_t bytes = 0;
    TU_OK(lkv_ggml_row_bytes(LKV_GGML_F32, (INT64_C(1) << 62) - 1, &bytes));
    cr_assert_eq(bytes, UINT64_MAX - 3, "the largest f32 row that fits");
}

/* ---- refusals ------------------------------------------------------------- */

Test(dequant, partial_block_is_refused_and_nothing_is_written)
{
    uint8_t src[2 * 144] = {0};
    float out[512];
    for (int i = 0; i < 512; i++)
        out[i] = 12345.0f;
    expect_error(lkv_dequant_row(LKV_GGML_Q4_0, src, out, 33), LKV_INVALID_ARGUMENT,
                 "33 elements of q4_0: not a whole number of 32-element blocks");
    expect_error(lkv_dequant_row(LKV_GGML_Q4_K, src, out, 384), LKV_INVALID_ARGUMENT,
                 "384 elements of q4_K");
    expect_error(lkv_dequant_row(LKV_GGML_F16, src, out, -2), LKV_INVALID_ARGUMENT,
                 "-2 elements of f16");
    for (int i = 0; i < 512; i++)
        cr_assert_eq(out[i], 12345.0f, "element %d written by a refused call", i);
}

Test(dequant, unreadable_type_is_unsupported_by_name)
{
    static const uint8_t src[512] = {0};
    float out[256];
    static const struct {
        uint32_t type;
        const char *name;
    } cases[] = {{LKV_GGML_Q3_K, "q3_K"}, {LKV_GGML_Q2_K, "q2_K"}, {LKV_GGML_Q8_1, "q8_1"},
                 {LKV_GGML_Q8_K, "q8_K"}, {24, "i8"}, {28, "f64"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = lkv_ggml_type_get(cases[i].type)->block_elems;
        char want[64];
        snprintf(want, sizeof want, "type %s is not supported", cases[i].name);
        expect_error(lkv_dequant_row(cases[i].type, src, out, n), LKV_UNSUPPORTED, want);
    }
}

Test(dequant, unknown_type_is_refused)
{
    static const uint8_t src[64] = {0};
    float out[32];
    expect_error(lkv_dequant_row(4, src, out, 32), LKV_INVALID_ARGUMENT, "unknown ggml type 4");
    expect_error(lkv_dequant_row(99, src, out, 32), LKV_INVALID_ARGUMENT, "unknown ggml type 99");
}

Test(dequant, empty_row_is_fine_and_null_buffers_are_refused)
{
    TU_OK(lkv_dequant_row(LKV_GGML_Q4_1, NULL, NULL, 0));
    float out[32];
    expect_error(lkv_dequant_row(LKV_GGML_Q4_1, NULL, out, 32), LKV_INVALID_ARGUMENT,
                 "src is NULL");
}
