/* One helper thread per cache, started on first use, parked on a condition
 * variable between evictions. A job is the step's (sequence, step) list,
 * copied, so the caller's arrays are free once the call returns. The
 * thread's error text lives in its own thread-local slot; it is copied
 * here and raised again on the joining thread. */
#include "background.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "clock.h"
#include "error.h"

struct lkv_background {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started, stop, pending, done;
    lkv_cache *cache;
    int32_t *seqs, *steps, n, step;
    lkv_status status;
    char error[512];
};

static lkv_layer_span all_layers(const lkv_cache *c)
{
    return (lkv_layer_span){0, c->cfg.layers};
}

static void run_job(lkv_background *bg)
{
    double t0 = lkv_clock_seconds();
    lkv_status st = lkv_schedule(bg->cache, bg->seqs, bg->steps, bg->n, all_layers(bg->cache),
                                 LKV_DUE_DECODE);
    bg->cache->stats.eviction_seconds += lkv_clock_seconds() - t0;
    pthread_mutex_lock(&bg->mu);
    bg->status = st;
    if (st != LKV_OK)
        snprintf(bg->error, sizeof bg->error, "%s", lkv_last_error());
    bg->done = 1;
    pthread_cond_broadcast(&bg->cv);
    pthread_mutex_unlock(&bg->mu);
}

static void *worker(void *arg)
{
    lkv_background *bg = arg;
    pthread_mutex_lock(&bg->mu);
    for (;;) {
        while (!bg->stop && !(bg->pending && !bg->done))
            pthread_cond_wait(&bg->cv, &bg->mu);
        if (bg->stop)
            break;
        pthread_mutex_unlock(&bg->mu);
        run_job(bg);
        pthread_mutex_lock(&bg->mu);
    }
    pthread_mutex_unlock(&bg->mu);
    return NULL;
}

lkv_background *lkv_background_create(int32_t sequences)
{
    lkv_background *bg = calloc(1, sizeof *bg);
    if (!bg)
        return NULL;
    bg->seqs = malloc(sizeof(int32_t) * (size_t)sequences);
    bg->steps = malloc(sizeof(int32_t) * (size_t)sequences);
    int sync_ok = pthread_mutex_init(&bg->mu, NULL) == 0;
    if (sync_ok && pthread_cond_init(&bg->cv, NULL) != 0) {
        pthread_mutex_destroy(&bg->mu);
        sync_ok = 0;
    }
    if (!bg->seqs || !bg->steps || !sync_ok) {
        free(bg->seqs);
        free(bg->steps);
        free(bg);
        return NULL;
    }
    return bg;
}

void lkv_background_free(lkv_background *bg)
{
    if (!bg)
        return;
    (void)lkv_background_join(bg);
    if (bg->started) {
        pthread_mutex_lock(&bg->mu);
        bg->stop = 1;
        pthread_cond_broadcast(&bg->cv);
        pthread_mutex_unlock(&bg->mu);
        pthread_join(bg->thread, NULL);
    }
    pthread_cond_destroy(&bg->cv);
    pthread_mutex_destroy(&bg->mu);
    free(bg->seqs);
    free(bg->steps);
    free(bg);
}

static lkv_status run_inline(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n)
{
    double t0 = lkv_clock_seconds();
    lkv_status st = lkv_schedule(c, seqs, steps, n, all_layers(c), LKV_DUE_DECODE);
    double dt = lkv_clock_seconds() - t0;
    c->stats.eviction_seconds += dt;
    c->stats.eviction_wait_seconds += dt;
    return st;
}

lkv_status lkv_background_evict(lkv_background *bg, lkv_cache *c, const int32_t *seqs,
                                const int32_t *steps, int32_t n)
{
    if (!bg || !lkv_schedule_due(c, seqs, steps, n, all_layers(c), LKV_DUE_DECODE))
        return run_inline(c, seqs, steps, n);
    if (!bg->started) {
        if (pthread_create(&bg->thread, NULL, worker, bg) != 0)
            return run_inline(c, seqs, steps, n);
        bg->started = 1;
    }
    pthread_mutex_lock(&bg->mu);
    memcpy(bg->seqs, seqs, sizeof(int32_t) * (size_t)n);
    memcpy(bg->steps, steps, sizeof(int32_t) * (size_t)n);
    bg->cache = c;
    bg->n = n;
    bg->step = n > 0 ? steps[0] : 0;
    bg->pending = 1;
    bg->done = 0;
    pthread_cond_broadcast(&bg->cv);
    pthread_mutex_unlock(&bg->mu);
    return LKV_OK;
}

lkv_status lkv_background_join(lkv_background *bg)
{
    if (!bg || !bg->pending)
        return LKV_OK;
    double t0 = lkv_clock_seconds();
    pthread_mutex_lock(&bg->mu);
    while (!bg->done)
        pthread_cond_wait(&bg->cv, &bg->mu);
    bg->pending = 0;
    lkv_status st = bg->status;
    pthread_mutex_unlock(&bg->mu);
    bg->cache->stats.eviction_wait_seconds += lkv_clock_seconds() - t0;
    if (st != LKV_OK)
        return lkv_fail(st, "the background eviction after step %d failed: %s", bg->step,
                        bg->error);
    return LKV_OK;
}
