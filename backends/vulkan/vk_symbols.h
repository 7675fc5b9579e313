/* Every Vulkan entry point the backend uses, one line each in the shape of
 * backends/host/host_symbols.h: LKV_SYM(group, REQ or OPT, return type,
 * name, (parameter types)); expanded into the function table
 * (vk_internal.h), into the table vk_loader.c resolves, and into a check of
 * each line against vulkan.h's own PFN_ type (vk_loader.c). The group says
 * where it is looked up:
 *   lib       dlsym on the loader library
 *   global    vkGetInstanceProcAddr(NULL, ...)
 *   instance  vkGetInstanceProcAddr per instance
 *   device    vkGetDeviceProcAddr per device
 * A missing REQ symbol makes the backend unavailable, with its name; an OPT
 * one is NULL. */

LKV_SYM(lib, REQ, PFN_vkVoidFunction, vkGetInstanceProcAddr, (VkInstance, const char *))

LKV_SYM(global, REQ, VkResult, vkCreateInstance, (const VkInstanceCreateInfo *,
        const VkAllocationCallbacks *, VkInstance *))
LKV_SYM(global, REQ, VkResult, vkEnumerateInstanceLayerProperties, (uint32_t *,
        VkLayerProperties *))
LKV_SYM(global, REQ, VkResult, vkEnumerateInstanceExtensionProperties, (const char *, uint32_t *,
        VkExtensionProperties *))

LKV_SYM(instance, REQ, void, vkDestroyInstance, (VkInstance, const VkAllocationCallbacks *))
LKV_SYM(instance, REQ, VkResult, vkEnumeratePhysicalDevices, (VkInstance, uint32_t *,
        VkPhysicalDevice *))
LKV_SYM(instance, REQ, void, vkGetPhysicalDeviceProperties, (VkPhysicalDevice,
        VkPhysicalDeviceProperties *))
LKV_SYM(instance, REQ, void, vkGetPhysicalDeviceProperties2, (VkPhysicalDevice,
        VkPhysicalDeviceProperties2 *))
LKV_SYM(instance, REQ, void, vkGetPhysicalDeviceFeatures, (VkPhysicalDevice,
        VkPhysicalDeviceFeatures *))
/* Vulkan 1.1: whether the device has timeline semaphores (lanes). */
LKV_SYM(instance, OPT, void, vkGetPhysicalDeviceFeatures2, (VkPhysicalDevice,
        VkPhysicalDeviceFeatures2 *))
LKV_SYM(instance, REQ, void, vkGetPhysicalDeviceMemoryProperties, (VkPhysicalDevice,
        VkPhysicalDeviceMemoryProperties *))
LKV_SYM(instance, REQ, void, vkGetPhysicalDeviceQueueFamilyProperties, (VkPhysicalDevice,
        uint32_t *, VkQueueFamilyProperties *))
LKV_SYM(instance, REQ, VkResult, vkEnumerateDeviceExtensionProperties, (VkPhysicalDevice,
        const char *, uint32_t *, VkExtensionProperties *))
LKV_SYM(instance, REQ, VkResult, vkCreateDevice, (VkPhysicalDevice, const VkDeviceCreateInfo *,
        const VkAllocationCallbacks *, VkDevice *))
LKV_SYM(instance, REQ, PFN_vkVoidFunction, vkGetDeviceProcAddr, (VkDevice, const char *))
LKV_SYM(instance, OPT, VkResult, vkCreateDebugUtilsMessengerEXT, (VkInstance,
        const VkDebugUtilsMessengerCreateInfoEXT *, const VkAllocationCallbacks *,
        VkDebugUtilsMessengerEXT *))
LKV_SYM(instance, OPT, void, vkDestroyDebugUtilsMessengerEXT, (VkInstance, VkDebugUtilsMessengerEXT,
        const VkAllocationCallbacks *))

LKV_SYM(device, REQ, void, vkDestroyDevice, (VkDevice, const VkAllocationCallbacks *))
LKV_SYM(device, REQ, void, vkGetDeviceQueue, (VkDevice, uint32_t, uint32_t, VkQueue *))
LKV_SYM(device, REQ, VkResult, vkDeviceWaitIdle, (VkDevice))
LKV_SYM(device, REQ, VkResult, vkCreateBuffer, (VkDevice, const VkBufferCreateInfo *,
        const VkAllocationCallbacks *, VkBuffer *))
LKV_SYM(device, REQ, void, vkDestroyBuffer, (VkDevice, VkBuffer, const VkAllocationCallbacks *))
LKV_SYM(device, REQ, void, vkGetBufferMemoryRequirements, (VkDevice, VkBuffer,
        VkMemoryRequirements *))
LKV_SYM(device, REQ, VkResult, vkAllocateMemory, (VkDevice, const VkMemoryAllocateInfo *,
        const VkAllocationCallbacks *, VkDeviceMemory *))
LKV_SYM(device, REQ, void, vkFreeMemory, (VkDevice, VkDeviceMemory, const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkBindBufferMemory, (VkDevice, VkBuffer, VkDeviceMemory,
        VkDeviceSize))
LKV_SYM(device, REQ, VkResult, vkMapMemory, (VkDevice, VkDeviceMemory, VkDeviceSize, VkDeviceSize,
        VkMemoryMapFlags, void **))
LKV_SYM(device, REQ, void, vkUnmapMemory, (VkDevice, VkDeviceMemory))
LKV_SYM(device, REQ, VkResult, vkCreateShaderModule, (VkDevice, const VkShaderModuleCreateInfo *,
        const VkAllocationCallbacks *, VkShaderModule *))
LKV_SYM(device, REQ, void, vkDestroyShaderModule, (VkDevice, VkShaderModule,
        const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkCreateDescriptorSetLayout, (VkDevice,
        const VkDescriptorSetLayoutCreateInfo *, const VkAllocationCallbacks *,
        VkDescriptorSetLayout *))
LKV_SYM(device, REQ, void, vkDestroyDescriptorSetLayout, (VkDevice, VkDescriptorSetLayout,
        const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkCreatePipelineLayout, (VkDevice,
        const VkPipelineLayoutCreateInfo *, const VkAllocationCallbacks *, VkPipelineLayout *))
LKV_SYM(device, REQ, void, vkDestroyPipelineLayout, (VkDevice, VkPipelineLayout,
        const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkCreateComputePipelines, (VkDevice, VkPipelineCache, uint32_t,
        const VkComputePipelineCreateInfo *, const VkAllocationCallbacks *, VkPipeline *))
LKV_SYM(device, REQ, void, vkDestroyPipeline, (VkDevice, VkPipeline, const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkCreateCommandPool, (VkDevice, const VkCommandPoolCreateInfo *,
        const VkAllocationCallbacks *, VkCommandPool *))
LKV_SYM(device, REQ, void, vkDestroyCommandPool, (VkDevice, VkCommandPool,
        const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkAllocateCommandBuffers, (VkDevice,
        const VkCommandBufferAllocateInfo *, VkCommandBuffer *))
LKV_SYM(device, REQ, VkResult, vkBeginCommandBuffer, (VkCommandBuffer,
        const VkCommandBufferBeginInfo *))
LKV_SYM(device, REQ, VkResult, vkEndCommandBuffer, (VkCommandBuffer))
LKV_SYM(device, REQ, VkResult, vkResetCommandBuffer, (VkCommandBuffer, VkCommandBufferResetFlags))
LKV_SYM(device, REQ, void, vkCmdBindPipeline, (VkCommandBuffer, VkPipelineBindPoint, VkPipeline))
LKV_SYM(device, REQ, void, vkCmdPushConstants, (VkCommandBuffer, VkPipelineLayout,
        VkShaderStageFlags, uint32_t, uint32_t, const void *))
LKV_SYM(device, REQ, void, vkCmdPushDescriptorSetKHR, (VkCommandBuffer, VkPipelineBindPoint,
        VkPipelineLayout, uint32_t, uint32_t, const VkWriteDescriptorSet *))
LKV_SYM(device, REQ, void, vkCmdDispatch, (VkCommandBuffer, uint32_t, uint32_t, uint32_t))
LKV_SYM(device, REQ, void, vkCmdPipelineBarrier, (VkCommandBuffer, VkPipelineStageFlags,
        VkPipelineStageFlags, VkDependencyFlags, uint32_t, const VkMemoryBarrier *, uint32_t,
        const VkBufferMemoryBarrier *, uint32_t, const VkImageMemoryBarrier *))
LKV_SYM(device, REQ, void, vkCmdCopyBuffer, (VkCommandBuffer, VkBuffer, VkBuffer, uint32_t,
        const VkBufferCopy *))
LKV_SYM(device, REQ, void, vkCmdFillBuffer, (VkCommandBuffer, VkBuffer, VkDeviceSize, VkDeviceSize,
        uint32_t))
LKV_SYM(device, REQ, void, vkCmdUpdateBuffer, (VkCommandBuffer, VkBuffer, VkDeviceSize,
        VkDeviceSize, const void *))
LKV_SYM(device, REQ, VkResult, vkQueueSubmit, (VkQueue, uint32_t, const VkSubmitInfo *, VkFence))
LKV_SYM(device, REQ, VkResult, vkQueueWaitIdle, (VkQueue))
LKV_SYM(device, REQ, VkResult, vkCreateSemaphore, (VkDevice, const VkSemaphoreCreateInfo *,
        const VkAllocationCallbacks *, VkSemaphore *))
LKV_SYM(device, REQ, void, vkDestroySemaphore, (VkDevice, VkSemaphore,
        const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkCreateFence, (VkDevice, const VkFenceCreateInfo *,
        const VkAllocationCallbacks *, VkFence *))
LKV_SYM(device, REQ, void, vkDestroyFence, (VkDevice, VkFence, const VkAllocationCallbacks *))
LKV_SYM(device, REQ, VkResult, vkWaitForFences, (VkDevice, uint32_t, const VkFence *, VkBool32,
        uint64_t))
LKV_SYM(device, REQ, VkResult, vkResetFences, (VkDevice, uint32_t, const VkFence *))
LKV_SYM(device, REQ, VkResult, vkGetFenceStatus, (VkDevice, VkFence))
LKV_SYM(device, REQ, void, vkFreeCommandBuffers, (VkDevice, VkCommandPool, uint32_t,
        const VkCommandBuffer *))
