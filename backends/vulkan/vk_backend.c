/* The Vulkan backend: probe, open and close, and the ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "vk_internal.h"

#define LKV_VK_MAX_DEVICES 16

static void device_identity(lkv_vk_instance *vi, VkPhysicalDevice phys, lkv_device_report *rep)
{
    VkPhysicalDeviceProperties props;
    vi->fn.vkGetPhysicalDeviceProperties(phys, &props);
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    /* Driver properties are core in 1.2; older devices report the ID only. */
    if (props.apiVersion >= VK_API_VERSION_1_2)
        ids.pNext = &drv;
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &ids};
    vi->fn.vkGetPhysicalDeviceProperties2(phys, &p2);
    snprintf(rep->name, sizeof rep->name, "%.127s", props.deviceName);
    if (drv.driverName[0])
        snprintf(rep->driver, sizeof rep->driver, "%.60s %.60s", drv.driverName, drv.driverInfo);
    else
        snprintf(rep->driver, sizeof rep->driver, "driver version 0x%x", props.driverVersion);
    const uint8_t *u = ids.deviceUUID;
    snprintf(rep->uuid, sizeof rep->uuid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    VkPhysicalDeviceMemoryProperties mem;
    vi->fn.vkGetPhysicalDeviceMemoryProperties(phys, &mem);
    for (uint32_t h = 0; h < mem.memoryHeapCount; h++)
        if ((mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            mem.memoryHeaps[h].size > rep->memory_bytes)
            rep->memory_bytes = mem.memoryHeaps[h].size;
    rep->emulated = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    VkPhysicalDeviceFeatures feat;
    vi->fn.vkGetPhysicalDeviceFeatures(phys, &feat);
    snprintf(rep->reason, sizeof rep->reason, "Vulkan %u.%u, %s scores",
             VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion),
             feat.shaderFloat64 ? "f64" : "f32");
}

static void unavailable(lkv_device_report *out, int cap, int *out_count, const char *why)
{
    *out_count = 1;
    if (cap < 1)
        return;
    memset(&out[0], 0, sizeof out[0]);
    snprintf(out[0].backend, sizeof out[0].backend, "vulkan");
    out[0].device = -1;
    snprintf(out[0].reason, sizeof out[0].reason, "%s", why);
}

static lkv_status vk_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_vk_instance vi;
    if (lkv_vk_instance_create(&vi) != LKV_OK) {
        unavailable(out, cap, out_count, lkv_last_error());
        return LKV_OK;
    }
    VkPhysicalDevice phys[LKV_VK_MAX_DEVICES];
    uint32_t n = LKV_VK_MAX_DEVICES;
    VkResult r = vi.fn.vkEnumeratePhysicalDevices(vi.instance, &n, phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        unavailable(out, cap, out_count, "the Vulkan loader found no device (no driver installed?)");
        lkv_vk_instance_destroy(&vi);
        return LKV_OK;
    }
    *out_count = (int)n;
    for (uint32_t i = 0; i < n && (int)i < cap; i++) {
        lkv_device_report *rep = &out[i];
        memset(rep, 0, sizeof *rep);
        snprintf(rep->backend, sizeof rep->backend, "vulkan");
        rep->device = (int)i;
        device_identity(&vi, phys[i], rep);
        char why[200];
        rep->available = lkv_vk_device_usable(&vi, phys[i], why, sizeof why);
        if (!rep->available)
            snprintf(rep->reason, sizeof rep->reason, "%.100s: %.150s", rep->name, why);
    }
    lkv_vk_instance_destroy(&vi);
    return LKV_OK;
}

static uint32_t compute_family(lkv_device *d)
{
    uint32_t n = 0;
    VkQueueFamilyProperties fam[32];
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, NULL);
    if (n > 32)
        n = 32;
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, fam);
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

/* Workgroup size: 64 unless LAZYKV_VULKAN_WG names another power of two in
 * 32..256 (the conformance suite runs other sizes to show no kernel assumes
 * one), capped by the device. */
static uint32_t workgroup_size(const VkPhysicalDeviceProperties *p)
{
    uint32_t wg = 64;
    const char *env = getenv("LAZYKV_VULKAN_WG");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        if (v >= 32 && v <= 256 && (v & (v - 1)) == 0)
            wg = (uint32_t)v;
    }
    while (wg > p->limits.maxComputeWorkGroupInvocations || wg > p->limits.maxComputeWorkGroupSize[0])
        wg /= 2;
    return wg;
}

/* The device's storage-buffer binding limit, or less when
 * LAZYKV_VULKAN_MAX_RANGE says so: the conformance suite shrinks it to run
 * the windowed paths of long caches on small ones. */
static VkDeviceSize binding_range(const VkPhysicalDeviceProperties *p)
{
    VkDeviceSize range = p->limits.maxStorageBufferRange;
    const char *env = getenv("LAZYKV_VULKAN_MAX_RANGE");
    if (env && *env) {
        long long v = strtoll(env, NULL, 10);
        if (v >= 4096 && (VkDeviceSize)v < range)
            range = (VkDeviceSize)v;
    }
    return range;
}

/* How many workgroups are worth launching at once. Every shader loops
 * grid-stride, so fewer groups only means more work each. A GPU wants
 * thousands in flight; a software device (lavapipe) pays a fixed cost per
 * workgroup and runs one per CPU thread at a time, so a few per thread. */
static uint32_t workgroup_budget(const VkPhysicalDeviceProperties *p)
{
    if (p->deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU)
        return 16384;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (uint32_t)(8 * (cpus > 0 ? cpus : 1));
}

static lkv_status create_device(lkv_device *d)
{
    VkPhysicalDeviceFeatures have, want;
    d->vi.fn.vkGetPhysicalDeviceFeatures(d->phys, &have);
    memset(&want, 0, sizeof want);
    want.shaderFloat64 = have.shaderFloat64;
    want.shaderInt64 = VK_FALSE;
    d->has_f64 = have.shaderFloat64 == VK_TRUE;
    d->family = compute_family(d);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = d->family,
                                 .queueCount = 1,
                                 .pQueuePriorities = &prio};
    const char *exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
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
    d->vi.fn.vkGetDeviceQueue(d->dev, d->family, 0, &d->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->family};
    st = lkv_vk_check(d->vi.fn.vkCreateCommandPool(d->dev, &pci, NULL, &d->pool), "vkCreateCommandPool");
    if (st != LKV_OK)
        return st;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    st = lkv_vk_check(d->vi.fn.vkAllocateCommandBuffers(d->dev, &ai, &d->cmd), "vkAllocateCommandBuffers");
    if (st != LKV_OK)
        return st;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    return lkv_vk_check(d->vi.fn.vkCreateFence(d->dev, &fci, NULL, &d->fence), "vkCreateFence");
}

static void vk_close(lkv_device *d)
{
    if (!d)
        return;
    if (d->dev) {
        lkv_vk_flush(d);
        d->vi.fn.vkDeviceWaitIdle(d->dev);
        lkv_vk_free(d, d->arena);
        lkv_vk_free(d, d->staging);
        lkv_vk_free(d, d->logits);
        lkv_vk_free(d, d->partials);
        lkv_vk_free(d, d->lse);
        lkv_vk_free(d, d->compact_scratch);
        lkv_vk_pipelines_destroy(d);
        if (d->fence)
            d->vi.fn.vkDestroyFence(d->dev, d->fence, NULL);
        if (d->pool)
            d->vi.fn.vkDestroyCommandPool(d->dev, d->pool, NULL);
        d->vi.fn.vkDestroyDevice(d->dev, NULL);
    }
    lkv_vk_instance_destroy(&d->vi);
    free(d);
}

static lkv_status vk_open(int device, lkv_device **out_dev)
{
    lkv_device *d = calloc(1, sizeof *d);
    if (!d)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the vulkan backend");
    lkv_status st = lkv_vk_instance_create(&d->vi);
    if (st != LKV_OK) {
        free(d);
        return st;
    }
    VkPhysicalDevice phys[LKV_VK_MAX_DEVICES];
    uint32_t n = LKV_VK_MAX_DEVICES;
    VkResult r = d->vi.fn.vkEnumeratePhysicalDevices(d->vi.instance, &n, phys);
    char why[200];
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || device < 0 || (uint32_t)device >= n) {
        vk_close(d);
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan device %d does not exist (%u found)", device, n);
    }
    d->phys = phys[device];
    if (!lkv_vk_device_usable(&d->vi, d->phys, why, sizeof why)) {
        vk_close(d);
        return lkv_fail(LKV_UNAVAILABLE, "vulkan device %d: %s", device, why);
    }
    d->vi.fn.vkGetPhysicalDeviceProperties(d->phys, &d->props);
    d->vi.fn.vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem_props);
    d->wg = workgroup_size(&d->props);
    d->max_groups = workgroup_budget(&d->props);
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &m3};
    d->vi.fn.vkGetPhysicalDeviceProperties2(d->phys, &p2);
    d->max_alloc = m3.maxMemoryAllocationSize;
    d->max_range = binding_range(&d->props);
    d->align = d->props.limits.minStorageBufferOffsetAlignment;
    if (d->align < 4)
        d->align = 4;
    st = create_device(d);
    if (st == LKV_OK)
        st = lkv_vk_reserve(d, &d->arena, (size_t)1 << 20);
    if (st != LKV_OK) {
        vk_close(d);
        return lkv_fail_context(st, "opening vulkan device %d (%s)", device, d->props.deviceName);
    }
    *out_dev = d;
    return LKV_OK;
}

const lkv_backend_ops lkv_backend_vulkan = {
    .name = "vulkan",
    .probe = vk_probe,
    .open = vk_open,
    .close = vk_close,
    .alloc = lkv_vk_alloc,
    .free = lkv_vk_free,
    .write = lkv_vk_write,
    .read = lkv_vk_read,
    .copy = lkv_vk_copy,
    .sync = lkv_vk_sync,
    .attend = lkv_vk_attend,
    .observe = lkv_vk_observe,
    .score = lkv_vk_score,
    .select = lkv_vk_select,
    .compact = lkv_vk_compact,
};
