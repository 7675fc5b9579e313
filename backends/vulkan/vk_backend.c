/* The Vulkan backend's ops table. All caches of a runtime share its device
 * (one command buffer, fence, arena and scratch), and the API lets distinct
 * caches be used from distinct threads, so every entry that touches the
 * device holds the device's lock. */
#include <pthread.h>

#include "vk_internal.h"

#define LKV_VK_LOCKED(d, call)                                                               \
    do {                                                                                     \
        pthread_mutex_lock(&(d)->lock);                                                      \
        lkv_status locked_st_ = (call);                                                      \
        pthread_mutex_unlock(&(d)->lock);                                                    \
        return locked_st_;                                                                   \
    } while (0)

static lkv_status vk_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    LKV_VK_LOCKED(d, lkv_vk_alloc(d, bytes, out_buf));
}

static void vk_free(lkv_device *d, lkv_buffer *b)
{
    pthread_mutex_lock(&d->lock);
    lkv_vk_free(d, b);
    pthread_mutex_unlock(&d->lock);
}

static lkv_status vk_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n)
{
    LKV_VK_LOCKED(d, lkv_vk_write(d, dst, off, src, n));
}

static lkv_status vk_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    LKV_VK_LOCKED(d, lkv_vk_read(d, src, off, dst, n));
}

static lkv_status vk_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                          size_t src_off, size_t n)
{
    LKV_VK_LOCKED(d, lkv_vk_copy(d, dst, dst_off, src, src_off, n));
}

static lkv_status vk_sync(lkv_device *d)
{
    LKV_VK_LOCKED(d, lkv_vk_sync(d));
}

static lkv_status vk_attend(lkv_device *d, const lkv_attend_args *a)
{
    LKV_VK_LOCKED(d, lkv_bind_attend(d, a));
}

static lkv_status vk_observe(lkv_device *d, const lkv_observe_args *a)
{
    LKV_VK_LOCKED(d, lkv_bind_observe(d, a));
}

static lkv_status vk_score(lkv_device *d, const lkv_score_args *a)
{
    LKV_VK_LOCKED(d, lkv_bind_score(d, a));
}

static lkv_status vk_select(lkv_device *d, const lkv_select_args *a)
{
    LKV_VK_LOCKED(d, lkv_bind_select(d, a));
}

static lkv_status vk_compact(lkv_device *d, const lkv_compact_args *a)
{
    LKV_VK_LOCKED(d, lkv_bind_compact(d, a));
}

static uint64_t vk_size(const lkv_buffer *b)
{
    return b->size;
}

const lkv_bind_driver lkv_vk_bind_driver = {
    .name = "vulkan",
    .pipe_ready = lkv_vk_pipe_ready,
    .dispatch = lkv_vk_dispatch,
    .list_room = lkv_vk_list_room,
    .list_put = lkv_vk_list_put,
    .reserve = lkv_vk_reserve,
    .size = vk_size,
};

const lkv_backend_ops lkv_backend_vulkan = {
    .name = "vulkan",
    .probe = lkv_vk_probe,
    .open = lkv_vk_open,
    .close = lkv_vk_close,
    .alloc = vk_alloc,
    .free = vk_free,
    .write = vk_write,
    .read = vk_read,
    .copy = vk_copy,
    .sync = vk_sync,
    .attend = vk_attend,
    .observe = vk_observe,
    .score = vk_score,
    .select = vk_select,
    .compact = vk_compact,
};
