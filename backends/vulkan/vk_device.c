/* Opening a Vulkan device: the instance, the physical device, a compute
 * queue, the command pool of the ring ops record into (vk_submit.c), and
 * the settings of vk_settings.c. Closing waits for lazykv's submissions
 * and frees all it made (an engine's instance, device and queue, from
 * open_external, are never destroyed: vk_external.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vk_internal.h"

/* The physical device's queue families (at most 32), their count back. */
static uint32_t families(lkv_device *d, VkQueueFamilyProperties fam[32])
{
    uint32_t n = 0;
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, NULL);
    if (n > 32)
        n = 32;
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, fam);
    return n;
}

static uint32_t compute_family(lkv_device *d)
{
    VkQueueFamilyProperties fam[32];
    uint32_t n = families(d, fam);
    /* A compute-only family is the dedicated async-compute queue on AMD and
     * NVIDIA; any compute family will do otherwise. */
    for (uint32_t i = 0; i < n; i++)
        if ((fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            return i;
    for (uint32_t i = 0; i < n; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return i;
    return 0;
}

/* Queues of the compute family: two where it has them, so a lane gets a
 * hardware queue of its own. */
static uint32_t queues_of(lkv_device *d)
{
    VkQueueFamilyProperties fam[32];
    uint32_t n = families(d, fam);
    return d->family < n && fam[d->family].queueCount >= 2 ? 2 : 1;
}

static lkv_status create_device(lkv_device *d)
{
    VkPhysicalDeviceFeatures want;
    memset(&want, 0, sizeof want);
    want.shaderFloat64 = d->bind.lim.has_f64 ? VK_TRUE : VK_FALSE;
    d->family = compute_family(d);
    d->queues = queues_of(d);
    float prio[2] = {1.0f, 1.0f};
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = d->family,
                                 .queueCount = d->queues,
                                 .pQueuePriorities = prio};
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        .timelineSemaphore = VK_TRUE};
    const char *exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = lkv_vk_has_timeline(d) ? &timeline : NULL,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &q,
                             .enabledExtensionCount = 1,
                             .ppEnabledExtensionNames = exts,
                             .pEnabledFeatures = &want};
    lkv_status st = lkv_vk_check(d->vi.fn.vkCreateDevice(d->phys, &ci, NULL, &d->dev), "vkCreateDevice");
    if (st != LKV_OK)
        return st;
    st = lkv_vk_load_device_fns(&d->vi, d->dev);
    if (st != LKV_OK)
        return st;
    d->fns_loaded = 1;
    d->vi.fn.vkGetDeviceQueue(d->dev, d->family, 0, &d->queue);
    if (ci.pNext && (st = lkv_vk_timeline_create(d)) != LKV_OK)
        return st;
    for (; d->queue_locks_made < 2; d->queue_locks_made++)
        if (pthread_mutex_init(&d->queue_locks[d->queue_locks_made], NULL) != 0)
            return lkv_fail(LKV_INTERNAL, "vulkan: cannot create a queue lock");
    d->queue_mu = &d->queue_locks[0];
    return lkv_vk_device_objects(d);
}

lkv_status lkv_vk_device_objects(lkv_device *d)
{
    d->cur = -1;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->family};
    return lkv_vk_check(d->vi.fn.vkCreateCommandPool(d->dev, &pci, NULL, &d->pool),
                        "vkCreateCommandPool");
}

void lkv_vk_close(lkv_device *d)
{
    if (!d)
        return;
    /* A failed open can stop anywhere, even with the device's entry points
     * only partly loaded. */
    if (d->dev && d->fns_loaded) {
        /* Our own submissions only: an engine's device may be busy on
         * other queues, which vkDeviceWaitIdle would have to lock. */
        if (d->pool)
            lkv_vk_ring_destroy(d);
        lkv_vk_free(d, d->staging);
        lkv_vk_free(d, d->bind.logits);
        lkv_vk_free(d, d->bind.partials);
        lkv_vk_free(d, d->bind.lse);
        lkv_vk_free(d, d->bind.compact_scratch);
        lkv_vk_pipelines_destroy(d);
        if (d->pool)
            d->vi.fn.vkDestroyCommandPool(d->dev, d->pool, NULL);
        if (d->lane_of)
            lkv_vk_lane_retire(d);
        else
            lkv_vk_timelines_destroy(d);
        if (!d->external && !d->lane_of)
            d->vi.fn.vkDestroyDevice(d->dev, NULL);
    } else if (d->dev && d->vi.fn.vkDestroyDevice && !d->external && !d->lane_of) {
        d->vi.fn.vkDestroyDevice(d->dev, NULL);
    }
    lkv_bind_release(&d->bind);
    lkv_host_lock_destroy(&d->bind.lock);
    for (int i = 0; i < d->queue_locks_made; i++)
        pthread_mutex_destroy(&d->queue_locks[i]);
    if (d->external || d->lane_of)
        memset(&d->vi, 0, sizeof d->vi); /* the engine's or the parent's instance */
    else
        lkv_vk_instance_destroy(&d->vi);
    free(d);
}

lkv_status lkv_vk_open(int device, lkv_device **out_dev)
{
    lkv_device *d = calloc(1, sizeof *d);
    if (!d)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the vulkan backend");
    lkv_status st = lkv_vk_instance_create(&d->vi);
    if (st != LKV_OK) {
        free(d);
        return st;
    }
    VkPhysicalDevice phys[LKV_VK_MAX_DEVICES]; /* more than enough for one machine */
    uint32_t n = LKV_VK_MAX_DEVICES;
    VkResult r = d->vi.fn.vkEnumeratePhysicalDevices(d->vi.instance, &n, phys);
    char why[200];
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || device < 0 || (uint32_t)device >= n) {
        lkv_vk_close(d);
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan device %d does not exist (%u found)", device, n);
    }
    d->phys = phys[device];
    if (!lkv_vk_device_usable(&d->vi, d->phys, why, sizeof why)) {
        lkv_vk_close(d);
        return lkv_fail(LKV_UNAVAILABLE, "vulkan device %d: %s", device, why);
    }
    st = lkv_vk_settings(d);
    if (st == LKV_OK && !lkv_host_lock_init(&d->bind.lock, &lkv_bind_inner))
        st = lkv_fail(LKV_INTERNAL, "vulkan: cannot create the device lock");
    if (st == LKV_OK)
        st = create_device(d);
    if (st != LKV_OK) {
        lkv_vk_close(d);
        return lkv_fail_context(st, "opening vulkan device %d (%s)", device, d->props.deviceName);
    }
    *out_dev = d;
    return LKV_OK;
}
