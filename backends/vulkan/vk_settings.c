/* The settings a device is driven with: workgroup size, workgroup budget,
 * binding range and alignment, largest allocation, f64 scores. Device
 * limits set them; three environment knobs narrow them for testing:
 *   LAZYKV_VULKAN_WG         workgroup size, a power of two in 32..256 (the
 *                            tests run other sizes to show no kernel assumes one)
 *   LAZYKV_VULKAN_MAX_RANGE  a smaller binding range, >= 4096 bytes (runs the
 *                            windowed paths of long caches on small ones)
 *   LAZYKV_VULKAN_F64        0 computes scores in f32 even where the device
 *                            has shaderFloat64 (tests the f32 variant)
 * A knob with a bad value fails the open, naming it. */

#include "error.h"
#include "vk_internal.h"

static lkv_status workgroup_size(lkv_device *d)
{
    const VkPhysicalDeviceLimits *l = &d->props.limits;
    uint64_t items = l->maxComputeWorkGroupInvocations < l->maxComputeWorkGroupSize[0]
                         ? l->maxComputeWorkGroupInvocations
                         : l->maxComputeWorkGroupSize[0];
    return lkv_bind_work_group("LAZYKV_VULKAN_WG", items, l->maxComputeSharedMemorySize,
                               &d->bind.lim.wg);
}

static lkv_status binding_limits(lkv_device *d)
{
    lkv_bind_limits *lim = &d->bind.lim;
    lim->max_range = d->props.limits.maxStorageBufferRange;
    lim->align = d->props.limits.minStorageBufferOffsetAlignment;
    if (lim->align < 4)
        lim->align = 4;
    lim->max_count[0] = d->props.limits.maxComputeWorkGroupCount[0];
    lim->max_count[1] = d->props.limits.maxComputeWorkGroupCount[1];
    long long v = 0;
    int set = 0;
    lkv_status st = lkv_bind_env_long("LAZYKV_VULKAN_MAX_RANGE", 4096, (long long)lim->max_range, &v, &set);
    if (st == LKV_OK && set)
        lim->max_range = (uint64_t)v;
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &m3};
    d->vi.fn.vkGetPhysicalDeviceProperties2(d->phys, &p2);
    d->max_alloc = m3.maxMemoryAllocationSize;
    return st;
}

static lkv_status f64_scores(lkv_device *d)
{
    VkPhysicalDeviceFeatures have;
    d->vi.fn.vkGetPhysicalDeviceFeatures(d->phys, &have);
    long long v = 1;
    int set = 0;
    lkv_status st = lkv_bind_env_long("LAZYKV_VULKAN_F64", 0, 1, &v, &set);
    d->bind.lim.has_f64 = have.shaderFloat64 == VK_TRUE && v == 1;
    return st;
}

lkv_status lkv_vk_settings(lkv_device *d)
{
    d->vi.fn.vkGetPhysicalDeviceProperties(d->phys, &d->props);
    d->vi.fn.vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem_props);
    d->bind.drv = &lkv_vk_bind_driver;
    d->bind.lim.max_groups = lkv_bind_group_budget(d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU);
    d->bind.lim.max_slot_groups = lkv_bind_group_budget(0);
    lkv_status st = workgroup_size(d);
    if (st == LKV_OK)
        st = binding_limits(d);
    if (st == LKV_OK)
        st = f64_scores(d);
    return st;
}
