/* The attend chunk kernel (cpu_chunk.h), written once over a vector
 * abstraction and compiled once per instruction set by cpu_chunk_<isa>.c,
 * which defines, before including this file:
 *
 *   CHUNK_FN          the function's name
 *   VT, VL            the f32 vector type and its lanes
 *   V_ZERO() V_SET1(x) V_LOAD(p) V_STORE(p, v) V_FMA(a, b, c) V_ADD(a, b)
 *   V_SUB(a, b) V_MAX(a, b) V_HSUM(v) V_HMAX(v) V_EXP(v)
 *   V_WIDEN_F16(p) V_WIDEN_BF16(p)   VL halves / bfloat16s at p as f32
 *
 * Tails shorter than VL run in scalar C, so any head_dim works. */
#include <math.h>
#include <string.h>

#include "bf16.h"
#include "fp16.h"

/* Row r of K or V as f32: the row itself for f32 storage, else widened into
 * tmp (which stays in L1 for the heads that read it). */
static inline const float *widen(lkv_dtype dt, const unsigned char *row, int32_t dim, float *tmp)
{
    if (dt == LKV_DTYPE_F32)
        return (const float *)(const void *)row;
    const uint16_t *h = (const uint16_t *)(const void *)row;
    int32_t d = 0;
    if (dt == LKV_DTYPE_F16) {
        for (; d + VL <= dim; d += VL)
            V_STORE(tmp + d, V_WIDEN_F16(h + d));
        for (; d < dim; d++)
            tmp[d] = lkv_half_to_float(h[d]);
    } else {
        for (; d + VL <= dim; d += VL)
            V_STORE(tmp + d, V_WIDEN_BF16(h + d));
        for (; d < dim; d++)
            tmp[d] = lkv_bf16_to_float(h[d]);
    }
    return tmp;
}

static inline float dot(const float *a, const float *b, int32_t dim)
{
    VT s0 = V_ZERO(), s1 = V_ZERO();
    int32_t d = 0;
    for (; d + 2 * VL <= dim; d += 2 * VL) {
        s0 = V_FMA(V_LOAD(a + d), V_LOAD(b + d), s0);
        s1 = V_FMA(V_LOAD(a + d + VL), V_LOAD(b + d + VL), s1);
    }
    for (; d + VL <= dim; d += VL)
        s0 = V_FMA(V_LOAD(a + d), V_LOAD(b + d), s0);
    float s = V_HSUM(V_ADD(s0, s1));
    for (; d < dim; d++)
        s += a[d] * b[d];
    return s;
}

/* e[0..n) = exp(e - m), returning their sum. */
static inline float exp_row(float *e, int32_t n, float m)
{
    VT vm = V_SET1(m), sum = V_ZERO();
    int32_t i = 0;
    for (; i + VL <= n; i += VL) {
        VT x = V_EXP(V_SUB(V_LOAD(e + i), vm));
        V_STORE(e + i, x);
        sum = V_ADD(sum, x);
    }
    float s = V_HSUM(sum);
    for (; i < n; i++) {
        e[i] = expf(e[i] - m);
        s += e[i];
    }
    return s;
}

/* acc += w * v over dim. */
static inline void axpy(float *acc, float w, const float *v, int32_t dim)
{
    VT vw = V_SET1(w);
    int32_t d = 0;
    for (; d + VL <= dim; d += VL)
        V_STORE(acc + d, V_FMA(vw, V_LOAD(v + d), V_LOAD(acc + d)));
    for (; d < dim; d++)
        acc[d] += w * v[d];
}

void CHUNK_FN(const lkv_cpu_chunk *c)
{
    float tmp[LKV_CPU_MAX_DIM];
    size_t row_bytes = (size_t)c->dim * lkv_dtype_size(c->dtype);
    for (int32_t j = 0; j < c->per; j++)
        c->m[j] = -INFINITY;
    for (int32_t i = 0; i < c->n; i++) {
        const float *k = widen(c->dtype, c->k + (size_t)i * row_bytes, c->dim, tmp);
        for (int32_t j = 0; j < c->per; j++) {
            float s = dot(c->q + (size_t)j * (size_t)c->dim, k, c->dim) * c->scale;
            c->e[(size_t)j * c->e_stride + (size_t)i] = s;
            c->m[j] = s > c->m[j] ? s : c->m[j];
        }
    }
    for (int32_t j = 0; j < c->per; j++)
        c->l[j] = exp_row(c->e + (size_t)j * c->e_stride, c->n, c->m[j]);
    memset(c->acc, 0, sizeof(float) * (size_t)c->per * (size_t)c->dim);
    for (int32_t i = 0; i < c->n; i++) {
        const float *v = widen(c->dtype, c->v + (size_t)i * row_bytes, c->dim, tmp);
        for (int32_t j = 0; j < c->per; j++)
            axpy(c->acc + (size_t)j * (size_t)c->dim, c->e[(size_t)j * c->e_stride + (size_t)i], v,
                 c->dim);
    }
}
