/* The ops-table entries shared by the CUDA and HIP backends. All caches of a
 * runtime share one device (its scratch and row-list space), and the API lets
 * distinct caches be used from distinct threads, so every entry holds the
 * device lock; the driver is entered (its context made current on this
 * thread) for the duration. */
#include <stdlib.h>

#include "gpu_internal.h"

#define LKV_GPU_ENTERED(d, call)                                                             \
    do {                                                                                     \
        pthread_mutex_lock(&(d)->lock);                                                      \
        lkv_status entered_st_ = (d)->drv->enter((d)->api);                                  \
        if (entered_st_ == LKV_OK) {                                                         \
            entered_st_ = (call);                                                            \
            (d)->drv->leave((d)->api);                                                       \
        }                                                                                    \
        pthread_mutex_unlock(&(d)->lock);                                                    \
        return entered_st_;                                                                  \
    } while (0)

lkv_status lkv_gpu_locked_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    LKV_GPU_ENTERED(d, lkv_gpu_alloc(d, bytes, out_buf));
}

void lkv_gpu_locked_free(lkv_device *d, lkv_buffer *b)
{
    pthread_mutex_lock(&d->lock);
    /* Without the context current the driver cannot free; the memory then
     * goes with the context when the device closes, and only the handle goes
     * now. */
    if (d->drv->enter(d->api) == LKV_OK) {
        lkv_gpu_free(d, b);
        d->drv->leave(d->api);
    } else {
        free(b);
    }
    pthread_mutex_unlock(&d->lock);
}

lkv_status lkv_gpu_locked_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                                size_t n)
{
    LKV_GPU_ENTERED(d, lkv_gpu_write(d, dst, off, src, n));
}

lkv_status lkv_gpu_locked_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst,
                               size_t n)
{
    LKV_GPU_ENTERED(d, lkv_gpu_read(d, src, off, dst, n));
}

lkv_status lkv_gpu_locked_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off,
                               const lkv_buffer *src, size_t src_off, size_t n)
{
    LKV_GPU_ENTERED(d, lkv_gpu_copy(d, dst, dst_off, src, src_off, n));
}

lkv_status lkv_gpu_locked_sync(lkv_device *d)
{
    LKV_GPU_ENTERED(d, lkv_gpu_sync(d));
}

lkv_status lkv_gpu_locked_attend(lkv_device *d, const lkv_attend_args *a)
{
    LKV_GPU_ENTERED(d, lkv_gpu_attend(d, a));
}

lkv_status lkv_gpu_locked_observe(lkv_device *d, const lkv_observe_args *a)
{
    LKV_GPU_ENTERED(d, lkv_gpu_observe(d, a));
}

lkv_status lkv_gpu_locked_score(lkv_device *d, const lkv_score_args *a)
{
    LKV_GPU_ENTERED(d, lkv_gpu_score(d, a));
}

lkv_status lkv_gpu_locked_select(lkv_device *d, const lkv_select_args *a)
{
    LKV_GPU_ENTERED(d, lkv_gpu_select(d, a));
}

lkv_status lkv_gpu_locked_compact(lkv_device *d, const lkv_compact_args *a)
{
    LKV_GPU_ENTERED(d, lkv_gpu_compact(d, a));
}
