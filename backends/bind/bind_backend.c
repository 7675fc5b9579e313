/* What the locked ops-table entries (backends/host/host_locked.c) run for
 * the Vulkan and OpenCL backends: the device's own driver for buffers, the
 * shared plans for the ops. Every entry ends with the driver's end_entry,
 * so what it recorded is on the queue (unwaited) when it returns: an
 * engine that shares the queue (open_external) orders its later work after
 * it, and a failed entry leaves nothing behind to run later. */
#include "bind_internal.h"

static lkv_status ended(lkv_device *d, lkv_status st)
{
    const lkv_bind_driver *drv = lkv_bind_of(d)->drv;
    if (drv->end_entry)
        drv->end_entry(d, &st);
    return st;
}

static lkv_status bind_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    return ended(d, lkv_bind_of(d)->drv->alloc(d, bytes, out_buf));
}

static void bind_free(lkv_device *d, lkv_buffer *b)
{
    lkv_bind_of(d)->drv->free(d, b);
}

static lkv_status bind_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                             size_t n)
{
    return ended(d, lkv_bind_of(d)->drv->write(d, dst, off, src, n));
}

static lkv_status bind_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    return ended(d, lkv_bind_of(d)->drv->read(d, src, off, dst, n));
}

static lkv_status bind_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                            size_t src_off, size_t n)
{
    return ended(d, lkv_bind_of(d)->drv->copy(d, dst, dst_off, src, src_off, n));
}

static lkv_status bind_sync(lkv_device *d)
{
    return ended(d, lkv_bind_of(d)->drv->sync(d));
}

static lkv_status bind_attend(lkv_device *d, const lkv_attend_args *a)
{
    return ended(d, lkv_bind_attend(d, a));
}

static lkv_status bind_observe(lkv_device *d, const lkv_observe_args *a)
{
    return ended(d, lkv_bind_observe(d, a));
}

static lkv_status bind_score(lkv_device *d, const lkv_score_args *a)
{
    return ended(d, lkv_bind_score(d, a));
}

static lkv_status bind_select(lkv_device *d, const lkv_select_args *a)
{
    return ended(d, lkv_bind_select(d, a));
}

static lkv_status bind_compact(lkv_device *d, const lkv_compact_args *a)
{
    return ended(d, lkv_bind_compact(d, a));
}

static const lkv_backend_ops bind_unlocked = {
    .alloc = bind_alloc,
    .free = bind_free,
    .write = bind_write,
    .read = bind_read,
    .copy = bind_copy,
    .sync = bind_sync,
    .attend = bind_attend,
    .observe = bind_observe,
    .score = bind_score,
    .select = bind_select,
    .compact = bind_compact,
};

const lkv_host_inner lkv_bind_inner = {.ops = &bind_unlocked};

/* The lock of host/host_locked.h (the device's first member): nothing to
 * enter on either API, so the mutex is all. */
static pthread_mutex_t *mutex_of(const lkv_device *d)
{
    return &((lkv_bind_device *)(void *)(uintptr_t)d)->lock.mutex;
}

/* An entry with the lock held, ended as the ops-table entries are. */
#define LKV_BIND_LOCKED(op, args_type)                                                        \
    lkv_status lkv_bind_locked_##op(lkv_device *d, const args_type *a)                      \
    {                                                                                       \
        pthread_mutex_lock(mutex_of(d));                                                    \
        lkv_status st = ended(d, lkv_bind_##op(d, a));                                      \
        pthread_mutex_unlock(mutex_of(d));                                                  \
        return st;                                                                          \
    }
LKV_BIND_LOCKED(store, lkv_store_args)
LKV_BIND_LOCKED(gather, lkv_gather_args)
LKV_BIND_LOCKED(reduce_rows, lkv_reduce_rows_args)
LKV_BIND_LOCKED(move_kept, lkv_move_kept_args)
LKV_BIND_LOCKED(qk_probs, lkv_qk_probs_args)
LKV_BIND_LOCKED(redundancy, lkv_redundancy_args)
#undef LKV_BIND_LOCKED

lkv_status lkv_bind_locked_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                                lkv_buffer **out_buf)
{
    pthread_mutex_lock(mutex_of(d));
    lkv_status st = lkv_bind_wrap_check(d, handle, offset, bytes);
    if (st == LKV_OK)
        st = lkv_bind_of(d)->drv->wrap(d, handle, offset, bytes, out_buf);
    pthread_mutex_unlock(mutex_of(d));
    return st;
}

/* A driver entry with the handle's lock held. */
#define LKV_BIND_LOCKED_DRIVER(entry, type)                                                   \
    lkv_status lkv_bind_locked_##entry(lkv_device *d, type arg)                               \
    {                                                                                       \
        pthread_mutex_lock(mutex_of(d));                                                    \
        lkv_status st = lkv_bind_of(d)->drv->entry(d, arg);                                 \
        pthread_mutex_unlock(mutex_of(d));                                                  \
        return st;                                                                          \
    }
LKV_BIND_LOCKED_DRIVER(lane_open, lkv_device **)
LKV_BIND_LOCKED_DRIVER(mark, lkv_mark **)
LKV_BIND_LOCKED_DRIVER(wait_mark, const lkv_mark *)
#undef LKV_BIND_LOCKED_DRIVER

void lkv_bind_locked_counters(const lkv_device *d, lkv_counters *out)
{
    pthread_mutex_lock(mutex_of(d));
    *out = ((const lkv_bind_device *)(const void *)d)->count;
    pthread_mutex_unlock(mutex_of(d));
}
