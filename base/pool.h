/* A persistent pool of worker threads for the forward pass and the cpu
 * backend: a token runs some 200 matmuls and an attend per layer, too many
 * to pay a thread start each. */
#ifndef LKV_POOL_H
#define LKV_POOL_H

#include <stdint.h>

#include "lazykv.h"

typedef struct lkv_pool lkv_pool;

/* threads <= 0 means the online CPUs (LAZYKV_MODEL_THREADS overrides). A pool
 * of one thread runs everything on the caller. If a thread cannot start the
 * pool has fewer; it never fails for that. */
lkv_status lkv_pool_create(int threads, lkv_pool **out_pool);
void lkv_pool_free(lkv_pool *pool);

/* The process's shared pool of `threads` threads (at most the pool's limit,
 * 256: a larger count is cut to it): the cpu backend takes it,
 * and so do generate and eval when no other thread count is asked for, so
 * the forward pass and attention run on the same workers instead of twice
 * as many threads fighting for the cores. Each acquire takes a reference;
 * asking for another count while the shared pool lives gives a pool of its
 * own. Release with lkv_pool_release, which frees the shared pool with its
 * last reference and any other pool at once. */
lkv_status lkv_pool_acquire_shared(int threads, lkv_pool **out_pool);
void lkv_pool_release(lkv_pool *pool);

/* LAZYKV_CPU_THREADS (1..1024) when set, else the online CPUs; a bad value
 * is refused naming it. */
lkv_status lkv_pool_cpu_threads(int *out_threads);

/* The forward pass's pool: `threads` > 0 or LAZYKV_MODEL_THREADS set, a
 * pool of its own of that many; otherwise the shared pool of
 * LAZYKV_CPU_THREADS threads, the cpu backend's. Release it with
 * lkv_pool_release. */
lkv_status lkv_pool_for_model(int threads, lkv_pool **out_pool);
int lkv_pool_threads(const lkv_pool *pool);

/* Calls fn(ctx, begin, end) over a split of [0, n) across the threads
 * (the caller takes one share) and returns when every share is done. The
 * split depends only on n and the thread count. Safe from any thread: while
 * a job runs, another call (from another thread or from inside a share)
 * runs fn(ctx, 0, n) on its caller. */
void lkv_pool_run(lkv_pool *pool, int64_t n, void (*fn)(void *ctx, int64_t begin, int64_t end),
                  void *ctx);

#endif
