/* open_external: lazykv on the engine's VkInstance, VkPhysicalDevice,
 * VkDevice and VkQueue (of family queue_family). Instance entry points come
 * from vkGetInstanceProcAddr on the engine's instance, device ones from
 * vkGetDeviceProcAddr on its device, so layers and the driver the engine
 * chose see lazykv's calls too. lazykv makes only its own command pool,
 * buffers and pipelines on that device and destroys only those.
 *
 * Order with the engine (docs/embedding.md, "Vulkan"): every lazykv
 * command buffer opens and closes with a full memory barrier (vk_submit.c),
 * so on the shared queue it runs after the engine's earlier submissions
 * and before its later ones. The engine cannot tell lazykv which features
 * it enabled, so scores run in f32 (shaderFloat64 unused). */
#include <string.h>
#include <stdlib.h>

#include "error.h"
#include "vk_internal.h"

static lkv_status check_fields(const lkv_external_device *ext)
{
    const char *missing = !ext ? "the whole description" : !ext->instance ? "instance"
                          : !ext->physical_device ? "physical_device"
                          : !ext->logical_device ? "logical_device" : !ext->stream ? "stream" : NULL;
    if (missing)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan open_external: instance (VkInstance), "
                        "physical_device, logical_device (VkDevice) and stream (VkQueue) are "
                        "all needed; %s is missing", missing);
    if (ext->context)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan open_external: context is not Vulkan's "
                        "field and must be NULL");
    return LKV_OK;
}

/* The physical device is the instance's, usable, and queue_family computes. */
static lkv_status check_physical(lkv_device *d, uint32_t family)
{
    VkPhysicalDevice phys[LKV_VK_MAX_DEVICES];
    uint32_t n = LKV_VK_MAX_DEVICES, found = 0;
    VkResult r = d->vi.fn.vkEnumeratePhysicalDevices(d->vi.instance, &n, phys);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++)
        found |= phys[i] == d->phys;
    if (!found)
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan open_external: physical_device %p is "
                        "none of the instance's %u physical devices", (void *)d->phys, n);
    char why[200];
    if (!lkv_vk_device_usable(&d->vi, d->phys, why, sizeof why))
        return lkv_fail(LKV_UNAVAILABLE, "vulkan open_external: %s", why);
    VkQueueFamilyProperties fam[32];
    uint32_t nf = 0;
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nf, NULL);
    nf = nf > 32 ? 32 : nf;
    d->vi.fn.vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nf, fam);
    if (family >= nf || !(fam[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        return lkv_fail(LKV_INVALID_ARGUMENT, "vulkan open_external: queue_family %u %s", family,
                        family >= nf ? "does not exist" : "has no compute");
    return LKV_OK;
}

static lkv_status borrow(lkv_device *d, const lkv_external_device *ext)
{
    d->phys = (VkPhysicalDevice)ext->physical_device;
    lkv_status st = check_physical(d, ext->queue_family);
    if (st == LKV_OK)
        st = lkv_vk_settings(d);
    d->bind.lim.has_f64 = 0;
    if (st == LKV_OK && !lkv_host_lock_init(&d->bind.lock, &lkv_bind_inner))
        st = lkv_fail(LKV_INTERNAL, "vulkan: cannot create the device lock");
    if (st != LKV_OK)
        return st;
    d->dev = (VkDevice)ext->logical_device;
    st = lkv_vk_load_device_fns(&d->vi, d->dev);
    if (st != LKV_OK)
        return lkv_fail_context(st, "the engine's VkDevice must enable %s",
                                VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    d->fns_loaded = 1;
    d->queue = (VkQueue)ext->stream;
    d->family = ext->queue_family;
    return lkv_vk_device_objects(d);
}

lkv_status lkv_vk_open_external(const lkv_external_device *ext, lkv_device **out_dev)
{
    lkv_status st = check_fields(ext);
    if (st != LKV_OK)
        return st;
    lkv_device *d = calloc(1, sizeof *d);
    if (!d)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the vulkan backend");
    d->external = 1;
    d->cur = -1;
    st = lkv_vk_instance_borrow((VkInstance)ext->instance, &d->vi);
    if (st != LKV_OK) {
        free(d);
        return st;
    }
    st = borrow(d, ext);
    if (st != LKV_OK) {
        lkv_vk_close(d);
        return lkv_fail_context(st, "opening vulkan on the engine's device");
    }
    *out_dev = d;
    return LKV_OK;
}
