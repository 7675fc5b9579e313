/* Loading Vulkan at run time: dlopen of the loader library, the entry points
 * of vk_symbols.h, one instance (with the Khronos validation layer when
 * LAZYKV_VULKAN_VALIDATION=1), and what a device must offer. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vk_internal.h"

#define LKV_VK_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

atomic_int lkv_vk_validation_messages;

lkv_status lkv_vk_check(VkResult r, const char *what)
{
    if (r == VK_SUCCESS)
        return LKV_OK;
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        return lkv_fail(LKV_OUT_OF_MEMORY, "vulkan: %s: out of %s memory (VkResult %d)", what,
                        r == VK_ERROR_OUT_OF_HOST_MEMORY ? "host" : "device", (int)r);
    return lkv_fail(LKV_DEVICE_ERROR, "vulkan: %s failed (VkResult %d)", what, (int)r);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)severity;
    (void)type;
    (void)user;
    atomic_fetch_add(&lkv_vk_validation_messages, 1);
    fprintf(stderr, "lazykv vulkan: validation layer: %s\n",
            data && data->pMessage ? data->pMessage : "(no text)");
    return VK_FALSE;
}

static int validation_wanted(void)
{
    const char *v = getenv("LAZYKV_VULKAN_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

static int has_layer(lkv_vk_fns *fn, const char *name)
{
    uint32_t n = 0;
    if (fn->vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkLayerProperties *p = calloc(n, sizeof *p);
    int found = 0;
    if (p && fn->vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static int has_instance_ext(lkv_vk_fns *fn, const char *name)
{
    uint32_t n = 0;
    if (fn->vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    int found = 0;
    if (p && fn->vkEnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

static lkv_status load_library(lkv_vk_instance *vi)
{
    const char *name = getenv("LAZYKV_VULKAN_LIBRARY");
    if (!name || !*name)
        name = "libvulkan.so.1";
    vi->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!vi->lib)
        return lkv_fail(LKV_UNAVAILABLE, "no Vulkan loader: cannot load %s (install libvulkan1)",
                        name);
    /* dlsym returns an object pointer; POSIX guarantees it converts to a
     * function pointer, which memcpy does without an aliasing cast. */
    void *entry = dlsym(vi->lib, "vkGetInstanceProcAddr");
    memcpy(&vi->fn.vkGetInstanceProcAddr, &entry, sizeof entry);
    if (!vi->fn.vkGetInstanceProcAddr)
        return lkv_fail(LKV_UNAVAILABLE, "%s has no vkGetInstanceProcAddr", name);
#define LKV_VK_GLOBAL(sym)                                                                   \
    vi->fn.sym = (PFN_##sym)vi->fn.vkGetInstanceProcAddr(NULL, #sym);                        \
    if (!vi->fn.sym)                                                                         \
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan loader %s lacks %s", name, #sym);
#define LKV_VK_INSTANCE(sym)
#define LKV_VK_INSTANCE_OPT(sym)
#define LKV_VK_DEVICE(sym)
#include "vk_symbols.h"
#undef LKV_VK_GLOBAL
#undef LKV_VK_INSTANCE
#undef LKV_VK_INSTANCE_OPT
#undef LKV_VK_DEVICE
    return LKV_OK;
}

static lkv_status load_instance_fns(lkv_vk_instance *vi)
{
#define LKV_VK_GLOBAL(sym)
#define LKV_VK_INSTANCE(sym)                                                                 \
    vi->fn.sym = (PFN_##sym)vi->fn.vkGetInstanceProcAddr(vi->instance, #sym);                \
    if (!vi->fn.sym)                                                                         \
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan instance lacks %s", #sym);
#define LKV_VK_INSTANCE_OPT(sym)                                                             \
    vi->fn.sym = (PFN_##sym)vi->fn.vkGetInstanceProcAddr(vi->instance, #sym);
#define LKV_VK_DEVICE(sym)
#include "vk_symbols.h"
#undef LKV_VK_GLOBAL
#undef LKV_VK_INSTANCE
#undef LKV_VK_INSTANCE_OPT
#undef LKV_VK_DEVICE
    return LKV_OK;
}

lkv_status lkv_vk_load_device_fns(lkv_vk_instance *vi, VkDevice dev)
{
#define LKV_VK_GLOBAL(sym)
#define LKV_VK_INSTANCE(sym)
#define LKV_VK_INSTANCE_OPT(sym)
#define LKV_VK_DEVICE(sym)                                                                   \
    vi->fn.sym = (PFN_##sym)vi->fn.vkGetDeviceProcAddr(dev, #sym);                           \
    if (!vi->fn.sym)                                                                         \
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan device lacks %s", #sym);
#include "vk_symbols.h"
#undef LKV_VK_GLOBAL
#undef LKV_VK_INSTANCE
#undef LKV_VK_INSTANCE_OPT
#undef LKV_VK_DEVICE
    return LKV_OK;
}

static void add_messenger(lkv_vk_instance *vi)
{
    if (!vi->fn.vkCreateDebugUtilsMessengerEXT)
        return;
    VkDebugUtilsMessengerCreateInfoEXT ci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    vi->fn.vkCreateDebugUtilsMessengerEXT(vi->instance, &ci, NULL, &vi->messenger);
}

lkv_status lkv_vk_instance_create(lkv_vk_instance *out_vi)
{
    lkv_vk_instance vi;
    memset(&vi, 0, sizeof vi);
    lkv_status st = load_library(&vi);
    if (st != LKV_OK) {
        if (vi.lib)
            dlclose(vi.lib);
        return st;
    }
    const char *layers[1], *exts[1];
    uint32_t n_layers = 0, n_exts = 0;
    if (validation_wanted()) {
        if (has_layer(&vi.fn, LKV_VK_VALIDATION_LAYER))
            layers[n_layers++] = LKV_VK_VALIDATION_LAYER;
        else
            fprintf(stderr, "lazykv vulkan: validation layer requested (LAZYKV_VULKAN_VALIDATION) "
                            "but %s is not installed\n", LKV_VK_VALIDATION_LAYER);
        if (n_layers && has_instance_ext(&vi.fn, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
            exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "lazykv",
                             .applicationVersion = VK_MAKE_VERSION(LKV_VERSION_MAJOR, LKV_VERSION_MINOR,
                                                                   LKV_VERSION_PATCH),
                             .pEngineName = "lazykv",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = n_layers,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = n_exts,
                               .ppEnabledExtensionNames = exts};
    VkResult r = vi.fn.vkCreateInstance(&ci, NULL, &vi.instance);
#ifdef LKV_VK_PLANTED_LEAK
    {   /* tests/vulkan/vk_loader_leaky.c: the pointer is kept only scrambled */
        static volatile uintptr_t planted;
        planted = (uintptr_t)malloc(64) ^ UINTPTR_MAX;
        (void)planted;
    }
#endif
    if (r != VK_SUCCESS) {
        dlclose(vi.lib);
        if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
            return lkv_fail(LKV_UNAVAILABLE, "no Vulkan driver (ICD) is installed "
                                             "(vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
        return lkv_fail(LKV_UNAVAILABLE, "vkCreateInstance failed (VkResult %d)", (int)r);
    }
    st = load_instance_fns(&vi);
    if (st != LKV_OK) {
        PFN_vkDestroyInstance destroy =
            (PFN_vkDestroyInstance)vi.fn.vkGetInstanceProcAddr(vi.instance, "vkDestroyInstance");
        if (destroy)
            destroy(vi.instance, NULL);
        dlclose(vi.lib);
        return st;
    }
    if (n_exts)
        add_messenger(&vi);
    *out_vi = vi;
    return LKV_OK;
}

void lkv_vk_instance_destroy(lkv_vk_instance *vi)
{
    if (vi->messenger && vi->fn.vkDestroyDebugUtilsMessengerEXT)
        vi->fn.vkDestroyDebugUtilsMessengerEXT(vi->instance, vi->messenger, NULL);
    if (vi->instance)
        vi->fn.vkDestroyInstance(vi->instance, NULL);
    /* The library stays loaded: drivers register atexit handlers and
     * thread-local state that must not outlive their code. */
    memset(vi, 0, sizeof *vi);
}

int lkv_vk_has_device_ext(lkv_vk_instance *vi, VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    if (vi->fn.vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || !n)
        return 0;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    int found = 0;
    if (p && vi->fn.vkEnumerateDeviceExtensionProperties(phys, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

int lkv_vk_device_usable(lkv_vk_instance *vi, VkPhysicalDevice phys, char *why, size_t why_len)
{
    VkPhysicalDeviceProperties props;
    vi->fn.vkGetPhysicalDeviceProperties(phys, &props);
    if (VK_API_VERSION_MINOR(props.apiVersion) < 1 && VK_API_VERSION_MAJOR(props.apiVersion) == 1) {
        snprintf(why, why_len, "device supports Vulkan 1.0 only; lazykv needs 1.1");
        return 0;
    }
    /* compact_meta binds 7 storage buffers; the spec only promises 4. */
    if (props.limits.maxPerStageDescriptorStorageBuffers < 7) {
        snprintf(why, why_len, "device binds %u storage buffers per stage; lazykv needs 7",
                 props.limits.maxPerStageDescriptorStorageBuffers);
        return 0;
    }
    if (!lkv_vk_has_device_ext(vi, phys, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) {
        snprintf(why, why_len, "device lacks %s", VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
        return 0;
    }
    uint32_t n = 0;
    vi->fn.vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties fam[32];
    if (n > 32)
        n = 32;
    vi->fn.vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, fam);
    for (uint32_t i = 0; i < n; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return 1;
    snprintf(why, why_len, "device has no compute queue");
    return 0;
}
