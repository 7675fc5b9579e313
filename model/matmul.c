/* y[l][r] = dot(W[r], x[l]) for every lane l: the bottleneck of the forward
 * pass. Rows are split over the pool in blocks of four; within a thread's
 * rows a tile of rows (192 KiB, so it stays in the L2 cache) is swept once
 * per group of four lanes (the lanes left over form one narrower group), and
 * each step of the inner loop loads four 8-wide slices of W and feeds each to
 * four lanes' accumulators. With more than one group, the first group's sweep
 * prefetches the next tile: W comes from memory once per matmul, and the
 * prefetch hides most of that behind the first group's arithmetic.
 *
 * Arithmetic order, the same for every (row, lane) whatever the blocking,
 * the lane count or the thread count: eight interleaved partial sums over
 * the columns in steps of 8 (fused multiply-adds where the CPU has them),
 * reduced pairwise ((0+1)+(2+3))+((4+5)+(6+7)), then the last cols % 8
 * products added in order. So a lane's result never depends on which other
 * lanes step with it.
 *
 * x86-64 builds carry an AVX2+FMA clone (and an AVX-512 one, which has the
 * registers for the 4x4 block) chosen at load time; elsewhere the plain
 * vector extensions compile to the target's SIMD. */
#include "matmul.h"

#include <stddef.h>
#include <string.h>

/* ISO C mode turns off contraction; a*b+c must become one FMA here. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* target_clones dispatches through an ifunc, which glibc provides. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define LKV_MATMUL_CLONES                                                                          \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define LKV_MATMUL_CLONES
#endif

typedef float v8 __attribute__((vector_size(32)));

#define LKV_RB 4 /* rows per register block */
#define LKV_LB 4 /* lanes per register block */
#define LKV_TILE_BYTES (192 * 1024) /* rows of W swept per lane group */
#define LKV_MIN_PARALLEL 65536 /* multiply-adds below which one thread is faster */

typedef struct lkv_matmul_job {
    const float *w;
    const float *x;
    float *y;
    int32_t rows, cols, lanes;
} lkv_matmul_job;

static inline __attribute__((always_inline)) float hsum(const v8 *a)
{
    return (((*a)[0] + (*a)[1]) + ((*a)[2] + (*a)[3])) +
           (((*a)[4] + (*a)[5]) + ((*a)[6] + (*a)[7]));
}

/* R rows x L lanes starting at row r, lane l; R and L are constants at every
 * call, so the loops unroll into registers. */
#define LKV_UNROLL _Pragma("GCC unroll 4")

static inline __attribute__((always_inline)) void block(const lkv_matmul_job *j, int32_t r,
                                                        int32_t l, int R, int L, int32_t ahead)
{
    const size_t cols = (size_t)j->cols;
    const float *w[LKV_RB];
    const float *pf[LKV_RB];
    const float *x[LKV_LB];
    LKV_UNROLL
    for (int i = 0; i < R; i++) {
        w[i] = j->w + (size_t)(r + i) * cols;
        pf[i] = (int64_t)r + i + ahead < j->rows ? w[i] + (size_t)ahead * cols : w[i];
    }
    LKV_UNROLL
    for (int k = 0; k < L; k++)
        x[k] = j->x + (size_t)(l + k) * cols;
    v8 acc[LKV_RB][LKV_LB];
    LKV_UNROLL
    for (int i = 0; i < R; i++)
        LKV_UNROLL
        for (int k = 0; k < L; k++)
            acc[i][k] = (v8){0};
    size_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        if (ahead > 0 && (c & 15) == 0) {
            LKV_UNROLL
            for (int i = 0; i < R; i++)
                __builtin_prefetch(pf[i] + c);
        }
        v8 wv[LKV_RB];
        LKV_UNROLL
        for (int i = 0; i < R; i++)
            memcpy(&wv[i], w[i] + c, sizeof(v8));
        LKV_UNROLL
        for (int k = 0; k < L; k++) {
            v8 xv;
            memcpy(&xv, x[k] + c, sizeof xv);
            LKV_UNROLL
            for (int i = 0; i < R; i++)
                acc[i][k] = acc[i][k] + wv[i] * xv;
        }
    }
    LKV_UNROLL
    for (int i = 0; i < R; i++) {
        LKV_UNROLL
        for (int k = 0; k < L; k++) {
            float s = hsum(&acc[i][k]);
            for (size_t t = c; t < cols; t++)
                s = s + w[i][t] * x[k][t];
            j->y[(size_t)(l + k) * (size_t)j->rows + (size_t)(r + i)] = s;
        }
    }
}

/* With `ahead` > 0 the sweep also prefetches the rows `ahead` below, the
 * next tile, so the lane groups after the first find it in the cache. */
static inline __attribute__((always_inline)) void sweep(const lkv_matmul_job *j, int32_t r0,
                                                        int32_t r1, int32_t l, int L,
                                                        int32_t ahead)
{
    int32_t r = r0;
    for (; r + LKV_RB <= r1; r += LKV_RB)
        block(j, r, l, LKV_RB, L, ahead);
    for (; r < r1; r++)
        block(j, r, l, 1, L, 0);
}

/* The lanes left over after the groups of four, as one narrower group. */
static inline __attribute__((always_inline)) void sweep_rest(const lkv_matmul_job *j, int32_t r0,
                                                             int32_t r1, int32_t l, int rest)
{
    switch (rest) {
    case 3:
        sweep(j, r0, r1, l, 3, 0);
        break;
    case 2:
        sweep(j, r0, r1, l, 2, 0);
        break;
    case 1:
        sweep(j, r0, r1, l, 1, 0);
        break;
    default:
        break;
    }
}

/* Rows [4 * begin, 4 * end) of the job (clipped to its rows). */
LKV_MATMUL_CLONES static void matmul_rows(void *ctx, int64_t begin, int64_t end)
{
    const lkv_matmul_job *j = ctx;
    int32_t r_begin = (int32_t)(begin * LKV_RB);
    int32_t r_end = (int32_t)(end * LKV_RB < j->rows ? end * LKV_RB : j->rows);
    size_t row_bytes = (size_t)j->cols * sizeof(float);
    int32_t tile = (int32_t)(LKV_TILE_BYTES / (row_bytes ? row_bytes : 1));
    tile = tile < LKV_RB ? LKV_RB : tile - tile % LKV_RB;
    for (int32_t r0 = r_begin; r0 < r_end; r0 += tile) {
        int32_t r1 = r_end - r0 < tile ? r_end : r0 + tile;
        int32_t l = 0;
        if (j->lanes > LKV_LB) { /* the first group streams W in for the others */
            sweep(j, r0, r1, 0, LKV_LB, tile);
            l = LKV_LB;
        }
        for (; l + LKV_LB <= j->lanes; l += LKV_LB)
            sweep(j, r0, r1, l, LKV_LB, 0);
        sweep_rest(j, r0, r1, l, j->lanes - l);
    }
}

void lkv_matmul(lkv_pool *pool, const float *w, int32_t rows, int32_t cols, const float *x,
                int32_t lanes, float *y)
{
    if (rows <= 0 || lanes <= 0)
        return;
    lkv_matmul_job job = {w, x, y, rows, cols, lanes};
    int64_t blocks = ((int64_t)rows + LKV_RB - 1) / LKV_RB;
    double work = (double)rows * (double)cols * (double)lanes;
    if (work < LKV_MIN_PARALLEL || lkv_pool_threads(pool) <= 1)
        matmul_rows(&job, 0, blocks);
    else
        lkv_pool_run(pool, blocks, matmul_rows, &job);
}
