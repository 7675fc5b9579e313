/* The Vulkan backend's private types: the loaded entry points, the device,
 * buffers, pipelines, and the helpers every op file shares. */
#ifndef LKV_VK_INTERNAL_H
#define LKV_VK_INTERNAL_H

#define VK_NO_PROTOTYPES /* every entry point comes from vk_symbols.h */
#include <vulkan/vulkan.h>

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"
#include "bind/bind_internal.h"
#include "host/host_symbols.h"

typedef struct lkv_vk_fns {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SLOT(ret, name, params)
#include "vk_symbols.h"
#undef LKV_SYM
} lkv_vk_fns;

/* A loaded libvulkan and one instance on it. */
typedef struct lkv_vk_instance {
    void *lib;
    lkv_vk_fns fn;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
} lkv_vk_instance;

typedef struct lkv_vk_pipeline {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
} lkv_vk_pipeline;

struct lkv_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    unsigned char *map; /* persistent mapping when the memory is host-visible */
};

#define LKV_VK_MAX_DEVICES 16

struct lkv_device {
    lkv_bind_device bind; /* first: the shared op plans reach it (backends/bind/) */
    lkv_vk_instance vi;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkDevice dev;
    int fns_loaded;    /* every device-group entry point resolved */
    VkQueue queue;
    uint32_t family;
    VkDeviceSize max_alloc; /* largest single allocation */
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    int recording;     /* cmd holds work not yet submitted */
    lkv_buffer *arena; /* host-visible: row lists of the recorded dispatches */
    VkDeviceSize arena_used;
    lkv_buffer *staging; /* host-visible bounce buffer when buffers are not */
    lkv_vk_pipeline pipes[LKV_BIND_PIPE_COUNT];
};

/* vk_loader.c */
/* Messages the validation layer has sent in this process. */
extern atomic_int lkv_vk_validation_messages;
lkv_status lkv_vk_instance_create(lkv_vk_instance *out_vi);
void lkv_vk_instance_destroy(lkv_vk_instance *vi);
lkv_status lkv_vk_load_device_fns(lkv_vk_instance *vi, VkDevice dev);
lkv_status lkv_vk_check(VkResult r, const char *what);
int lkv_vk_has_device_ext(lkv_vk_instance *vi, VkPhysicalDevice phys, const char *name);
/* Whether the physical device has what the backend needs; `why` if not. */
int lkv_vk_device_usable(lkv_vk_instance *vi, VkPhysicalDevice phys, char *why, size_t why_len);

/* vk_probe.c, vk_device.c, vk_settings.c */
lkv_status lkv_vk_probe(lkv_device_report *out, int cap, int *out_count);
lkv_status lkv_vk_open(int device, lkv_device **out_dev);
void lkv_vk_close(lkv_device *d);
/* Limits and knobs of the chosen physical device (d->phys) into d. */
lkv_status lkv_vk_settings(lkv_device *d);

/* vk_memory.c */
lkv_status lkv_vk_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf);
void lkv_vk_free(lkv_device *d, lkv_buffer *b);
lkv_status lkv_vk_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t bytes);
lkv_status lkv_vk_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t bytes);
lkv_status lkv_vk_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t bytes);
lkv_status lkv_vk_sync(lkv_device *d);
/* Grows a scratch buffer to at least `bytes` (contents not kept). */
lkv_status lkv_vk_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes);

/* vk_submit.c */
lkv_status lkv_vk_begin(lkv_device *d);
lkv_status lkv_vk_flush(lkv_device *d); /* submit what is recorded and wait */
void lkv_vk_barrier(lkv_device *d);
/* The driver table of the shared op plans (backends/bind/): list room and
 * placement in the host-visible arena (vk_submit.c), dispatch and pipeline
 * building (vk_pipeline.c). */
extern const lkv_bind_driver lkv_vk_bind_driver;
lkv_status lkv_vk_list_room(lkv_device *d, size_t bytes);
lkv_status lkv_vk_list_put(lkv_device *d, const uint32_t *words, size_t bytes, lkv_bind_buf *out_bind);
lkv_status lkv_vk_dispatch(lkv_device *d, lkv_bind_pipe pipe, const lkv_bind_buf *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz);
lkv_status lkv_vk_pipe_ready(lkv_device *d, lkv_bind_pipe id);
void lkv_vk_pipelines_destroy(lkv_device *d);

extern const lkv_backend_ops lkv_backend_vulkan;

#endif
