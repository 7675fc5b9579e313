/* The attend chunk kernel with AVX2, FMA and F16C (8 f32 lanes; f16 widened
 * by vcvtph2ps, bf16 by a 16-bit shift). Compiled for those extensions
 * whatever the build's -march; cpu_attend.c calls it only on a CPU that has
 * them. */
#include "cpu_chunk.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* every function below, the shared body's included (clang ignores GCC's
 * target pragma, and the fuzzing build is clang's) */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,fma,f16c")
#endif

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane r = the sum of a[r]'s lanes, for 8 vectors at once: pairs of rows
 * interleaved and added (unpack), then pairs of pairs, then the two
 * 128-bit halves; 21 operations where 8 separate sums take 40. */
static inline __m256 tsum8(const __m256 *a)
{
    __m256 p[4], u[2];
    for (int i = 0; i < 4; i++)
        p[i] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                             _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 2; i++) {
        __m256d x = _mm256_castps_pd(p[2 * i]), y = _mm256_castps_pd(p[2 * i + 1]);
        u[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)),
                             _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20),
                         _mm256_permute2f128_ps(u[0], u[1], 0x31));
}

#define VT __m256
#define EXP_FN exp8
#define EX_SET1 _mm256_set1_ps
#define EX_MASK_T __m256
#define EX_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define EX_MAX _mm256_max_ps
#define EX_MUL _mm256_mul_ps
#define EX_ADD _mm256_add_ps
#define EX_FMA _mm256_fmadd_ps
#define EX_ROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define EX_SCALE2(p, n)                                                                       \
    _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p),                             \
                                         _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)))
#define EX_ZERO_WHERE(mask, v) _mm256_andnot_ps(mask, v)
#include "cpu_exp.h"

#define CHUNK_FN lkv_cpu_chunk_avx2
#define VL 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_HSUM(v) hsum8(v)
#define V_HMAX(v) hmax8(v)
#define V_TSUM(a) tsum8(a)
#define V_EXP(v) exp8(v)
#define V_WIDEN_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define V_WIDEN_BF16(p)                                                                       \
    _mm256_castsi256_ps(_mm256_slli_epi32(                                                    \
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))

#include "cpu_chunk_body.h"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
