/* A stand-in Vulkan driver (ICD) that leaks the way Mesa's drivers do on an
 * AMD CPU: a one-time initializer, run from vkCreateInstance, keeps a
 * 128-byte block in a static. The loader unloads the driver when the
 * instance is destroyed, so at exit the block is unreachable and its stack
 * names no module: suppressions by driver name cannot match it. The driver
 * offers no physical device. Registered through VK_DRIVER_FILES (and
 * VK_ICD_FILENAMES for older loaders) by tests/vulkan/driver_leak.sh. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_LOADER_MAGIC 0x01CDC0DE /* a dispatchable handle starts with it */

typedef struct fake_instance {
    uintptr_t loader_data;
} fake_instance;

/* volatile: an optimizing build would otherwise drop a block nothing reads */
static void *volatile cpu_caps; /* what the initializer keeps */
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect_cpu(void)
{
    cpu_caps = realloc(NULL, 128);
    if (cpu_caps)
        memset(cpu_caps, 0xa5, 128);
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_enumerate_instance_extensions(
    const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    (void)layer;
    (void)props;
    *count = 0;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_create_instance(const VkInstanceCreateInfo *ci,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkInstance *out)
{
    (void)ci;
    (void)alloc;
    pthread_once(&detect_once, detect_cpu);
    fake_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    inst->loader_data = FAKE_LOADER_MAGIC;
    *out = (VkInstance)(void *)inst;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fake_destroy_instance(VkInstance inst,
                                                        const VkAllocationCallbacks *alloc)
{
    (void)alloc;
    free((void *)inst);
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_enumerate_physical_devices(VkInstance inst,
                                                                      uint32_t *count,
                                                                      VkPhysicalDevice *devs)
{
    (void)inst;
    (void)devs;
    *count = 0;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL never_called(void) { abort(); }

static VKAPI_ATTR VkResult VKAPI_CALL fake_enumerate_version(uint32_t *version)
{
    *version = VK_API_VERSION_1_2;
    return VK_SUCCESS;
}

FAKE_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v)
{
    if (*v > 5)
        *v = 5;
    return VK_SUCCESS;
}

FAKE_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetInstanceProcAddr(VkInstance inst,
                                                                               const char *name)
{
    (void)inst;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        {"vkEnumerateInstanceExtensionProperties",
         (PFN_vkVoidFunction)fake_enumerate_instance_extensions},
        {"vkEnumerateInstanceVersion", (PFN_vkVoidFunction)fake_enumerate_version},
        {"vkCreateInstance", (PFN_vkVoidFunction)fake_create_instance},
        {"vkDestroyInstance", (PFN_vkVoidFunction)fake_destroy_instance},
        {"vkEnumeratePhysicalDevices", (PFN_vkVoidFunction)fake_enumerate_physical_devices},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].fn;
    /* The loader requires every core entry point of a driver; with no
     * physical device none of the others is ever called. */
    return strncmp(name, "vk", 2) == 0 ? (PFN_vkVoidFunction)never_called : NULL;
}

FAKE_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetPhysicalDeviceProcAddr(VkInstance inst,
                                                                                     const char *name)
{
    (void)inst;
    (void)name;
    return NULL;
}
