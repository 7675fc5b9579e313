/* Little-endian loads from bytes already checked to hold them. Model files
 * are little-endian whatever the host, and their fields are not aligned for
 * a plain load, so every reader of file bytes goes through these. */
#ifndef LKV_LE_H
#define LKV_LE_H

#include <stdint.h>

static inline uint16_t lkv_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t lkv_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t lkv_le64(const uint8_t *p)
{
    return (uint64_t)lkv_le32(p) | ((uint64_t)lkv_le32(p + 4) << 32);
}

/* Two's complement reinterpretation without the implementation-defined
 * conversion of an out-of-range unsigned value. */
static inline int32_t lkv_le32_signed(const uint8_t *p)
{
    uint32_t u = lkv_le32(p);
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

#endif
