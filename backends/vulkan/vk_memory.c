/* Buffers: the first device-local memory type, mapped persistently when it
 * is also host-visible (lavapipe, integrated GPUs); otherwise host transfers
 * bounce through a staging buffer in host-cached memory where there is some
 * (reads from write-combined memory crawl). Or a view of the engine's
 * VkBuffer (wrap): never mapped, its offset added to every use.
 * Reads are synchronous: the work submitted before is waited for first.
 * Writes are ordered with that work too: small ones are recorded inline
 * (no wait), others wait for it before they land, so a write never races
 * an op that reads the old contents. Freeing a buffer never waits: one that
 * submitted work may still use is destroyed once that work is done. */
#include <string.h>
#include <stdlib.h>

#include "error.h"
#include "vk_internal.h"

#define LKV_VK_STAGING_BYTES ((size_t)8 << 20)

static const VkMemoryPropertyFlags host_flags =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

/* The first allowed memory type with all of `want`; UINT32_MAX if none. */
static uint32_t find_type(const lkv_device *d, uint32_t allowed, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < d->mem_props.memoryTypeCount; i++)
        if ((allowed & (1u << i)) && (d->mem_props.memoryTypes[i].propertyFlags & want) == want)
            return i;
    return UINT32_MAX;
}

static lkv_status alloc_kind(lkv_device *d, size_t bytes, int host, lkv_buffer **out_buf)
{
    const lkv_vk_fns *fn = &d->vi.fn;
    if (d->max_alloc && (VkDeviceSize)bytes > d->max_alloc)
        return lkv_fail(LKV_OUT_OF_MEMORY, "vulkan: a %zu-byte buffer exceeds %s's largest "
                        "allocation (%llu bytes)", bytes, d->props.deviceName,
                        (unsigned long long)d->max_alloc);
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "vulkan: out of host memory for a buffer handle");
    /* Fill and binding ranges work in 4-byte words. */
    b->size = ((VkDeviceSize)bytes + 3) & ~(VkDeviceSize)3;
    if (b->size == 0)
        b->size = 4;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = b->size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    lkv_status st = lkv_vk_check(fn->vkCreateBuffer(d->dev, &bci, NULL, &b->buf), "vkCreateBuffer");
    if (st != LKV_OK) {
        free(b);
        return lkv_fail_context(st, "allocating %zu bytes", bytes);
    }
    VkMemoryRequirements req;
    fn->vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
    uint32_t type = host ? find_type(d, req.memoryTypeBits, host_flags | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                         : find_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type == UINT32_MAX && host)
        type = find_type(d, req.memoryTypeBits, host_flags);
    if (type == UINT32_MAX)
        type = find_type(d, req.memoryTypeBits, host ? host_flags : 0);
    if (type == UINT32_MAX) {
        fn->vkDestroyBuffer(d->dev, b->buf, NULL);
        free(b);
        return lkv_fail(LKV_DEVICE_ERROR, "vulkan: no memory type for a %zu-byte buffer", bytes);
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    st = lkv_vk_check(fn->vkAllocateMemory(d->dev, &mai, NULL, &b->mem), "vkAllocateMemory");
    if (st == LKV_OK)
        st = lkv_vk_check(fn->vkBindBufferMemory(d->dev, b->buf, b->mem, 0), "vkBindBufferMemory");
    if (st == LKV_OK && (d->mem_props.memoryTypes[type].propertyFlags & host_flags) == host_flags) {
        void *map = NULL;
        st = lkv_vk_check(fn->vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &map), "vkMapMemory");
        b->map = map;
    }
    if (st != LKV_OK) {
        lkv_vk_destroy_buffer(d, b);
        return lkv_fail_context(st, "allocating %zu bytes", bytes);
    }
    *out_buf = b;
    return LKV_OK;
}

lkv_status lkv_vk_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    lkv_buffer *b = NULL;
    lkv_status st = alloc_kind(d, bytes, 0, &b);
    if (st != LKV_OK)
        return st;
    if (b->map) {
        memset(b->map, 0, b->size);
    } else {
        st = lkv_vk_begin(d);
        if (st != LKV_OK) {
            lkv_vk_destroy_buffer(d, b);
            return st;
        }
        d->vi.fn.vkCmdFillBuffer(d->cmd, b->buf, 0, b->size, 0);
        lkv_vk_barrier(d);
    }
    *out_buf = b;
    return LKV_OK;
}

void lkv_vk_destroy_buffer(lkv_device *d, lkv_buffer *b)
{
    if (!b)
        return;
    if (b->map)
        d->vi.fn.vkUnmapMemory(d->dev, b->mem);
    if (b->buf && !b->view)
        d->vi.fn.vkDestroyBuffer(d->dev, b->buf, NULL);
    if (b->mem)
        d->vi.fn.vkFreeMemory(d->dev, b->mem, NULL);
    free(b);
}

void lkv_vk_free(lkv_device *d, lkv_buffer *b)
{
    if (!b)
        return;
    if (b->view) /* the engine's buffer: only the view goes */
        free(b);
    else
        lkv_vk_free_later(d, b);
}

static lkv_status reserve_kind(lkv_device *d, lkv_buffer **buf, size_t bytes, int host)
{
    if (*buf && (*buf)->size >= bytes)
        return LKV_OK;
    size_t want = bytes + bytes / 4; /* grow with headroom: caches grow step by step */
    lkv_buffer *fresh = NULL;
    lkv_status st = alloc_kind(d, want, host, &fresh);
    if (st != LKV_OK)
        return st;
    lkv_vk_free(d, *buf);
    *buf = fresh;
    return LKV_OK;
}

lkv_status lkv_vk_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes)
{
    return reserve_kind(d, buf, bytes, 0);
}

lkv_status lkv_vk_reserve_host(lkv_device *d, lkv_buffer **buf, size_t bytes)
{
    return reserve_kind(d, buf, bytes, 1);
}

lkv_status lkv_vk_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf)
{
    /* Vulkan cannot tell a VkBuffer's size or device from its handle: the
     * engine's word (a storage buffer of this device, `bytes` long from
     * `offset`) is taken, and only the alignment is checked (bind). */
    (void)d;
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "vulkan: out of host memory for a buffer view");
    b->buf = (VkBuffer)(uintptr_t)handle;
    b->base = offset;
    b->size = bytes;
    b->view = 1;
    *out_buf = b;
    return LKV_OK;
}

static lkv_status check_range(const lkv_buffer *b, size_t off, size_t bytes, const char *what)
{
    if (off > b->size || bytes > b->size - off)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan %s of %zu bytes at offset %zu overruns a "
                        "%llu-byte buffer", what, bytes, off, (unsigned long long)b->size);
    return LKV_OK;
}

/* One staged chunk: host -> staging -> dst, or src -> staging -> host. */
static lkv_status staged(lkv_device *d, const lkv_buffer *dev_buf, size_t off, size_t bytes,
                         int to_device)
{
    lkv_status st = lkv_vk_begin(d);
    if (st != LKV_OK)
        return st;
    VkBufferCopy region = {.srcOffset = to_device ? 0 : dev_buf->base + off,
                           .dstOffset = to_device ? dev_buf->base + off : 0,
                           .size = bytes};
    if (to_device)
        d->vi.fn.vkCmdCopyBuffer(d->cmd, d->staging->buf, dev_buf->buf, 1, &region);
    else
        d->vi.fn.vkCmdCopyBuffer(d->cmd, dev_buf->buf, d->staging->buf, 1, &region);
    lkv_vk_barrier(d);
    /* The staging buffer is reused by the next chunk: a host wait each. */
    return lkv_vk_wait_idle(d, 1);
}

/* vkCmdUpdateBuffer's limits: 4-byte aligned, at most 64 KiB. */
#define LKV_VK_INLINE_WRITE_MAX 65536

/* A small write goes into the command stream (the data is copied at record
 * time), in order with the work around it and without a host wait: a
 * decode step's inputs (a few KiB) cost no sync, on a GPU whose memory the
 * host cannot map as on one it can. Only a mapped buffer with nothing in
 * flight takes a plain memcpy instead. */
static int inline_write(lkv_device *d, const lkv_buffer *dst, size_t off, size_t bytes)
{
    return bytes <= LKV_VK_INLINE_WRITE_MAX && off % 4 == 0 && bytes % 4 == 0 &&
           !(dst->map && lkv_vk_idle(d));
}

lkv_status lkv_vk_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t bytes)
{
    lkv_status st = check_range(dst, off, bytes, "write");
    if (st != LKV_OK || bytes == 0)
        return st;
    d->bind.count.h2d_copies++;
    d->bind.count.h2d_bytes += (int64_t)bytes;
    if (inline_write(d, dst, off, bytes)) {
        st = lkv_vk_begin(d);
        if (st != LKV_OK)
            return st;
        d->vi.fn.vkCmdUpdateBuffer(d->cmd, dst->buf, dst->base + off, bytes, src);
        lkv_vk_barrier(d);
        return LKV_OK;
    }
    /* Anything else lands now, so work submitted before it must run first
     * (a sync when there is any). */
    st = lkv_vk_wait_idle(d, 0);
    if (st != LKV_OK)
        return st;
    if (dst->map) {
        memcpy(dst->map + off, src, bytes);
        return LKV_OK;
    }
    st = lkv_vk_reserve_host(d, &d->staging, LKV_VK_STAGING_BYTES);
    for (size_t done = 0; st == LKV_OK && done < bytes; done += LKV_VK_STAGING_BYTES) {
        size_t n = bytes - done < LKV_VK_STAGING_BYTES ? bytes - done : LKV_VK_STAGING_BYTES;
        memcpy(d->staging->map, (const unsigned char *)src + done, n);
        st = staged(d, dst, off + done, n, 1);
    }
    return st;
}

lkv_status lkv_vk_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t bytes)
{
    lkv_status st = check_range(src, off, bytes, "read");
    if (st != LKV_OK || bytes == 0)
        return st;
    d->bind.count.d2h_copies++;
    d->bind.count.d2h_bytes += (int64_t)bytes;
    if (src->map) {
        st = lkv_vk_wait_idle(d, 1); /* a blocking read: one sync */
        if (st != LKV_OK)
            return st;
        memcpy(dst, src->map + off, bytes);
        return LKV_OK;
    }
    st = lkv_vk_reserve_host(d, &d->staging, LKV_VK_STAGING_BYTES);
    for (size_t done = 0; st == LKV_OK && done < bytes; done += LKV_VK_STAGING_BYTES) {
        size_t n = bytes - done < LKV_VK_STAGING_BYTES ? bytes - done : LKV_VK_STAGING_BYTES;
        st = staged(d, src, off + done, n, 0);
        if (st == LKV_OK)
            memcpy((unsigned char *)dst + done, d->staging->map, n);
    }
    return st;
}

lkv_status lkv_vk_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t bytes)
{
    lkv_status st = check_range(dst, dst_off, bytes, "copy destination");
    if (st == LKV_OK)
        st = check_range(src, src_off, bytes, "copy source");
    if (st != LKV_OK || bytes == 0)
        return st;
    VkDeviceSize from = src->base + src_off, to = dst->base + dst_off;
    if (dst->buf == src->buf && to < from + bytes && from < to + bytes)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan copy: overlapping ranges in one buffer");
    st = lkv_vk_begin(d);
    if (st != LKV_OK)
        return st;
    VkBufferCopy region = {.srcOffset = from, .dstOffset = to, .size = bytes};
    d->vi.fn.vkCmdCopyBuffer(d->cmd, src->buf, dst->buf, 1, &region);
    lkv_vk_barrier(d);
    return LKV_OK;
}

lkv_status lkv_vk_sync(lkv_device *d)
{
    return lkv_vk_wait_idle(d, 1);
}
