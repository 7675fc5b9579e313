/* The locked entries of host_locked.h: lock, enter, the unlocked entry,
 * leave, unlock. */
#include "host_locked.h"

static lkv_host_lock *lock_of(lkv_device *d)
{
    return (lkv_host_lock *)(void *)d;
}

static const lkv_backend_ops *ops_of(lkv_device *d)
{
    return lock_of(d)->inner->ops;
}

int lkv_host_lock_init(lkv_host_lock *l, const lkv_host_inner *inner)
{
    l->inner = inner;
    l->ready = pthread_mutex_init(&l->mutex, NULL) == 0;
    return l->ready;
}

void lkv_host_lock_destroy(lkv_host_lock *l)
{
    if (l->ready)
        pthread_mutex_destroy(&l->mutex);
    l->ready = 0;
}

static lkv_status enter(lkv_device *d)
{
    const lkv_host_inner *in = lock_of(d)->inner;
    return in->enter ? in->enter(d) : LKV_OK;
}

static void leave(lkv_device *d)
{
    const lkv_host_inner *in = lock_of(d)->inner;
    if (in->leave)
        in->leave(d);
}

/* Takes the lock and enters the device; on failure the lock is released
 * again and the entry returns the status without running. */
static lkv_status begin(lkv_device *d)
{
    pthread_mutex_lock(&lock_of(d)->mutex);
    lkv_status st = enter(d);
    if (st != LKV_OK)
        pthread_mutex_unlock(&lock_of(d)->mutex);
    return st;
}

/* Leaves and unlocks after the entry ran, passing its status on. */
static lkv_status end(lkv_device *d, lkv_status st)
{
    leave(d);
    pthread_mutex_unlock(&lock_of(d)->mutex);
    return st;
}

lkv_status lkv_host_locked_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->alloc(d, bytes, out_buf));
}

void lkv_host_locked_free(lkv_device *d, lkv_buffer *b)
{
    pthread_mutex_lock(&lock_of(d)->mutex);
    if (enter(d) == LKV_OK) {
        ops_of(d)->free(d, b);
        leave(d);
    } else {
        lock_of(d)->inner->drop(d, b);
    }
    pthread_mutex_unlock(&lock_of(d)->mutex);
}

lkv_status lkv_host_locked_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                                 size_t n)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->write(d, dst, off, src, n));
}

lkv_status lkv_host_locked_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst,
                                size_t n)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->read(d, src, off, dst, n));
}

lkv_status lkv_host_locked_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off,
                                const lkv_buffer *src, size_t src_off, size_t n)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->copy(d, dst, dst_off, src, src_off, n));
}

lkv_status lkv_host_locked_sync(lkv_device *d)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->sync(d));
}

lkv_status lkv_host_locked_attend(lkv_device *d, const lkv_attend_args *a)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->attend(d, a));
}

lkv_status lkv_host_locked_observe(lkv_device *d, const lkv_observe_args *a)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->observe(d, a));
}

lkv_status lkv_host_locked_score(lkv_device *d, const lkv_score_args *a)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->score(d, a));
}

lkv_status lkv_host_locked_select(lkv_device *d, const lkv_select_args *a)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->select(d, a));
}

lkv_status lkv_host_locked_compact(lkv_device *d, const lkv_compact_args *a)
{
    lkv_status st = begin(d);
    return st != LKV_OK ? st : end(d, ops_of(d)->compact(d, a));
}
