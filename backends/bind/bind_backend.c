/* What the locked ops-table entries (backends/host/host_locked.c) run for
 * the Vulkan and OpenCL backends: the device's own driver for buffers, the
 * shared plans for the five ops. Nothing to enter: the lock is all. */
#include "bind_internal.h"

static lkv_status bind_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    return lkv_bind_of(d)->drv->alloc(d, bytes, out_buf);
}

static void bind_free(lkv_device *d, lkv_buffer *b)
{
    lkv_bind_of(d)->drv->free(d, b);
}

static lkv_status bind_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                             size_t n)
{
    return lkv_bind_of(d)->drv->write(d, dst, off, src, n);
}

static lkv_status bind_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    return lkv_bind_of(d)->drv->read(d, src, off, dst, n);
}

static lkv_status bind_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                            size_t src_off, size_t n)
{
    return lkv_bind_of(d)->drv->copy(d, dst, dst_off, src, src_off, n);
}

static lkv_status bind_sync(lkv_device *d)
{
    return lkv_bind_of(d)->drv->sync(d);
}

static const lkv_backend_ops bind_unlocked = {
    .alloc = bind_alloc,
    .free = bind_free,
    .write = bind_write,
    .read = bind_read,
    .copy = bind_copy,
    .sync = bind_sync,
    .attend = lkv_bind_attend,
    .observe = lkv_bind_observe,
    .score = lkv_bind_score,
    .select = lkv_bind_select,
    .compact = lkv_bind_compact,
};

const lkv_host_inner lkv_bind_inner = {.ops = &bind_unlocked};
