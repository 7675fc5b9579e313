/* The ops-table entries shared by the Vulkan and OpenCL backends. All
 * caches of a runtime share one device (its queue, row-list arena and
 * scratch), and the API lets distinct caches be used from distinct
 * threads, so every entry holds the device lock. */
#include <pthread.h>

#include "bind_internal.h"

#define LKV_BIND_LOCKED(d, call)                                                             \
    do {                                                                                     \
        pthread_mutex_lock(&lkv_bind_of(d)->lock);                                           \
        lkv_status locked_st_ = (call);                                                      \
        pthread_mutex_unlock(&lkv_bind_of(d)->lock);                                         \
        return locked_st_;                                                                   \
    } while (0)

lkv_status lkv_bind_locked_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    LKV_BIND_LOCKED(d, lkv_bind_of(d)->drv->alloc(d, bytes, out_buf));
}

void lkv_bind_locked_free(lkv_device *d, lkv_buffer *b)
{
    pthread_mutex_lock(&lkv_bind_of(d)->lock);
    lkv_bind_of(d)->drv->free(d, b);
    pthread_mutex_unlock(&lkv_bind_of(d)->lock);
}

lkv_status lkv_bind_locked_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                                 size_t n)
{
    LKV_BIND_LOCKED(d, lkv_bind_of(d)->drv->write(d, dst, off, src, n));
}

lkv_status lkv_bind_locked_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst,
                                size_t n)
{
    LKV_BIND_LOCKED(d, lkv_bind_of(d)->drv->read(d, src, off, dst, n));
}

lkv_status lkv_bind_locked_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off,
                                const lkv_buffer *src, size_t src_off, size_t n)
{
    LKV_BIND_LOCKED(d, lkv_bind_of(d)->drv->copy(d, dst, dst_off, src, src_off, n));
}

lkv_status lkv_bind_locked_sync(lkv_device *d)
{
    LKV_BIND_LOCKED(d, lkv_bind_of(d)->drv->sync(d));
}

lkv_status lkv_bind_locked_attend(lkv_device *d, const lkv_attend_args *a)
{
    LKV_BIND_LOCKED(d, lkv_bind_attend(d, a));
}

lkv_status lkv_bind_locked_observe(lkv_device *d, const lkv_observe_args *a)
{
    LKV_BIND_LOCKED(d, lkv_bind_observe(d, a));
}

lkv_status lkv_bind_locked_score(lkv_device *d, const lkv_score_args *a)
{
    LKV_BIND_LOCKED(d, lkv_bind_score(d, a));
}

lkv_status lkv_bind_locked_select(lkv_device *d, const lkv_select_args *a)
{
    LKV_BIND_LOCKED(d, lkv_bind_select(d, a));
}

lkv_status lkv_bind_locked_compact(lkv_device *d, const lkv_compact_args *a)
{
    LKV_BIND_LOCKED(d, lkv_bind_compact(d, a));
}
