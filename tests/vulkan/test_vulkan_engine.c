/* An engine that owns its Vulkan objects embeds lazykv: it loads the
 * loader itself, makes its own instance (with the Khronos validation layer
 * and a messenger of its own when LAZYKV_VULKAN_VALIDATION is set), device
 * (with VK_KHR_push_descriptor), queue and buffers, opens lazykv on them
 * with lkv_runtime_open_external and checks wrap, store and a decode batch
 * on device arrays against the cpu oracle (engine_checks.h). Its uploads
 * are copies submitted to the shared queue without waiting, its downloads
 * copies it waits for, so the results show the queue hand-off of
 * docs/embedding.md both ways; the validation layer must stay silent,
 * including at the engine's vkDestroyDevice, which reports any object
 * lazykv left behind. Skips without Vulkan unless LAZYKV_REQUIRE_BACKENDS
 * names vulkan. */
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>

#include "../opencl/engine_checks.h"

#define MAX_BUFFERS 64
#define MAX_CMDS 1024
#define STAGING_BYTES ((VkDeviceSize)32 << 20)

typedef struct eng_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    VkDeviceSize size;
} eng_buf;

struct lkv_engine {
    void *lib;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkGetDeviceProcAddr gdpa;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkDevice dev;
    VkQueue queue;
    uint32_t family;
    VkCommandPool pool;
    VkCommandBuffer cmds[MAX_CMDS];
    int n_cmds;
    VkFence fence;
    eng_buf bufs[MAX_BUFFERS];
    int n_bufs;
    eng_buf staging, readback; /* host-visible: uploads bump through staging */
    VkDeviceSize staged;
};

static int messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)sev, (void)type, (void)user;
    messages++;
    fprintf(stderr, "engine: validation layer: %s\n", data && data->pMessage ? data->pMessage : "");
    return VK_FALSE;
}

#define IFN(e, name) ((PFN_##name)(e)->gipa((e)->instance, #name))
#define DFN(e, name) ((PFN_##name)(e)->gdpa((e)->dev, #name))

static int required(void)
{
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    return req && strstr(req, "vulkan") != NULL;
}

static void skip_or_fail(const char *why)
{
    cr_assert(!required(), "vulkan is required here: %s", why);
    cr_skip_test("%s", why);
}

static int has_layer(lkv_engine *e, const char *name)
{
    PFN_vkEnumerateInstanceLayerProperties en = IFN(e, vkEnumerateInstanceLayerProperties);
    VkLayerProperties p[64];
    uint32_t n = 64;
    if (en(&n, p) != VK_SUCCESS && n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(p[i].layerName, name))
            return 1;
    return 0;
}

static void make_instance(lkv_engine *e)
{
    const char *v = getenv("LAZYKV_VULKAN_VALIDATION");
    int validate = v && *v && strcmp(v, "0") && has_layer(e, "VK_LAYER_KHRONOS_validation");
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "engine", .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validate ? 1 : 0, .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = validate ? 1 : 0,
                               .ppEnabledExtensionNames = exts};
    if (IFN(e, vkCreateInstance)(&ci, NULL, &e->instance) != VK_SUCCESS)
        skip_or_fail("vkCreateInstance failed: no Vulkan driver");
    if (!validate)
        return;
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message};
    IFN(e, vkCreateDebugUtilsMessengerEXT)(e->instance, &mi, NULL, &e->messenger);
}

static void pick_device(lkv_engine *e)
{
    VkPhysicalDevice phys[8];
    uint32_t n = 8;
    VkResult r = IFN(e, vkEnumeratePhysicalDevices)(e->instance, &n, phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
        skip_or_fail("no Vulkan physical device");
    e->phys = phys[0];
    IFN(e, vkGetPhysicalDeviceProperties)(e->phys, &e->props);
    IFN(e, vkGetPhysicalDeviceMemoryProperties)(e->phys, &e->mem_props);
    VkQueueFamilyProperties fam[16];
    uint32_t nf = 16;
    IFN(e, vkGetPhysicalDeviceQueueFamilyProperties)(e->phys, &nf, fam);
    e->family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && e->family == UINT32_MAX; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            e->family = i;
    cr_assert_neq(e->family, UINT32_MAX, "no compute queue");
}

static void make_device(lkv_engine *e)
{
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = e->family, .queueCount = 1,
                                 .pQueuePriorities = &prio};
    const char *exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &q,
                             .enabledExtensionCount = 1, .ppEnabledExtensionNames = exts};
    cr_assert_eq(IFN(e, vkCreateDevice)(e->phys, &ci, NULL, &e->dev), VK_SUCCESS);
    e->gdpa = IFN(e, vkGetDeviceProcAddr);
    DFN(e, vkGetDeviceQueue)(e->dev, e->family, 0, &e->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = e->family};
    cr_assert_eq(DFN(e, vkCreateCommandPool)(e->dev, &pci, NULL, &e->pool), VK_SUCCESS);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    cr_assert_eq(DFN(e, vkCreateFence)(e->dev, &fci, NULL, &e->fence), VK_SUCCESS);
}

static eng_buf new_buffer(lkv_engine *e, VkDeviceSize bytes)
{
    eng_buf b = {.size = bytes};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    cr_assert_eq(DFN(e, vkCreateBuffer)(e->dev, &bci, NULL, &b.buf), VK_SUCCESS);
    VkMemoryRequirements req;
    DFN(e, vkGetBufferMemoryRequirements)(e->dev, b.buf, &req);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < e->mem_props.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) &&
            (e->mem_props.memoryTypes[i].propertyFlags & host) == host)
            type = i;
    cr_assert_neq(type, UINT32_MAX, "no host-visible memory");
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size, .memoryTypeIndex = type};
    cr_assert_eq(DFN(e, vkAllocateMemory)(e->dev, &mai, NULL, &b.mem), VK_SUCCESS);
    cr_assert_eq(DFN(e, vkBindBufferMemory)(e->dev, b.buf, b.mem, 0), VK_SUCCESS);
    cr_assert_eq(DFN(e, vkMapMemory)(e->dev, b.mem, 0, VK_WHOLE_SIZE, 0, &b.map), VK_SUCCESS);
    memset(b.map, 0, bytes);
    return b;
}

static void free_buffer(lkv_engine *e, eng_buf *b)
{
    DFN(e, vkDestroyBuffer)(e->dev, b->buf, NULL);
    DFN(e, vkFreeMemory)(e->dev, b->mem, NULL);
}

static uint64_t engine_buffer(lkv_engine *e, size_t bytes)
{
    cr_assert_lt(e->n_bufs, MAX_BUFFERS);
    e->bufs[e->n_bufs] = new_buffer(e, (bytes + 3) / 4 * 4);
    return (uint64_t)(uintptr_t)e->bufs[e->n_bufs++].buf;
}

/* One copy recorded and submitted on the shared queue; waited for when
 * `wait`. The engine's own barrier makes a download visible to its host. */
static void submit_copy(lkv_engine *e, VkBuffer from, VkDeviceSize from_off, VkBuffer to,
                        VkDeviceSize to_off, VkDeviceSize bytes, int wait)
{
    cr_assert_lt(e->n_cmds, MAX_CMDS);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = e->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cmd;
    cr_assert_eq(DFN(e, vkAllocateCommandBuffers)(e->dev, &ai, &cmd), VK_SUCCESS);
    e->cmds[e->n_cmds++] = cmd;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    DFN(e, vkBeginCommandBuffer)(cmd, &bi);
    VkBufferCopy region = {from_off, to_off, bytes};
    DFN(e, vkCmdCopyBuffer)(cmd, from, to, 1, &region);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    DFN(e, vkCmdPipelineBarrier)(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                                 1, &mb, 0, NULL, 0, NULL);
    DFN(e, vkEndCommandBuffer)(cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &cmd};
    cr_assert_eq(DFN(e, vkQueueSubmit)(e->queue, 1, &si, wait ? e->fence : VK_NULL_HANDLE),
                 VK_SUCCESS);
    if (wait) {
        cr_assert_eq(DFN(e, vkWaitForFences)(e->dev, 1, &e->fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
        DFN(e, vkResetFences)(e->dev, 1, &e->fence);
    }
}

static void engine_put(lkv_engine *e, uint64_t h, size_t off, const void *src, size_t bytes)
{
    cr_assert_leq(e->staged + bytes, STAGING_BYTES);
    memcpy((unsigned char *)e->staging.map + e->staged, src, bytes);
    submit_copy(e, e->staging.buf, e->staged, (VkBuffer)(uintptr_t)h, off, bytes, 0);
    e->staged = (e->staged + bytes + 15) / 16 * 16;
}

static void engine_get(lkv_engine *e, uint64_t h, size_t off, void *dst, size_t bytes)
{
    cr_assert_leq(bytes, STAGING_BYTES);
    submit_copy(e, (VkBuffer)(uintptr_t)h, off, e->readback.buf, 0, bytes, 1);
    memcpy(dst, e->readback.map, bytes);
}

static void engine_open(lkv_engine *e)
{
    memset(e, 0, sizeof *e);
    e->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!e->lib)
        skip_or_fail("no libvulkan.so.1");
    e->gipa = (PFN_vkGetInstanceProcAddr)dlsym(e->lib, "vkGetInstanceProcAddr");
    cr_assert_not_null(e->gipa);
    messages = 0;
    make_instance(e);
    pick_device(e);
    make_device(e);
    e->staging = new_buffer(e, STAGING_BYTES);
    e->readback = new_buffer(e, STAGING_BYTES);
}

static void engine_close(lkv_engine *e)
{
    DFN(e, vkQueueWaitIdle)(e->queue);
    for (int i = 0; i < e->n_bufs; i++)
        free_buffer(e, &e->bufs[i]);
    free_buffer(e, &e->staging);
    free_buffer(e, &e->readback);
    DFN(e, vkDestroyFence)(e->dev, e->fence, NULL);
    DFN(e, vkDestroyCommandPool)(e->dev, e->pool, NULL);
    IFN(e, vkDestroyDevice)(e->dev, NULL); /* reports objects lazykv left behind */
    if (e->messenger)
        IFN(e, vkDestroyDebugUtilsMessengerEXT)(e->instance, e->messenger, NULL);
    IFN(e, vkDestroyInstance)(e->instance, NULL);
    cr_assert_eq(messages, 0, "the validation layer spoke %d times", messages);
}

static lkv_runtime *lazykv_on(lkv_engine *e)
{
    lkv_external_device ext = {.backend = "vulkan", .instance = e->instance,
                               .physical_device = e->phys, .logical_device = e->dev,
                               .stream = e->queue, .queue_family = e->family};
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open_external(&ext, &rt));
    return rt;
}

Test(vulkan_engine, store_through_views_of_the_engine_s_buffers_matches_the_cpu)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    check_store_like_cpu(rt, &e, LKV_DTYPE_F32);
    check_store_like_cpu(rt, &e, LKV_DTYPE_F16);
    check_store_like_cpu(rt, &e, LKV_DTYPE_BF16);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(vulkan_engine, a_decode_batch_on_device_arrays_matches_host_arrays_on_the_cpu)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    check_decode_batch_like_cpu(rt, &e, LKV_DTYPE_F16);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(vulkan_engine, an_engine_cache_observing_device_rows_makes_the_cpu_s_plans)
{
    ON_ENGINE(check_observe_device_like_cpu);
}

Test(vulkan_engine, a_plan_applied_to_paged_device_k_v_moves_what_the_host_apply_moves)
{
    ON_ENGINE(check_plan_apply_device_like_host);
}

Test(vulkan_engine, a_cache_s_plan_applied_from_its_device_lists_moves_what_the_host_apply_moves)
{
    ON_ENGINE(check_cache_plan_device_like_host);
}

Test(vulkan_engine, probabilities_recomputed_from_device_q_k_and_lse_make_the_host_plans)
{
    ON_ENGINE(check_qk_device_like_host);
}

Test(vulkan_engine, prompt_votes_recomputed_from_device_q_k_and_lse_are_the_host_votes)
{
    ON_ENGINE(check_prompt_qk_device_like_host);
}

Test(vulkan_engine, wrap_refuses_an_offset_off_the_storage_buffer_alignment_naming_both)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    VkDeviceSize align = e.props.limits.minStorageBufferOffsetAlignment;
    check_wrap_refuses_misalignment(rt, engine_buffer(&e, 4096), align < 4 ? 4 : align);
    lkv_runtime_close(rt);
    engine_close(&e);
}

Test(vulkan_engine, a_queue_family_without_compute_or_missing_handles_are_refused)
{
    lkv_engine e;
    engine_open(&e);
    lkv_external_device ext = {.backend = "vulkan", .instance = e.instance,
                               .physical_device = e.phys, .logical_device = e.dev,
                               .stream = NULL, .queue_family = e.family};
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open_external(&ext, &rt), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "stream"), "message: %s", lkv_last_error());
    ext.stream = e.queue;
    ext.queue_family = 99;
    cr_assert_eq(lkv_runtime_open_external(&ext, &rt), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "queue_family 99"), "message: %s", lkv_last_error());
    engine_close(&e);
}

/* Closing lazykv destroys only its own objects (the validation layer at
 * the engine's vkDestroyDevice names any left), and the engine's queue
 * still works after it. */
Test(vulkan_engine, closing_lazykv_leaves_the_engine_s_objects_working)
{
    lkv_engine e;
    engine_open(&e);
    lkv_runtime *rt = lazykv_on(&e);
    uint64_t h = engine_buffer(&e, 64);
    lkv_buffer *scratch = NULL;
    TU_OK(rt->ops->alloc(rt->dev, 256, &scratch)); /* lazykv's own, freed by it */
    rt->ops->free(rt->dev, scratch);
    lkv_runtime_close(rt);
    const float x[4] = {1, 2, 3, 4};
    float y[4] = {0};
    engine_put(&e, h, 16, x, sizeof x);
    engine_get(&e, h, 16, y, sizeof y);
    cr_assert(memcmp(x, y, sizeof x) == 0);
    engine_close(&e);
}
