/* What the locked ops-table entries (backends/host/host_locked.c) run for
 * the CUDA and HIP backends: the shared host code's own entries, with the
 * driver entered (its context made current on the calling thread) for the
 * duration. */
#include <stdint.h>
#include <stdlib.h>

#include "gpu_internal.h"

static lkv_status gpu_enter(lkv_device *d)
{
    return d->drv->enter(d->api);
}

static void gpu_leave(lkv_device *d)
{
    d->drv->leave(d->api);
}

/* Without the context current the driver cannot free; the memory then goes
 * with the context when the device closes, and only the handle goes now. */
static void gpu_drop(lkv_device *d, lkv_buffer *b)
{
    (void)d;
    free(b);
}

static const lkv_backend_ops gpu_unlocked = {
    .alloc = lkv_gpu_alloc,
    .free = lkv_gpu_free,
    .write = lkv_gpu_write,
    .read = lkv_gpu_read,
    .copy = lkv_gpu_copy,
    .sync = lkv_gpu_sync,
    .attend = lkv_gpu_attend,
    .observe = lkv_gpu_observe,
    .score = lkv_gpu_score,
    .select = lkv_gpu_select,
    .compact = lkv_gpu_compact,
    .store = lkv_gpu_store,
};

const lkv_host_inner lkv_gpu_inner = {
    .ops = &gpu_unlocked, .enter = gpu_enter, .leave = gpu_leave, .drop = gpu_drop};

/* ---- store, wrap, counters, lanes: the entries backends/host/host_locked.c
 * does not lock (yet), locked the same way ---- */

static lkv_host_lock *lock_of(const lkv_device *d)
{
    return (lkv_host_lock *)(void *)(uintptr_t)d;
}

/* An entry with the lock held and the driver entered around it. */
#define LKV_GPU_LOCKED(op, args_type)                                                         \
    lkv_status lkv_gpu_locked_##op(lkv_device *d, const args_type *a)                       \
    {                                                                                       \
        pthread_mutex_lock(&lock_of(d)->mutex);                                             \
        lkv_status st = d->drv->enter(d->api);                                              \
        if (st == LKV_OK) {                                                                 \
            st = lkv_gpu_##op(d, a);                                                        \
            d->drv->leave(d->api);                                                          \
        }                                                                                   \
        pthread_mutex_unlock(&lock_of(d)->mutex);                                           \
        return st;                                                                          \
    }
LKV_GPU_LOCKED(store, lkv_store_args)
LKV_GPU_LOCKED(gather, lkv_gather_args)
LKV_GPU_LOCKED(reduce_rows, lkv_reduce_rows_args)
LKV_GPU_LOCKED(move_kept, lkv_move_kept_args)
LKV_GPU_LOCKED(qk_probs, lkv_qk_probs_args)
LKV_GPU_LOCKED(redundancy, lkv_redundancy_args)
LKV_GPU_LOCKED(wait_mark, lkv_mark)
#undef LKV_GPU_LOCKED

/* The same for an entry that hands back a new object. lane_open holds only
 * `d`'s lock: the new lane is no one else's yet. */
#define LKV_GPU_LOCKED_OUT(op, out_type)                                                      \
    lkv_status lkv_gpu_locked_##op(lkv_device *d, out_type **out)                          \
    {                                                                                       \
        pthread_mutex_lock(&lock_of(d)->mutex);                                             \
        lkv_status st = d->drv->enter(d->api);                                              \
        if (st == LKV_OK) {                                                                 \
            st = lkv_gpu_##op(d, out);                                                      \
            d->drv->leave(d->api);                                                          \
        }                                                                                   \
        pthread_mutex_unlock(&lock_of(d)->mutex);                                           \
        return st;                                                                          \
    }
LKV_GPU_LOCKED_OUT(lane_open, lkv_device)
LKV_GPU_LOCKED_OUT(mark, lkv_mark)
#undef LKV_GPU_LOCKED_OUT

/* Without the device entered the event goes with the context when the
 * device closes, as a buffer does (gpu_drop); the mark goes now. */
void lkv_gpu_locked_mark_free(lkv_device *d, lkv_mark *m)
{
    pthread_mutex_lock(&lock_of(d)->mutex);
    if (d->drv->enter(d->api) == LKV_OK) {
        lkv_gpu_mark_free(d, m);
        d->drv->leave(d->api);
    } else {
        free(m);
    }
    pthread_mutex_unlock(&lock_of(d)->mutex);
}

/* Locked for a driver that is told of borrowed memory; the view itself is
 * host memory only, so the device need not be entered. */
lkv_status lkv_gpu_locked_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                               lkv_buffer **out_buf)
{
    pthread_mutex_lock(&lock_of(d)->mutex);
    lkv_status st = lkv_gpu_wrap(d, handle, offset, bytes, out_buf);
    pthread_mutex_unlock(&lock_of(d)->mutex);
    return st;
}

/* Under the lock: the entries count while they run. */
void lkv_gpu_locked_counters(const lkv_device *d, lkv_counters *out)
{
    pthread_mutex_lock(&lock_of(d)->mutex);
    *out = d->counters;
    pthread_mutex_unlock(&lock_of(d)->mutex);
}
