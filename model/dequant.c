/* ggml block formats to f32, written from the block layouts ggml defines
 * (ggml-common.h) and evaluated in the same float order as ggml's reference
 * dequantizers, so the results match llama.cpp's bit for bit. Blocks are
 * read byte by byte: tensor data in a file is not aligned for the block
 * structs, and the halves are little-endian. */
#include "dequant.h"

#include <string.h>

#include "bf16.h"
#include "error.h"
#include "fp16.h"
#include "le.h"

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

#define TYPE_INFO(num, nm, elems, bytes, rd) [num] = {nm, elems, bytes, rd}

/* Every type number ggml defines, with its block; the numbers ggml retired
 * (4, 5, 31..33, 36..38) are left empty. */
static const lkv_ggml_type_info type_table[] = {
    TYPE_INFO(0, "f32", 1, 4, 1),
    TYPE_INFO(1, "f16", 1, 2, 1),
    TYPE_INFO(2, "q4_0", QK4_0, 2 + QK4_0 / 2, 1),
    TYPE_INFO(3, "q4_1", QK4_1, 4 + QK4_1 / 2, 1),
    TYPE_INFO(6, "q5_0", QK5_0, 2 + 4 + QK5_0 / 2, 1),
    TYPE_INFO(7, "q5_1", QK5_1, 4 + 4 + QK5_1 / 2, 1),
    TYPE_INFO(8, "q8_0", QK8_0, 2 + QK8_0, 1),
    TYPE_INFO(9, "q8_1", 32, 2 + 2 + 32, 0),
    TYPE_INFO(10, "q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, 0),
    TYPE_INFO(11, "q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, 0),
    TYPE_INFO(12, "q4_K", QK_K, 2 + 2 + K_SCALE_SIZE + QK_K / 2, 1),
    TYPE_INFO(13, "q5_K", QK_K, 2 + 2 + K_SCALE_SIZE + QK_K / 8 + QK_K / 2, 1),
    TYPE_INFO(14, "q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, 1),
    TYPE_INFO(15, "q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2, 0),
    TYPE_INFO(16, "iq2_xxs", QK_K, 2 + QK_K / 4, 0),
    TYPE_INFO(17, "iq2_xs", QK_K, 2 + QK_K / 4 + QK_K / 32, 0),
    TYPE_INFO(18, "iq3_xxs", QK_K, 2 + QK_K / 4 + QK_K / 8, 0),
    TYPE_INFO(19, "iq1_s", QK_K, 2 + QK_K / 8 + QK_K / 16, 0),
    TYPE_INFO(20, "iq4_nl", 32, 2 + 16, 0),
    TYPE_INFO(21, "iq3_s", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, 0),
    TYPE_INFO(22, "iq2_s", QK_K, 2 + QK_K / 4 + QK_K / 16, 0),
    TYPE_INFO(23, "iq4_xs", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, 0),
    TYPE_INFO(24, "i8", 1, 1, 0),
    TYPE_INFO(25, "i16", 1, 2, 0),
    TYPE_INFO(26, "i32", 1, 4, 0),
    TYPE_INFO(27, "i64", 1, 8, 0),
    TYPE_INFO(28, "f64", 1, 8, 0),
    TYPE_INFO(29, "iq1_m", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, 0),
    TYPE_INFO(30, "bf16", 1, 2, 1),
    TYPE_INFO(34, "tq1_0", QK_K, 2 + 4 * 13, 0),
    TYPE_INFO(35, "tq2_0", QK_K, 2 + 64, 0),
    TYPE_INFO(39, "mxfp4", 32, 1 + 16, 0),
    TYPE_INFO(40, "nvfp4", 64, 4 + 32, 0),
    TYPE_INFO(41, "q1_0", 128, 2 + 16, 0),
};

#define TYPE_COUNT (sizeof type_table / sizeof type_table[0])

const lkv_ggml_type_info *lkv_ggml_type_get(uint32_t type)
{
    if (type >= TYPE_COUNT || !type_table[type].name)
        return NULL;
    return &type_table[type];
}

static lkv_status check_count(uint32_t type, int64_t n, const lkv_ggml_type_info **out)
{
    const lkv_ggml_type_info *info = lkv_ggml_type_get(type);
    if (!info)
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown ggml type %u", (unsigned)type);
    if (n < 0 || n % info->block_elems != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%lld elements of %s: not a whole number of %d-element blocks",
                        (long long)n, info->name, (int)info->block_elems);
    *out = info;
    return LKV_OK;
}

lkv_status lkv_ggml_row_bytes(uint32_t type, int64_t n, uint64_t *out_bytes)
{
    const lkv_ggml_type_info *info = NULL; /* set when check_count passes */
    lkv_status st = check_count(type, n, &info);
    if (st != LKV_OK) {
        *out_bytes = 0;
        return st;
    }
    uint64_t blocks = (uint64_t)(n / info->block_elems);
    if (blocks > UINT64_MAX / (uint64_t)info->block_bytes) {
        *out_bytes = 0;
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%lld elements of %s (%llu blocks of %d bytes) take more bytes than a "
                        "64-bit size holds",
                        (long long)n, info->name, (unsigned long long)blocks,
                        (int)info->block_bytes);
    }
    *out_bytes = blocks * (uint64_t)info->block_bytes;
    return LKV_OK;
}

/* ---- helpers ------------------------------------------------------------- */

static float half_at(const uint8_t *p) { return lkv_half_to_float(lkv_le16(p)); }

static float float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- one block of each type ---------------------------------------------- */

static void block_f32(const uint8_t *b, float *y) { *y = float_of_bits(lkv_le32(b)); }

static void block_f16(const uint8_t *b, float *y) { *y = half_at(b); }

static void block_bf16(const uint8_t *b, float *y) { *y = lkv_bf16_to_float(lkv_le16(b)); }

/* d, then 16 bytes: element j in the low nibble of byte j, j + 16 in the high. */
static void block_q4_0(const uint8_t *b, float *y)
{
    const float d = half_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < QK4_0 / 2; j++) {
        y[j] = (float)((qs[j] & 0x0f) - 8) * d;
        y[j + QK4_0 / 2] = (float)((qs[j] >> 4) - 8) * d;
    }
}

static void block_q4_1(const uint8_t *b, float *y)
{
    const float d = half_at(b), m = half_at(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < QK4_1 / 2; j++) {
        y[j] = (float)(qs[j] & 0x0f) * d + m;
        y[j + QK4_1 / 2] = (float)(qs[j] >> 4) * d + m;
    }
}

/* The fifth bit of element j is bit j of the 32-bit qh. */
static void block_q5_0(const uint8_t *b, float *y)
{
    const float d = half_at(b);
    const uint32_t qh = lkv_le32(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < QK5_0 / 2; j++) {
        const int hi0 = (int)((qh >> j) << 4 & 0x10), hi1 = (int)((qh >> (j + 12)) & 0x10);
        y[j] = (float)(((qs[j] & 0x0f) | hi0) - 16) * d;
        y[j + QK5_0 / 2] = (float)(((qs[j] >> 4) | hi1) - 16) * d;
    }
}

static void block_q5_1(const uint8_t *b, float *y)
{
    const float d = half_at(b), m = half_at(b + 2);
    const uint32_t qh = lkv_le32(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < QK5_1 / 2; j++) {
        const int hi0 = (int)((qh >> j) << 4 & 0x10), hi1 = (int)((qh >> (j + 12)) & 0x10);
        y[j] = (float)((qs[j] & 0x0f) | hi0) * d + m;
        y[j + QK5_1 / 2] = (float)((qs[j] >> 4) | hi1) * d + m;
    }
}

static void block_q8_0(const uint8_t *b, float *y)
{
    const float d = half_at(b);
    for (int j = 0; j < QK8_0; j++)
        y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Sub-block j's scale and min, each a 6-bit value times its super-block
 * factor. The 12 packed bytes keep those of sub-blocks 0..3 in the low six
 * bits of bytes j and j + 4; those of 4..7 in a nibble of byte j + 4, with
 * their top two bits in the spare bits of bytes j - 4 and j. */
typedef struct k_scale {
    float d, m;
} k_scale;

static k_scale k_sub_scale(const uint8_t *q, int j, float d, float dmin)
{
    int sc, m;
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
    return (k_scale){d * (float)sc, dmin * (float)m};
}

/* d, dmin, 12 scale bytes, 128 quant bytes: each 64 elements are two
 * sub-blocks of 32, the low then the high nibbles of 32 bytes. */
static void block_q4_k(const uint8_t *b, float *y)
{
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *scales = b + 4, *q = b + 4 + K_SCALE_SIZE;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
        const k_scale lo = k_sub_scale(scales, is, d, dmin);
        const k_scale hi = k_sub_scale(scales, is + 1, d, dmin);
        for (int l = 0; l < 32; l++)
            *y++ = lo.d * (float)(q[l] & 0x0f) - lo.m;
        for (int l = 0; l < 32; l++)
            *y++ = hi.d * (float)(q[l] >> 4) - hi.m;
    }
}

/* As q4_K with a fifth bit per element in qh[32]: sub-block s takes bit s
 * of qh[l]. */
static void block_q5_k(const uint8_t *b, float *y)
{
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 4 + K_SCALE_SIZE, *ql = qh + QK_K / 8;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
        const k_scale lo = k_sub_scale(scales, is, d, dmin);
        const k_scale hi = k_sub_scale(scales, is + 1, d, dmin);
        for (int l = 0; l < 32; l++)
            *y++ = lo.d * (float)((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0)) - lo.m;
        for (int l = 0; l < 32; l++)
            *y++ = hi.d * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - hi.m;
    }
}

/* ql[128] (low four bits), qh[64] (high two bits), 16 int8 scales, d: each
 * half of 128 elements is four runs of 32 sharing ql/qh bytes. */
static void block_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b, *qh = b + QK_K / 2;
    const int8_t *sc = (const int8_t *)(b + QK_K / 2 + QK_K / 4);
    const float d = half_at(b + QK_K / 2 + QK_K / 4 + QK_K / 16);
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; l++) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0f) | ((qh[l] >> 0 & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2 & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
    }
}

typedef void (*block_fn)(const uint8_t *block, float *out);

static block_fn block_fn_of(uint32_t type)
{
    switch (type) {
    case LKV_GGML_F32: return block_f32;
    case LKV_GGML_F16: return block_f16;
    case LKV_GGML_BF16: return block_bf16;
    case LKV_GGML_Q4_0: return block_q4_0;
    case LKV_GGML_Q4_1: return block_q4_1;
    case LKV_GGML_Q5_0: return block_q5_0;
    case LKV_GGML_Q5_1: return block_q5_1;
    case LKV_GGML_Q8_0: return block_q8_0;
    case LKV_GGML_Q4_K: return block_q4_k;
    case LKV_GGML_Q5_K: return block_q5_k;
    case LKV_GGML_Q6_K: return block_q6_k;
    default: return NULL;
    }
}

lkv_status lkv_dequant_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const lkv_ggml_type_info *info = NULL; /* set when check_count passes */
    lkv_status st = check_count(type, n, &info);
    if (st != LKV_OK)
        return st;
    block_fn fn = block_fn_of(type);
    if (!fn || !info->readable)
        return lkv_fail(LKV_UNSUPPORTED,
                        "tensor type %s is not supported (readable: f32, f16, bf16, q4_0, q4_1, "
                        "q5_0, q5_1, q8_0, q4_K, q5_K, q6_K)",
                        info->name);
    if (n > 0 && (!src || !dst))
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_dequant_row: %s is NULL", !src ? "src" : "dst");
    const uint8_t *b = src;
    for (int64_t i = 0; i < n; i += info->block_elems, b += info->block_bytes)
        fn(b, dst + i);
    return LKV_OK;
}
