/* Recording and submission. Ops record into one command buffer with a full
 * compute/transfer barrier after each command, so recorded work runs in
 * order; a read, a large write or sync submits it and waits. One submission per decode
 * step is the common case (append, attend, observe, read the output). */
#include <string.h>

#include "error.h"
#include "vk_internal.h"

lkv_status lkv_vk_begin(lkv_device *d)
{
    if (d->recording)
        return LKV_OK;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    lkv_status st = lkv_vk_check(d->vi.fn.vkBeginCommandBuffer(d->cmd, &bi), "vkBeginCommandBuffer");
    if (st == LKV_OK)
        d->recording = 1;
    return st;
}

void lkv_vk_barrier(lkv_device *d)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    d->vi.fn.vkCmdPipelineBarrier(d->cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

lkv_status lkv_vk_flush(lkv_device *d)
{
    if (!d->recording)
        return LKV_OK;
    const lkv_vk_fns *fn = &d->vi.fn;
    /* Device writes become visible to host reads of mapped memory. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    fn->vkCmdPipelineBarrier(d->cmd,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    d->recording = 0;
    lkv_status st = lkv_vk_check(fn->vkEndCommandBuffer(d->cmd), "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &d->cmd};
    if (st == LKV_OK)
        st = lkv_vk_check(fn->vkQueueSubmit(d->queue, 1, &si, d->fence), "vkQueueSubmit");
    if (st == LKV_OK) {
        st = lkv_vk_check(fn->vkWaitForFences(d->dev, 1, &d->fence, VK_TRUE, UINT64_MAX),
                          "vkWaitForFences");
        fn->vkResetFences(d->dev, 1, &d->fence);
    }
    fn->vkResetCommandBuffer(d->cmd, 0);
    return st;
}

lkv_status lkv_vk_list_room(lkv_device *d, size_t bytes)
{
    VkDeviceSize align = d->bind.lim.align;
    VkDeviceSize at = (d->arena_used + align - 1) / align * align;
    if (at + bytes <= d->arena->size)
        return LKV_OK;
    /* Full. Recorded dispatches read their lists from the arena when they
     * run, so it is rewound only after they have run, never by a flush
     * alone (a flush in the middle of an op would leave that op's recorded
     * dispatches pointing at lists the next ones overwrite). */
    lkv_status st = lkv_vk_flush(d);
    if (st == LKV_OK)
        st = lkv_vk_reserve(d, &d->arena, bytes);
    if (st == LKV_OK)
        d->arena_used = 0;
    return st;
}

lkv_status lkv_vk_list_put(lkv_device *d, const uint32_t *words, size_t bytes, lkv_bind_buf *out_bind)
{
    lkv_status st = lkv_vk_list_room(d, bytes);
    if (st != LKV_OK)
        return st;
    VkDeviceSize align = d->bind.lim.align;
    VkDeviceSize at = (d->arena_used + align - 1) / align * align;
    memcpy(d->arena->map + at, words, bytes);
    d->arena_used = at + bytes;
    out_bind->buf = d->arena;
    out_bind->offset = at;
    out_bind->range = bytes ? bytes : 4;
    return LKV_OK;
}
