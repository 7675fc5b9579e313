/* Recording and submission: a ring of command buffers, each submitted with
 * its own fence and never waited for at once. An ops-table entry records
 * into the current one (with a barrier after each command, so recorded work
 * runs in order) and the bind layer's end_entry submits it, unwaited; the
 * host waits only in read, sync, a write too large to record inline, and
 * when all LKV_VK_SLOTS command buffers are in flight (each such wait is
 * one sync in the counters). Row lists live in the slot's own host-visible
 * arena, rewound when the slot's fence is seen signalled, so a list is
 * never overwritten while a submission may still read it; buffers freed
 * while submissions may use them wait on the freed list likewise. */
#include <string.h>

#include "error.h"
#include "vk_internal.h"

#define LKV_VK_ARENA_MIN ((size_t)64 << 10)

static const VkPipelineStageFlags work_stages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

static void barrier(lkv_device *d, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = src_access,
                          .dstAccessMask = dst_access};
    d->vi.fn.vkCmdPipelineBarrier(d->cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

void lkv_vk_barrier(lkv_device *d)
{
    barrier(d, work_stages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, work_stages,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
}

/* Frees what was waiting for submissions now complete. */
static void collect(lkv_device *d)
{
    lkv_buffer **at = &d->freed;
    while (*at) {
        lkv_buffer *b = *at;
        if (b->free_after <= d->completed) {
            *at = b->next_freed;
            lkv_vk_destroy_buffer(d, b);
        } else {
            at = &b->next_freed;
        }
    }
}

static void reclaim(lkv_device *d, lkv_vk_slot *s)
{
    s->pending = 0;
    s->arena_used = 0;
    /* Fences signal in submission order on one queue. */
    if (s->serial > d->completed)
        d->completed = s->serial;
}

/* Whether slot s is free, polling its fence. */
static int slot_free(lkv_device *d, lkv_vk_slot *s)
{
    if (s->pending && d->vi.fn.vkGetFenceStatus(d->dev, s->fence) == VK_SUCCESS)
        reclaim(d, s);
    return !s->pending;
}

static lkv_status add_slot(lkv_device *d)
{
    lkv_vk_slot *s = &d->slots[d->n_slots];
    memset(s, 0, sizeof *s);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    lkv_status st = lkv_vk_check(d->vi.fn.vkAllocateCommandBuffers(d->dev, &ai, &s->cmd),
                                 "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (st == LKV_OK)
        st = lkv_vk_check(d->vi.fn.vkCreateFence(d->dev, &fci, NULL, &s->fence), "vkCreateFence");
    if (st == LKV_OK)
        st = lkv_vk_reserve_host(d, &s->arena, LKV_VK_ARENA_MIN);
    if (st == LKV_OK) {
        d->n_slots++;
        return LKV_OK;
    }
    /* Half-made: undo what was made (nothing of it was ever submitted). */
    lkv_vk_destroy_buffer(d, s->arena);
    if (s->fence)
        d->vi.fn.vkDestroyFence(d->dev, s->fence, NULL);
    if (s->cmd)
        d->vi.fn.vkFreeCommandBuffers(d->dev, d->pool, 1, &s->cmd);
    memset(s, 0, sizeof *s);
    return st;
}

/* The oldest pending slot (lowest serial). */
static int oldest(const lkv_device *d)
{
    int at = 0;
    for (int i = 1; i < d->n_slots; i++)
        if (d->slots[i].serial < d->slots[at].serial)
            at = i;
    return at;
}

/* A free slot: one seen complete, a new one while the ring can grow, or
 * the oldest after waiting for it (a sync: its resources are recycled). */
static lkv_status take_slot(lkv_device *d, int *out)
{
    for (int i = 0; i < d->n_slots; i++)
        if (slot_free(d, &d->slots[i])) {
            *out = i;
            return LKV_OK;
        }
    if (d->n_slots < LKV_VK_SLOTS) {
        lkv_status st = add_slot(d);
        *out = d->n_slots - 1;
        return st;
    }
    int i = oldest(d);
    d->bind.count.syncs++;
    lkv_status st = lkv_vk_check(d->vi.fn.vkWaitForFences(d->dev, 1, &d->slots[i].fence, VK_TRUE,
                                                          UINT64_MAX), "vkWaitForFences");
    if (st == LKV_OK)
        reclaim(d, &d->slots[i]);
    *out = i;
    return st;
}

lkv_status lkv_vk_begin(lkv_device *d)
{
    if (d->recording)
        return LKV_OK;
    int i = 0;
    lkv_status st = take_slot(d, &i);
    collect(d);
    if (st != LKV_OK)
        return st;
    lkv_vk_slot *s = &d->slots[i];
    d->vi.fn.vkResetCommandBuffer(s->cmd, 0);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    st = lkv_vk_check(d->vi.fn.vkBeginCommandBuffer(s->cmd, &bi), "vkBeginCommandBuffer");
    if (st != LKV_OK)
        return st;
    d->cur = i;
    d->cmd = s->cmd;
    d->recording = 1;
    /* Hand-off in: every earlier submission to the queue (ours, the
     * engine's) and its writes before this command buffer's work. */
    barrier(d, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT, work_stages,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
    return LKV_OK;
}

/* The slot's command buffer to the queue, after the waits asked for
 * (lkv_vk_add_wait), signalling the handle's timeline with the serial it
 * will have. */
static lkv_status queue_submit(lkv_device *d, lkv_vk_slot *s)
{
    VkPipelineStageFlags stages[LKV_VK_WAITS];
    for (int i = 0; i < d->n_waits; i++)
        stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    uint64_t serial = d->submitted + 1;
    VkTimelineSemaphoreSubmitInfo tl = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = (uint32_t)d->n_waits,
                                        .pWaitSemaphoreValues = d->wait_values,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &serial};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = d->timeline ? &tl : NULL,
                       .waitSemaphoreCount = (uint32_t)d->n_waits,
                       .pWaitSemaphores = d->waits,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &s->cmd,
                       .signalSemaphoreCount = d->timeline ? 1 : 0,
                       .pSignalSemaphores = &d->timeline};
    if (d->queue_mu)
        pthread_mutex_lock(d->queue_mu);
    VkResult r = d->vi.fn.vkQueueSubmit(d->queue, 1, &si, s->fence);
    if (d->queue_mu)
        pthread_mutex_unlock(d->queue_mu);
    if (r == VK_SUCCESS)
        d->n_waits = 0;
    return lkv_vk_check(r, "vkQueueSubmit");
}

lkv_status lkv_vk_submit(lkv_device *d)
{
    if (!d->recording)
        return LKV_OK;
    const lkv_vk_fns *fn = &d->vi.fn;
    lkv_vk_slot *s = &d->slots[d->cur];
    /* Hand-off out: this work's writes before every later submission (the
     * engine's reads of lazykv's outputs) and before host reads after the
     * fence. */
    barrier(d, work_stages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
    d->recording = 0;
    d->cur = -1;
    lkv_status st = lkv_vk_check(fn->vkEndCommandBuffer(s->cmd), "vkEndCommandBuffer");
    if (st == LKV_OK && s->fence_used)
        st = lkv_vk_check(fn->vkResetFences(d->dev, 1, &s->fence), "vkResetFences");
    if (st == LKV_OK)
        st = queue_submit(d, s);
    if (st != LKV_OK) {
        s->arena_used = 0;
        return st;
    }
    s->fence_used = 1;
    s->pending = 1;
    s->serial = ++d->submitted;
    return LKV_OK;
}

lkv_status lkv_vk_flush(lkv_device *d)
{
    lkv_status st = d->n_waits > 0 ? lkv_vk_begin(d) : LKV_OK;
    return st == LKV_OK ? lkv_vk_submit(d) : st;
}

lkv_status lkv_vk_add_wait(lkv_device *d, VkSemaphore timeline, uint64_t value)
{
    lkv_status st = lkv_vk_submit(d);
    for (int i = 0; st == LKV_OK && i < d->n_waits; i++)
        if (d->waits[i] == timeline) {
            if (value > d->wait_values[i])
                d->wait_values[i] = value;
            return LKV_OK;
        }
    /* Full: the waits so far go out now, in an empty submission. */
    if (st == LKV_OK && d->n_waits == LKV_VK_WAITS)
        st = lkv_vk_flush(d);
    if (st != LKV_OK)
        return st;
    d->waits[d->n_waits] = timeline;
    d->wait_values[d->n_waits++] = value;
    return LKV_OK;
}

void lkv_vk_discard(lkv_device *d)
{
    if (!d->recording)
        return;
    lkv_vk_slot *s = &d->slots[d->cur];
    d->vi.fn.vkEndCommandBuffer(s->cmd);
    d->vi.fn.vkResetCommandBuffer(s->cmd, 0);
    s->arena_used = 0;
    d->recording = 0;
    d->cur = -1;
}

void lkv_vk_end_entry(lkv_device *d, lkv_status *st)
{
    if (*st == LKV_OK)
        *st = lkv_vk_submit(d);
    else
        lkv_vk_discard(d);
}

int lkv_vk_idle(lkv_device *d)
{
    if (d->recording || d->n_waits > 0)
        return 0;
    for (int i = 0; i < d->n_slots; i++)
        if (!slot_free(d, &d->slots[i]))
            return 0;
    collect(d);
    return 1;
}

lkv_status lkv_vk_wait_idle(lkv_device *d, int count)
{
    lkv_status st = lkv_vk_flush(d); /* pending waits hold the host too */
    VkFence fences[LKV_VK_SLOTS];
    uint32_t n = 0;
    for (int i = 0; i < d->n_slots; i++)
        if (d->slots[i].pending)
            fences[n++] = d->slots[i].fence;
    if (count || n > 0)
        d->bind.count.syncs++;
    if (st == LKV_OK && n > 0)
        st = lkv_vk_check(d->vi.fn.vkWaitForFences(d->dev, n, fences, VK_TRUE, UINT64_MAX),
                          "vkWaitForFences");
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < d->n_slots; i++)
        if (d->slots[i].pending)
            reclaim(d, &d->slots[i]);
    collect(d);
    return LKV_OK;
}

void lkv_vk_free_later(lkv_device *d, lkv_buffer *b)
{
    if (lkv_vk_idle(d)) {
        lkv_vk_destroy_buffer(d, b);
        return;
    }
    /* Recorded work goes out in the next submission; pending work is done
     * once the last submission is. */
    b->free_after = d->submitted + (d->recording ? 1 : 0);
    b->next_freed = d->freed;
    d->freed = b;
}

void lkv_vk_ring_destroy(lkv_device *d)
{
    if (d->recording)
        lkv_vk_discard(d);
    lkv_vk_wait_idle(d, 0);
    d->completed = UINT64_MAX;
    collect(d);
    for (int i = 0; i < d->n_slots; i++) {
        lkv_vk_slot *s = &d->slots[i];
        lkv_vk_destroy_buffer(d, s->arena);
        d->vi.fn.vkDestroyFence(d->dev, s->fence, NULL);
        d->vi.fn.vkFreeCommandBuffers(d->dev, d->pool, 1, &s->cmd);
    }
    d->n_slots = 0;
}

lkv_status lkv_vk_list_room(lkv_device *d, size_t bytes)
{
    lkv_status st = lkv_vk_begin(d);
    if (st != LKV_OK)
        return st;
    lkv_vk_slot *s = &d->slots[d->cur];
    VkDeviceSize align = d->bind.lim.align;
    VkDeviceSize at = (s->arena_used + align - 1) / align * align;
    if (at + bytes <= s->arena->size)
        return LKV_OK;
    /* Full. Dispatches already recorded in this slot read its arena when
     * they run, so they go out first, and the lists continue in a fresh
     * slot, whose arena no pending work reads. */
    if (s->arena_used > 0) {
        st = lkv_vk_submit(d);
        if (st == LKV_OK)
            st = lkv_vk_begin(d);
        if (st != LKV_OK)
            return st;
        s = &d->slots[d->cur];
    }
    st = lkv_vk_reserve_host(d, &s->arena, bytes + align);
    s->arena_used = 0;
    return st;
}

lkv_status lkv_vk_list_put(lkv_device *d, const uint32_t *words, size_t bytes, lkv_bind_buf *out_bind)
{
    lkv_status st = lkv_vk_list_room(d, bytes);
    if (st != LKV_OK)
        return st;
    lkv_vk_slot *s = &d->slots[d->cur];
    VkDeviceSize align = d->bind.lim.align;
    VkDeviceSize at = (s->arena_used + align - 1) / align * align;
    memcpy(s->arena->map + at, words, bytes);
    s->arena_used = at + bytes;
    out_bind->buf = s->arena;
    out_bind->offset = at;
    out_bind->range = bytes ? bytes : 4;
    return LKV_OK;
}
