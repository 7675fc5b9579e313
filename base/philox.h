/* Counter-based noise for NACL's random eviction: Philox4x32-10 (Salmon et
 * al., SC'11) keyed by the seed, counted by (row, position). Integer-only, so
 * every backend draws the same bits; only the final logs are floating point.
 * Kernels in backends/gpu/kernels/ and backends/vulkan/shaders/ reproduce this function. */
#ifndef LKV_PHILOX_H
#define LKV_PHILOX_H

#include <math.h>
#include <stdint.h>

static inline uint32_t lkv_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* First 32-bit word of Philox4x32-10 of counter (c0, c1, 0, 0), key (k0, k1). */
static inline uint32_t lkv_philox(uint32_t c0, uint32_t c1, uint32_t k0, uint32_t k1)
{
    uint32_t c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = lkv_mulhilo32(0xD2511F53u, c0, &hi0);
        uint32_t lo1 = lkv_mulhilo32(0xCD9E8D57u, c2, &hi1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

/* Standard Gumbel noise -log(-log(u)) with u in (0, 1) from the top 24 bits. */
static inline double lkv_gumbel(uint64_t seed, int32_t row, int32_t position)
{
    uint32_t bits = lkv_philox((uint32_t)row, (uint32_t)position, (uint32_t)seed,
                               (uint32_t)(seed >> 32));
    double u = ((double)(bits >> 8) + 0.5) * (1.0 / 16777216.0);
    return -log(-log(u));
}

#endif
