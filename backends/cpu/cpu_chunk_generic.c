/* The attend chunk kernel in portable C (one lane): the fallback on every
 * CPU, and what LAZYKV_CPU_ISA=generic forces. */
#include "cpu_chunk.h"

#define CHUNK_FN lkv_cpu_chunk_generic
#define VT float
#define VL 1
#define V_ZERO() 0.0f
#define V_SET1(x) (x)
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_MAX(a, b) ((a) > (b) ? (a) : (b))
#define V_HSUM(v) (v)
#define V_HMAX(v) (v)
#define V_TSUM(a) ((a)[0])
#define V_EXP(v) expf(v)
#define V_WIDEN_F16(p) lkv_half_to_float(*(p))
#define V_WIDEN_BF16(p) lkv_bf16_to_float(*(p))

#include "cpu_chunk_body.h"
