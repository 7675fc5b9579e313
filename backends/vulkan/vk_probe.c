/* Listing Vulkan devices: name, driver, memory, UUID, whether software,
 * and whether lazykv can use them (and why not). Never aborts: a missing
 * loader or driver is one unavailable report with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "host/host_report.h"
#include "vk_internal.h"

static void device_identity(lkv_vk_instance *vi, VkPhysicalDevice phys, lkv_device_report *rep)
{
    VkPhysicalDeviceProperties props;
    vi->fn.vkGetPhysicalDeviceProperties(phys, &props);
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    /* Driver properties are core in 1.2; older devices report the ID only. */
    if (props.apiVersion >= VK_API_VERSION_1_2)
        ids.pNext = &drv;
    /* The PCI address, where the driver has VK_EXT_pci_bus_info, matches
     * this device with the same GPU seen through CUDA, HIP or OpenCL. */
    VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
    int has_pci = lkv_vk_has_device_ext(vi, phys, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
    if (has_pci) {
        pci.pNext = ids.pNext;
        ids.pNext = &pci;
    }
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &ids};
    vi->fn.vkGetPhysicalDeviceProperties2(phys, &p2);
    if (has_pci)
        snprintf(rep->pci, sizeof rep->pci, "%04x:%02x:%02x.%x", pci.pciDomain, pci.pciBus & 0xff,
                 pci.pciDevice & 0x1f, pci.pciFunction & 7);
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
    int f64 = lkv_bind_f64_scores("LAZYKV_VULKAN_F64", feat.shaderFloat64 == VK_TRUE);
    snprintf(rep->reason, sizeof rep->reason, "Vulkan %u.%u, %s scores",
             VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion),
             f64 ? "f64" : "f32");
}

lkv_status lkv_vk_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_vk_instance vi;
    if (lkv_vk_instance_create(&vi) != LKV_OK) {
        lkv_host_report_unavailable(out, cap, out_count, "vulkan", lkv_last_error());
        return LKV_OK;
    }
    VkPhysicalDevice phys[LKV_VK_MAX_DEVICES];
    uint32_t n = LKV_VK_MAX_DEVICES;
    VkResult r = vi.fn.vkEnumeratePhysicalDevices(vi.instance, &n, phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        lkv_host_report_unavailable(out, cap, out_count, "vulkan",
                                    "the Vulkan loader found no device (no driver installed?)");
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
