/* The attend chunk kernel with AVX-512F (16 f32 lanes; f16 widened by
 * vcvtph2ps, bf16 by a 16-bit shift). Compiled for AVX-512F whatever the
 * build's -march; cpu_attend.c calls it only on a CPU that has it. */
#include "cpu_chunk.h"

#if defined(__x86_64__)
#include <immintrin.h>
/* every function below, the shared body's included (clang ignores GCC's
 * target pragma, and the fuzzing build is clang's) */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx2,fma,f16c")
#endif

#define VT __m512
#define EXP_FN exp16
#define EX_SET1 _mm512_set1_ps
#define EX_MAX _mm512_max_ps
#define EX_MUL _mm512_mul_ps
#define EX_ADD _mm512_add_ps
#define EX_FMA _mm512_fmadd_ps
#define EX_ROUND(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define EX_SCALE2(p, n)                                                                       \
    _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p),                             \
                                         _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23)))
#define EX_MASK_T __mmask16
#define EX_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define EX_ZERO_WHERE(mask, v) _mm512_maskz_mov_ps((__mmask16)~(mask), v)
#include "cpu_exp.h"

/* Lane r = the sum of a[r]'s lanes, for 16 vectors at once: rows paired by
 * unpacking within 128-bit lanes, pairs of pairs by 64-bit unpacking, then
 * the four 128-bit quarters folded by two rounds of lane shuffles; 45
 * operations where 16 separate sums take about 130. */
static inline __m512 tsum16(const __m512 *a)
{
    __m512 p[8], u[4], w[2];
    for (int i = 0; i < 8; i++)
        p[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                             _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        __m512d x = _mm512_castps_pd(p[2 * i]), y = _mm512_castps_pd(p[2 * i + 1]);
        u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    /* u[i]'s quarter k holds rows 4i..4i+3 summed over quarter k */
    for (int i = 0; i < 2; i++)
        w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88),
                         _mm512_shuffle_f32x4(w[0], w[1], 0xdd));
}

#define CHUNK_FN lkv_cpu_chunk_avx512
#define VL 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_HSUM(v) _mm512_reduce_add_ps(v)
#define V_HMAX(v) _mm512_reduce_max_ps(v)
#define V_TSUM(a) tsum16(a)
#define V_EXP(v) exp16(v)
#define V_WIDEN_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define V_WIDEN_BF16(p)                                                                       \
    _mm512_castsi512_ps(_mm512_slli_epi32(                                                    \
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))

#include "cpu_chunk_body.h"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
