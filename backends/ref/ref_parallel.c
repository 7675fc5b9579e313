/* A fork-join split over POSIX threads; no pool, since the ops that are big
 * enough to split are also big enough to amortise a thread start. */
#include <pthread.h>

#include "ref_ops.h"

#define LKV_REF_MIN_WORK 2.0e5 /* below this a thread start costs more than it saves */
#define LKV_REF_MAX_THREADS 64

typedef struct chunk {
    void (*fn)(void *ctx, int begin, int end);
    void *ctx;
    int begin, end;
} chunk;

static void *run_chunk(void *arg)
{
    chunk *c = arg;
    c->fn(c->ctx, c->begin, c->end);
    return NULL;
}

void lkv_ref_parallel(const lkv_device *dev, int n_items, double work,
                      void (*fn)(void *ctx, int begin, int end), void *ctx)
{
    int threads = dev->threads < n_items ? dev->threads : n_items;
    if (threads > LKV_REF_MAX_THREADS)
        threads = LKV_REF_MAX_THREADS;
    if (threads <= 1 || work < LKV_REF_MIN_WORK) {
        fn(ctx, 0, n_items);
        return;
    }
    chunk chunks[LKV_REF_MAX_THREADS];
    pthread_t tids[LKV_REF_MAX_THREADS];
    int started[LKV_REF_MAX_THREADS] = {0};
    for (int i = 0; i < threads; i++) {
        chunks[i] = (chunk){fn, ctx, (int)((long)n_items * i / threads),
                            (int)((long)n_items * (i + 1) / threads)};
    }
    for (int i = 1; i < threads; i++)
        started[i] = pthread_create(&tids[i], NULL, run_chunk, &chunks[i]) == 0;
    run_chunk(&chunks[0]);
    for (int i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tids[i], NULL);
        else /* could not start a thread: do its share here */
            run_chunk(&chunks[i]);
    }
}
