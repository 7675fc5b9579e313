/* Lanes (core/backend.h): a second handle on the same VkDevice, with its
 * own command pool, ring, pipelines, scratch and lock, submitting to the
 * family's second queue where there is one and to the parent's queue
 * otherwise (both then take the parent's queue lock around vkQueueSubmit).
 * Each handle signals its own timeline semaphore with the serial of every
 * submission, so a mark is (semaphore, serial) and waiting on it is a
 * semaphore wait the handle's next submission carries: the device orders
 * the two queues, the host never waits. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vk_internal.h"

/* The parent's lock (host/host_locked.h's mutex), for its spare timelines:
 * a lane's close holds no other. */
static pthread_mutex_t *mutex_of(lkv_device *d)
{
    return &d->bind.lock.mutex;
}

int lkv_vk_has_timeline(lkv_device *d)
{
    if (!d->vi.fn.vkGetPhysicalDeviceFeatures2 || VK_API_VERSION_MINOR(d->props.apiVersion) < 2)
        return 0;
    VkPhysicalDeviceTimelineSemaphoreFeatures tl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &tl};
    d->vi.fn.vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    return tl.timelineSemaphore == VK_TRUE;
}

lkv_status lkv_vk_timeline_create(lkv_device *d)
{
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                      .initialValue = 0};
    VkSemaphoreCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    return lkv_vk_check(d->vi.fn.vkCreateSemaphore(d->dev, &ci, NULL, &d->timeline),
                        "vkCreateSemaphore (timeline)");
}

/* What a lane shares with its parent: the instance, the devices, the
 * limits; everything it records and owns starts empty. */
static void lane_from(lkv_device *l, lkv_device *d)
{
    l->vi = d->vi;
    l->phys = d->phys;
    l->props = d->props;
    l->mem_props = d->mem_props;
    l->dev = d->dev;
    l->fns_loaded = 1;
    l->family = d->family;
    l->queues = d->queues;
    l->max_alloc = d->max_alloc;
    l->bind.drv = d->bind.drv;
    l->bind.lim = d->bind.lim;
    l->lane_of = d;
    l->cur = -1;
    uint32_t index = d->queues > 1 ? 1 : 0;
    l->queue_mu = &d->queue_locks[index];
    d->vi.fn.vkGetDeviceQueue(d->dev, d->family, index, &l->queue);
}

/* A closed lane's timeline, going on from its last value (the parent's
 * lock is held). */
static int reuse_timeline(lkv_device *d, lkv_device *l)
{
    if (d->n_spare == 0)
        return 0;
    d->n_spare--;
    l->timeline = d->spare[d->n_spare];
    l->submitted = l->completed = d->spare_value[d->n_spare];
    return 1;
}

void lkv_vk_lane_retire(lkv_device *l)
{
    lkv_device *d = l->lane_of;
    if (!l->timeline)
        return;
    pthread_mutex_lock(mutex_of(d));
    if (d->n_spare == d->spare_cap) {
        int cap = d->spare_cap ? 2 * d->spare_cap : 4;
        VkSemaphore *sem = realloc(d->spare, sizeof *sem * (size_t)cap);
        if (sem)
            d->spare = sem;
        uint64_t *val = sem ? realloc(d->spare_value, sizeof *val * (size_t)cap) : NULL;
        if (val) {
            d->spare_value = val;
            d->spare_cap = cap;
        }
    }
    /* Out of host memory: the semaphore goes with the device (leaked until then). */
    if (d->n_spare < d->spare_cap) {
        d->spare[d->n_spare] = l->timeline;
        d->spare_value[d->n_spare++] = l->submitted;
    }
    pthread_mutex_unlock(mutex_of(d));
    l->timeline = VK_NULL_HANDLE;
}

void lkv_vk_timelines_destroy(lkv_device *d)
{
    for (uint32_t q = 0; q < d->queues && !d->external; q++) {
        VkQueue queue = VK_NULL_HANDLE;
        d->vi.fn.vkGetDeviceQueue(d->dev, d->family, q, &queue);
        d->vi.fn.vkQueueWaitIdle(queue);
    }
    for (int i = 0; i < d->n_spare; i++)
        d->vi.fn.vkDestroySemaphore(d->dev, d->spare[i], NULL);
    if (d->timeline)
        d->vi.fn.vkDestroySemaphore(d->dev, d->timeline, NULL);
    free(d->spare);
    free(d->spare_value);
    d->spare = NULL;
    d->spare_value = NULL;
    d->n_spare = d->spare_cap = 0;
    d->timeline = VK_NULL_HANDLE;
}

lkv_status lkv_vk_lane_open(lkv_device *d, lkv_device **out_lane)
{
    if (d->external)
        return lkv_fail(LKV_UNSUPPORTED, "vulkan: a device opened on an engine's queue has no "
                        "lane (lazykv makes no queue on the engine's device)");
    if (!d->timeline)
        return lkv_fail(LKV_UNSUPPORTED, "vulkan: %s has no timeline semaphores, which a lane "
                        "needs", d->props.deviceName);
    lkv_device *l = calloc(1, sizeof *l);
    if (!l)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening a vulkan lane");
    lane_from(l, d);
    lkv_status st = lkv_host_lock_init(&l->bind.lock, &lkv_bind_inner)
                        ? LKV_OK
                        : lkv_fail(LKV_INTERNAL, "vulkan: cannot create a lane's lock");
    if (st == LKV_OK && !reuse_timeline(d, l))
        st = lkv_vk_timeline_create(l);
    if (st == LKV_OK)
        st = lkv_vk_device_objects(l);
    if (st != LKV_OK) {
        lkv_vk_close(l);
        return st;
    }
    *out_lane = l;
    return LKV_OK;
}

lkv_status lkv_vk_mark(lkv_device *d, lkv_mark **out_mark)
{
    lkv_mark *m = malloc(sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a vulkan mark");
    lkv_status st = lkv_vk_flush(d); /* pending waits are part of what was issued */
    if (st != LKV_OK) {
        free(m);
        return st;
    }
    m->timeline = d->timeline;
    m->value = d->submitted;
    *out_mark = m;
    return LKV_OK;
}

lkv_status lkv_vk_wait_mark(lkv_device *d, const lkv_mark *m)
{
    if (!m)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan: wait_mark on no mark");
    if (!d->timeline)
        return lkv_fail(LKV_UNSUPPORTED, "vulkan: %s has no timeline semaphores to wait with",
                        d->props.deviceName);
    /* value 0: nothing was submitted before the mark */
    return m->value == 0 ? LKV_OK : lkv_vk_add_wait(d, m->timeline, m->value);
}

int lkv_vk_lanes_concurrent(lkv_device *d)
{
    return d->queues > 1 && d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

void lkv_vk_mark_free(lkv_device *d, lkv_mark *m)
{
    (void)d; /* the semaphore is the handle's, freed with it */
    free(m);
}
