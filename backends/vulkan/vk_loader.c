/* Loading Vulkan at run time: the loader library found by the shared search
 * (host/host_library.h), the entry points of vk_symbols.h, one instance
 * (with the Khronos validation layer when LAZYKV_VULKAN_VALIDATION=1), and
 * what a device must offer. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "host/host_library.h"
#include "host/host_symbols.h"
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

/* Every line of vk_symbols.h; each group is resolved once what it is looked
 * up with exists (the library, the instance, the device). */
static const lkv_host_symbol vk_symbols[] = {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SYMBOL(lkv_vk_fns, group, need, name)
#include "vk_symbols.h"
#undef LKV_SYM
};
#define LKV_VK_SYMBOL_COUNT (sizeof vk_symbols / sizeof vk_symbols[0])

/* Each line's signature is vulkan.h's own, so a typo cannot call a driver
 * with the wrong arguments. */
#define LKV_SYM(group, need, ret, name, params)                                              \
    _Static_assert(_Generic((PFN_##name)0, ret(VKAPI_PTR *) params: 1, default: 0),           \
                   #name ": vk_symbols.h and vulkan.h disagree");
#include "vk_symbols.h"
#undef LKV_SYM

/* vkGetInstanceProcAddr on vi's instance: NULL before it is created gives
 * the global entry points. */
static lkv_host_fn instance_lookup(void *ctx, const char *name)
{
    const lkv_vk_instance *vi = ctx;
    return (lkv_host_fn)vi->fn.vkGetInstanceProcAddr(vi->instance, name);
}

typedef struct vk_device_ref {
    const lkv_vk_instance *vi;
    VkDevice dev;
} vk_device_ref;

static lkv_host_fn device_lookup(void *ctx, const char *name)
{
    const vk_device_ref *ref = ctx;
    return (lkv_host_fn)ref->vi->fn.vkGetDeviceProcAddr(ref->dev, name);
}

static const char *resolve(lkv_vk_instance *vi, const char *group, lkv_host_lookup lookup,
                           void *ctx)
{
    return lkv_host_resolve(vk_symbols, LKV_VK_SYMBOL_COUNT, group, lookup, ctx, &vi->fn);
}

/* The loader library through the shared search, which (unlike the plain
 * dlopen this backend used before) opens it RTLD_NODELETE, as the other GPU
 * backends do, and names every path it tried in the message. */
static lkv_status load_library(lkv_vk_instance *vi)
{
    static const char *const names[] = {"libvulkan.so.1"};
    const lkv_host_library_search search = {.env = "LAZYKV_VULKAN_LIBRARY", .names = names,
                                            .count = 1};
    char name[512], tried[512] = "";
    vi->lib = lkv_host_library_find(&search, name, sizeof name, tried, sizeof tried);
    if (!vi->lib)
        return lkv_fail(LKV_UNAVAILABLE, "no Vulkan loader (tried %s): install libvulkan1",
                        tried);
    const char *missing = resolve(vi, "lib", lkv_host_dlsym, vi->lib);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "%s has no %s", name, missing);
    missing = resolve(vi, "global", instance_lookup, vi);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan loader %s lacks %s", name, missing);
    return LKV_OK;
}

static lkv_status load_instance_fns(lkv_vk_instance *vi)
{
    const char *missing = resolve(vi, "instance", instance_lookup, vi);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan instance lacks %s", missing);
    return LKV_OK;
}

lkv_status lkv_vk_load_device_fns(lkv_vk_instance *vi, VkDevice dev)
{
    vk_device_ref ref = {vi, dev};
    const char *missing = resolve(vi, "device", device_lookup, &ref);
    if (missing)
        return lkv_fail(LKV_UNAVAILABLE, "the Vulkan device lacks %s", missing);
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
        lkv_host_library_close(vi.lib);
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
        lkv_host_library_close(vi.lib);
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
        lkv_host_library_close(vi.lib);
        return st;
    }
    if (n_exts)
        add_messenger(&vi);
    *out_vi = vi;
    return LKV_OK;
}

lkv_status lkv_vk_instance_borrow(VkInstance instance, lkv_vk_instance *out_vi)
{
    lkv_vk_instance vi;
    memset(&vi, 0, sizeof vi);
    lkv_status st = load_library(&vi);
    if (st == LKV_OK) {
        vi.instance = instance;
        st = load_instance_fns(&vi);
    }
    if (st != LKV_OK) {
        lkv_host_library_close(vi.lib);
        return st;
    }
    *out_vi = vi;
    return LKV_OK;
}

void lkv_vk_instance_destroy(lkv_vk_instance *vi)
{
    if (vi->messenger && vi->fn.vkDestroyDebugUtilsMessengerEXT)
        vi->fn.vkDestroyDebugUtilsMessengerEXT(vi->instance, vi->messenger, NULL);
    if (vi->instance)
        vi->fn.vkDestroyInstance(vi->instance, NULL);
    /* The library stays loaded (and was opened RTLD_NODELETE besides):
     * drivers register atexit handlers and thread-local state that must
     * not outlive their code. */
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
    /* store binds 10 storage buffers (with holes); the spec only promises 4. */
    if (props.limits.maxPerStageDescriptorStorageBuffers < LKV_BIND_MAX_BINDINGS) {
        snprintf(why, why_len, "device binds %u storage buffers per stage; lazykv needs %d",
                 props.limits.maxPerStageDescriptorStorageBuffers, LKV_BIND_MAX_BINDINGS);
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
