/* One attend chunk: a run of slots of one cache row against every query head
 * that shares the row's cache head. The kernels (cpu_chunk_<isa>.c) read K
 * once and V once for all the heads and leave the chunk's share of an online
 * softmax, which cpu_attend.c combines across chunks:
 *
 *   e[j][i] = exp(s[j][i] - m[j]),  s[j][i] = scale * q[j] . K[i]
 *   m[j]    = max_i s[j][i],  l[j] = sum_i e[j][i]
 *   acc[j]  = sum_i e[j][i] * V[i]                  (dim floats)
 *
 * Everything in f32: products summed in vector lanes, then the lanes
 * (the oracle sums in double, in dimension order); exp is a polynomial good
 * to about 2 ulp (the oracle's is libm's double exp). */
#ifndef LKV_CPU_CHUNK_H
#define LKV_CPU_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"

#define LKV_CPU_MAX_DIM 1024 /* core/cache.c's largest head_dim */

typedef struct lkv_cpu_chunk {
    lkv_dtype dtype;
    const unsigned char *k, *v; /* slot 0 of the chunk in its row; with `at`, of the row */
    const int32_t *at;          /* NULL, or where slot i's K/V lies: the hole map */
    int32_t n;                  /* slots, >= 1 */
    int32_t dim, per;           /* head_dim; query heads of the cache head */
    const float *q;             /* [per][dim] */
    float scale;
    float *e;                   /* [per][e_stride], the first n of each used */
    size_t e_stride;
    float *m, *l;               /* [per] */
    float *acc;                 /* [per][dim] */
} lkv_cpu_chunk;

typedef void (*lkv_cpu_chunk_fn)(const lkv_cpu_chunk *c);

/* One per instruction set. The x86 ones are built on x86 only, the NEON
 * one on aarch64 only, and cpu_isa.c calls one only on a CPU that has its
 * extensions. */
void lkv_cpu_chunk_generic(const lkv_cpu_chunk *c);
void lkv_cpu_chunk_avx2(const lkv_cpu_chunk *c);
void lkv_cpu_chunk_avx512(const lkv_cpu_chunk *c);
void lkv_cpu_chunk_neon(const lkv_cpu_chunk *c);

#endif /* LKV_CPU_CHUNK_H */
