/* The attend chunk kernel with AArch64's Advanced SIMD (NEON: 4 f32 lanes,
 * fused multiply-add; f16 widened by fcvtl, bf16 by a 16-bit shift). NEON is
 * part of every AArch64 CPU that runs Linux, so there is nothing to detect:
 * on aarch64 this is what `auto` picks. Built on aarch64 only; the x86 CI
 * cross-compiles it and runs its check under qemu (tests/cpu/). */
#include "cpu_chunk.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* a > b ? a : b lane by lane, as V_MAX asks (a NaN a is skipped; vmaxq
 * would return the NaN) */
static inline float32x4_t max_keep_b(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}

/* Lane r = the sum of a[r]'s lanes: two rounds of pairwise adds. */
static inline float32x4_t tsum4(const float32x4_t *a)
{
    return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}

#define VT float32x4_t
#define EXP_FN exp4
#define EX_SET1 vdupq_n_f32
#define EX_MASK_T uint32x4_t
#define EX_LT(a, b) vcltq_f32(a, b)
#define EX_MAX max_keep_b
#define EX_MUL vmulq_f32
#define EX_ADD vaddq_f32
#define EX_FMA(a, b, c) vfmaq_f32(c, a, b)
#define EX_ROUND(v) vrndnq_f32(v)
#define EX_SCALE2(p, n)                                                                       \
    vreinterpretq_f32_s32(                                                                    \
        vaddq_s32(vreinterpretq_s32_f32(p), vshlq_n_s32(vcvtnq_s32_f32(n), 23)))
#define EX_ZERO_WHERE(mask, v) vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(v), mask))
#include "cpu_exp.h"

#define CHUNK_FN lkv_cpu_chunk_neon
#define VL 4
#define V_ZERO() vdupq_n_f32(0.0f)
#define V_SET1(x) vdupq_n_f32(x)
#define V_LOAD(p) vld1q_f32(p)
#define V_STORE(p, v) vst1q_f32(p, v)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_MAX(a, b) max_keep_b(a, b)
#define V_HSUM(v) vaddvq_f32(v)
#define V_HMAX(v) vmaxnmvq_f32(v)
#define V_TSUM(a) tsum4(a)
#define V_EXP(v) exp4(v)
#define V_WIDEN_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))
#define V_WIDEN_BF16(p) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))

#include "cpu_chunk_body.h"
#endif
