/* The cpu backend's attend chunk kernels against a float64 computation of
 * the same chunk, on a grid of dtypes, head dims (vector tails included),
 * slot counts (several K/V blocks) and heads per cache head. A plain C
 * program with no test framework, so the same source runs natively (every
 * kernel this CPU has) and cross-compiled for aarch64 under qemu (the NEON
 * kernel, which no CI machine runs natively).
 *
 * usage: chunk_check ISA...   (generic, avx2, avx512, neon; an x86 ISA this
 * CPU lacks is skipped, one not compiled in fails). Exit 0 when every case
 * of every ISA is within tolerance. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu/cpu_chunk.h"
#include "fp16.h"

typedef struct kernel {
    const char *name;
    lkv_cpu_chunk_fn fn; /* NULL: not built for this architecture */
    int runs;            /* this CPU has the extensions */
} kernel;

static kernel kernel_of(const char *name)
{
    kernel k = {name, NULL, 0};
    if (strcmp(name, "generic") == 0)
        k = (kernel){name, lkv_cpu_chunk_generic, 1};
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (strcmp(name, "avx2") == 0)
        k = (kernel){name, lkv_cpu_chunk_avx2, __builtin_cpu_supports("avx2") &&
                                                  __builtin_cpu_supports("fma")};
    if (strcmp(name, "avx512") == 0)
        k = (kernel){name, lkv_cpu_chunk_avx512, __builtin_cpu_supports("avx512f")};
#endif
#if defined(__aarch64__)
    if (strcmp(name, "neon") == 0)
        k = (kernel){name, lkv_cpu_chunk_neon, 1};
#endif
    return k;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* n rows of dim values in [-1, 1) stored as dt, and the stored values as
 * doubles (what the kernel must read back). */
static void fill(lkv_dtype dt, int32_t count, unsigned char *stored, double *value)
{
    for (int32_t i = 0; i < count; i++) {
        float x = (float)(2.0 * uniform() - 1.0);
        if (dt == LKV_DTYPE_F32) {
            memcpy(stored + 4 * (size_t)i, &x, 4);
            value[i] = x;
        } else {
            uint16_t h = dt == LKV_DTYPE_F16 ? lkv_float_to_half(x) : lkv_float_to_bf16(x);
            memcpy(stored + 2 * (size_t)i, &h, 2);
            value[i] = dt == LKV_DTYPE_F16 ? lkv_half_to_float(h) : lkv_bf16_to_float(h);
        }
    }
}

typedef struct worst {
    double err;
    char where[160];
} worst;

static void note(worst *w, double err, const char *what, const char *isa, lkv_dtype dt,
                 int32_t dim, int32_t n, int32_t per)
{
    if (isnan(err))
        err = INFINITY; /* a NaN anywhere is the worst error, not one skipped */
    if (err > w->err) {
        w->err = err;
        snprintf(w->where, sizeof w->where, "%s %s dtype %d dim %d n %d per %d", isa, what,
                 (int)dt, dim, n, per);
    }
}

/* The same chunk with its K/V rows scattered over twice the places and
 * read through a hole map (lkv_cpu_chunk.at) gives the same bits: the map
 * changes where a row is read, never the order of the sums. */
static void check_mapped(kernel k, const lkv_cpu_chunk *c, size_t es, worst *w)
{
    size_t row = (size_t)c->dim * es, places = 2 * (size_t)c->n;
    int32_t *at = malloc(sizeof(int32_t) * (size_t)c->n);
    unsigned char *ks = malloc(places * row), *vs = malloc(places * row);
    float *e = malloc(sizeof(float) * (size_t)c->per * c->e_stride);
    float *ml = malloc(sizeof(float) * (size_t)c->per * (2 + (size_t)c->dim));
    if (!at || !ks || !vs || !e || !ml) {
        fprintf(stderr, "chunk_check: out of memory\n");
        exit(2);
    }
    memset(ks, 0x7f, places * row); /* places no slot maps to: NaN-ish noise */
    memset(vs, 0x7f, places * row);
    for (int32_t i = 0; i < c->n; i++) {
        at[i] = (int32_t)((places - 1 - 2 * (size_t)i + (size_t)(i % 2)) % places);
        memcpy(ks + (size_t)at[i] * row, c->k + (size_t)i * row, row);
        memcpy(vs + (size_t)at[i] * row, c->v + (size_t)i * row, row);
    }
    lkv_cpu_chunk mc = *c;
    mc.k = ks, mc.v = vs, mc.at = at, mc.e = e, mc.m = ml, mc.l = ml + c->per;
    mc.acc = ml + 2 * c->per;
    k.fn(&mc);
    int same = !memcmp(c->m, mc.m, sizeof(float) * (size_t)c->per) &&
               !memcmp(c->l, mc.l, sizeof(float) * (size_t)c->per) &&
               !memcmp(c->acc, mc.acc, sizeof(float) * (size_t)c->per * (size_t)c->dim);
    for (int32_t j = 0; j < c->per; j++)
        same = same && !memcmp(c->e + (size_t)j * c->e_stride, e + (size_t)j * c->e_stride,
                               sizeof(float) * (size_t)c->n);
    note(w, same ? 0.0 : 1.0, "mapped", k.name, c->dtype, c->dim, c->n, c->per);
    free(at), free(ks), free(vs), free(e), free(ml);
}

/* One chunk on `k`; the largest error of m, e, l and acc, each scaled by
 * what bounds its f32 rounding (sum of |terms|), into *w. */
static int check_case(kernel k, lkv_dtype dt, int32_t dim, int32_t n, int32_t per, worst *w)
{
    size_t es = dt == LKV_DTYPE_F32 ? 4 : 2, cells = (size_t)n * (size_t)dim;
    size_t stride = (size_t)n + 3;
    unsigned char *ks = malloc(cells * es), *vs = malloc(cells * es);
    double *kd = malloc(sizeof(double) * cells), *vd = malloc(sizeof(double) * cells);
    float *q = malloc(sizeof(float) * (size_t)per * (size_t)dim);
    float *e = malloc(sizeof(float) * (size_t)per * stride);
    float *m = malloc(sizeof(float) * (size_t)per), *l = malloc(sizeof(float) * (size_t)per);
    float *acc = malloc(sizeof(float) * (size_t)per * (size_t)dim);
    double *s = malloc(sizeof(double) * (size_t)n), *sa = malloc(sizeof(double) * (size_t)n);
    if (!ks || !vs || !kd || !vd || !q || !e || !m || !l || !acc || !s || !sa) {
        fprintf(stderr, "chunk_check: out of memory\n");
        exit(2);
    }
    fill(dt, (int32_t)cells, ks, kd);
    fill(dt, (int32_t)cells, vs, vd);
    for (int32_t i = 0; i < per * dim; i++)
        q[i] = (float)(3.0 * (2.0 * uniform() - 1.0));
    float scale = 1.0f / sqrtf((float)dim);
    lkv_cpu_chunk c = {dt, ks, vs, NULL, n, dim, per, q, scale, e, stride, m, l, acc};
    k.fn(&c);
    check_mapped(k, &c, es, w);
    for (int32_t j = 0; j < per; j++) {
        double mref = -INFINITY;
        for (int32_t i = 0; i < n; i++) {
            double dotv = 0.0, mag = 0.0;
            for (int32_t d = 0; d < dim; d++) {
                dotv += (double)q[j * dim + d] * kd[(size_t)i * dim + d];
                mag += fabs((double)q[j * dim + d] * kd[(size_t)i * dim + d]);
            }
            s[i] = dotv * scale;
            sa[i] = mag * scale + 1.0;
            mref = s[i] > mref ? s[i] : mref;
        }
        double lref = 0.0, mag_m = 0.0;
        for (int32_t i = 0; i < n; i++) {
            lref += exp(s[i] - mref);
            mag_m = sa[i] > mag_m ? sa[i] : mag_m;
        }
        note(w, fabs(m[j] - mref) / mag_m, "m", k.name, dt, dim, n, per);
        for (int32_t i = 0; i < n; i++) {
            double eref = exp(s[i] - mref);
            /* e = exp(logit - m): its error is the logit's and m's, times e */
            note(w, fabs(e[j * stride + i] - eref) / (2.0 * mag_m * eref + 1e-30 + eref),
                 "e", k.name, dt, dim, n, per);
        }
        note(w, fabs(l[j] - lref) / (2.0 * mag_m * lref), "l", k.name, dt, dim, n, per);
        for (int32_t d = 0; d < dim; d++) {
            double aref = 0.0, amag = 0.0;
            for (int32_t i = 0; i < n; i++) {
                double wi = exp(s[i] - mref);
                aref += wi * vd[(size_t)i * dim + d];
                amag += wi * fabs(vd[(size_t)i * dim + d]);
            }
            note(w, fabs(acc[j * dim + d] - aref) / (2.0 * mag_m * amag + 1e-30), "acc",
                 k.name, dt, dim, n, per);
        }
    }
    free(ks), free(vs), free(kd), free(vd), free(q), free(e), free(m), free(l), free(acc);
    free(s), free(sa);
    return 0;
}

/* f32 products and sums: some units of 2^-24 per term of the bounds above
 * (n and dim here are at most a few hundred; every kernel stays under
 * 2.5e-7 on this grid). */
#define TOLERANCE 1e-6

int main(int argc, char **argv)
{
    static const lkv_dtype dts[] = {LKV_DTYPE_F32, LKV_DTYPE_F16, LKV_DTYPE_BF16};
    static const int32_t dims[] = {1, 3, 4, 7, 16, 33, 64, 100, 128, 256};
    static const int32_t ns[] = {1, 2, 5, 17, 64, 300};
    if (argc < 2) {
        fprintf(stderr, "usage: chunk_check ISA... (generic, avx2, avx512, neon)\n");
        return 2;
    }
    int failed = 0;
    for (int a = 1; a < argc; a++) {
        kernel k = kernel_of(argv[a]);
        if (!k.fn) {
            fprintf(stderr, "chunk_check: no '%s' kernel in this build\n", argv[a]);
            failed = 1;
            continue;
        }
        if (!k.runs) {
            printf("chunk_check: %s: this CPU lacks it, skipped\n", k.name);
            continue;
        }
        worst w = {0.0, ""};
        int cases = 0;
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
            for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
                for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                    for (int32_t per = 1; per <= 5; per++, cases++)
                        check_case(k, dts[t], dims[d], ns[i], per, &w);
        int ok = w.err <= TOLERANCE && !isnan(w.err);
        printf("chunk_check: %s: %d cases, worst scaled error %.2e (%s) %s %.0e\n", k.name,
               cases, w.err, w.where, ok ? "<=" : "EXCEEDS", TOLERANCE);
        failed |= !ok;
    }
    return failed;
}
