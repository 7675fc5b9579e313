/* The attend chunk kernel (cpu_chunk.h), written once over a vector
 * abstraction and compiled once per instruction set by cpu_chunk_<isa>.c,
 * which defines, before including this file:
 *
 *   CHUNK_FN          the function's name
 *   VT, VL            the f32 vector type and its lanes
 *   V_ZERO() V_SET1(x) V_LOAD(p) V_STORE(p, v) V_FMA(a, b, c) V_ADD(a, b)
 *   V_SUB(a, b) V_MUL(a, b) V_EXP(v)
 *   V_MAX(a, b)       a > b ? a : b lane by lane (so a NaN a is skipped)
 *   V_HSUM(v) V_HMAX(v)   the sum / max of v's lanes
 *   V_TSUM(a)         from VL vectors a[0..VL): lane r = V_HSUM(a[r])
 *   V_WIDEN_F16(p) V_WIDEN_BF16(p)   VL halves / bfloat16s at p as f32
 *
 * Tails shorter than VL run in scalar C, so any head_dim works. */
#include <assert.h>
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

/* e[0..nb) = scale * (q . rows[b]), returning max(m, e[0..nb)). VL rows at
 * a time: one accumulator per row, q loaded once for all of them, and the
 * VL sums reduced together into one vector of logits (V_TSUM), which is
 * scaled, stored and max-ed as a vector. */
static inline float logits(const float *q, const float *const *rows, int32_t nb, int32_t dim,
                           float scale, float *e, float m)
{
    VT vmax = V_SET1(m), vscale = V_SET1(scale);
    int32_t b = 0;
    for (; b + VL <= nb; b += VL) {
        VT acc[VL];
        for (int r = 0; r < VL; r++)
            acc[r] = V_ZERO();
        int32_t d = 0;
        for (; d + VL <= dim; d += VL) {
            VT qv = V_LOAD(q + d);
#pragma GCC unroll 16
            for (int r = 0; r < VL; r++)
                acc[r] = V_FMA(qv, V_LOAD(rows[b + r] + d), acc[r]);
        }
        VT s = V_TSUM(acc);
        if (d < dim) {
            float tail[VL];
            for (int r = 0; r < VL; r++) {
                tail[r] = 0.0f;
                for (int32_t t = d; t < dim; t++)
                    tail[r] += q[t] * rows[b + r][t];
            }
            s = V_ADD(s, V_LOAD(tail));
        }
        s = V_MUL(s, vscale);
        V_STORE(e + b, s);
        vmax = V_MAX(s, vmax);
    }
    m = V_HMAX(vmax);
    for (; b < nb; b++) {
        e[b] = dot(q, rows[b], dim) * scale;
        m = e[b] > m ? e[b] : m;
    }
    return m;
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

/* Rows per K or V block: widened, they fill at most BLOCK_FLOATS (32 KiB,
 * L1) so every head re-reads them from there. */
#define BLOCK_FLOATS 8192
#define BLOCK_MAX 32

/* acc[0..dim) += sum_b w[b] * v[b][0..dim) over a block of nb rows, from
 * dimension d0 on, by vectors: each lane of acc is loaded and stored once
 * per block, and two partial sums (even and odd rows) keep two FMA chains in
 * flight. What the tiles of accumulate() leave over. */
static inline void accumulate_rest(float *acc, const float *w, const float *const *v, int32_t nb,
                                   int32_t d0, int32_t dim)
{
    int32_t d = d0;
    for (; d + VL <= dim; d += VL) {
        VT a0 = V_LOAD(acc + d), a1 = V_ZERO();
        int32_t b = 0;
        for (; b + 1 < nb; b += 2) {
            a0 = V_FMA(V_SET1(w[b]), V_LOAD(v[b] + d), a0);
            a1 = V_FMA(V_SET1(w[b + 1]), V_LOAD(v[b + 1] + d), a1);
        }
        if (b < nb)
            a0 = V_FMA(V_SET1(w[b]), V_LOAD(v[b] + d), a0);
        V_STORE(acc + d, V_ADD(a0, a1));
    }
    for (; d < dim; d++) {
        float s = acc[d];
        for (int32_t b = 0; b < nb; b++)
            s += w[b] * v[b][d];
        acc[d] = s;
    }
}

/* Vectors of acc a tile keeps in registers per head. */
#define TILE 8

/* acc_h[0..dim) += sum_b w_h[b] * v[b][0..dim) for nh (1 or 2) heads that
 * share the rows: a tile of TILE vectors of each head's accumulator stays
 * in registers over the whole block, so a row costs one load per vector
 * (shared by the heads) and one broadcast per head, not a load, a
 * broadcast and a load-store of acc per vector and head. */
static inline void accumulate(int nh, float *const *acc, const float *const *w,
                              const float *const *v, int32_t nb, int32_t dim)
{
    int32_t d = 0;
    for (; d + TILE * VL <= dim; d += TILE * VL) {
        VT a[2][TILE];
        for (int h = 0; h < nh; h++)
            for (int t = 0; t < TILE; t++)
                a[h][t] = V_LOAD(acc[h] + d + t * VL);
        for (int32_t b = 0; b < nb; b++) {
            const float *row = v[b] + d;
            VT x = V_SET1(w[0][b]);
            if (nh == 2) {
                VT y = V_SET1(w[1][b]);
#pragma GCC unroll 8
                for (int t = 0; t < TILE; t++) {
                    VT r = V_LOAD(row + t * VL);
                    a[0][t] = V_FMA(x, r, a[0][t]);
                    a[1][t] = V_FMA(y, r, a[1][t]);
                }
            } else {
#pragma GCC unroll 8
                for (int t = 0; t < TILE; t++)
                    a[0][t] = V_FMA(x, V_LOAD(row + t * VL), a[0][t]);
            }
        }
        for (int h = 0; h < nh; h++)
            for (int t = 0; t < TILE; t++)
                V_STORE(acc[h] + d + t * VL, a[h][t]);
    }
    for (int h = 0; h < nh; h++)
        accumulate_rest(acc[h], w[h], v, nb, d, dim);
}

/* Slot i's K or V row: through the hole map when there is one. */
static inline const unsigned char *slot_row(const lkv_cpu_chunk *c, const unsigned char *base,
                                            int32_t i, size_t row_bytes)
{
    size_t at = c->at ? (size_t)c->at[i] : (size_t)i;
    return base + at * row_bytes;
}

void CHUNK_FN(const lkv_cpu_chunk *c)
{
    static_assert(BLOCK_FLOATS >= LKV_CPU_MAX_DIM, "a block holds at least one row");
    float block[BLOCK_FLOATS];
    const float *rows[BLOCK_MAX];
    size_t row_bytes = (size_t)c->dim * lkv_dtype_size(c->dtype);
    int32_t sb = BLOCK_FLOATS / c->dim;
    sb = sb > BLOCK_MAX ? BLOCK_MAX : sb;
    for (int32_t j = 0; j < c->per; j++)
        c->m[j] = -INFINITY;
    /* logits, a block of K rows at a time (widened once for every head) */
    for (int32_t i0 = 0; i0 < c->n; i0 += sb) {
        int32_t nb = c->n - i0 < sb ? c->n - i0 : sb;
        for (int32_t b = 0; b < nb; b++)
            rows[b] = widen(c->dtype, slot_row(c, c->k, i0 + b, row_bytes), c->dim,
                            block + (size_t)b * (size_t)c->dim);
        for (int32_t j = 0; j < c->per; j++)
            c->m[j] = logits(c->q + (size_t)j * (size_t)c->dim, rows, nb, c->dim, c->scale,
                             c->e + (size_t)j * c->e_stride + (size_t)i0, c->m[j]);
    }
    for (int32_t j = 0; j < c->per; j++)
        c->l[j] = exp_row(c->e + (size_t)j * c->e_stride, c->n, c->m[j]);
    memset(c->acc, 0, sizeof(float) * (size_t)c->per * (size_t)c->dim);
    for (int32_t i0 = 0; i0 < c->n; i0 += sb) {
        int32_t nb = c->n - i0 < sb ? c->n - i0 : sb;
        for (int32_t b = 0; b < nb; b++)
            rows[b] = widen(c->dtype, slot_row(c, c->v, i0 + b, row_bytes), c->dim,
                            block + (size_t)b * (size_t)c->dim);
        for (int32_t j = 0; j < c->per; j += 2) {
            int nh = c->per - j >= 2 ? 2 : 1;
            float *acc[2];
            const float *w[2];
            for (int h = 0; h < nh; h++) {
                acc[h] = c->acc + (size_t)(j + h) * (size_t)c->dim;
                w[h] = c->e + (size_t)(j + h) * c->e_stride + (size_t)i0;
            }
            accumulate(nh, acc, w, rows, nb, c->dim);
        }
    }
}
