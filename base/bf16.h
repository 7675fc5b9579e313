/* bfloat16 <-> binary32 in portable C. bf16 is the upper half of an f32, so
 * widening is exact; narrowing rounds to nearest, ties to even, as GPU
 * hardware conversions do, so the CPU oracle and the kernels store and read
 * the same bits. */
#ifndef LKV_BF16_H
#define LKV_BF16_H

#include <stdint.h>
#include <string.h>

static inline float lkv_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t lkv_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    /* NaN: keep sign and payload's top bits, force quiet, so rounding cannot
     * carry a NaN into inf. */
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    /* Adding 0x7fff plus the kept lsb rounds half to even; a carry out of
     * the significand is the right rounding (up to inf past the largest). */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

#endif
