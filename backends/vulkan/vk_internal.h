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
    VkDeviceMemory mem;     /* VK_NULL_HANDLE for a view (wrap) */
    VkDeviceSize size;
    VkDeviceSize base;      /* a view's offset into buf, added to every use */
    unsigned char *map;     /* persistent mapping when the memory is host-visible */
    int view;               /* the engine's VkBuffer: free() drops only this struct */
    uint64_t free_after;    /* freed while in use: destroyed once this submission is done */
    lkv_buffer *next_freed;
};

/* One command buffer of the ring work is recorded into and submitted from
 * without waiting (vk_submit.c), with the row lists its dispatches read. */
typedef struct lkv_vk_slot {
    VkCommandBuffer cmd;
    VkFence fence;
    int pending;        /* submitted, and not yet seen complete */
    int fence_used;     /* signalled once: reset before the next submission */
    uint64_t serial;    /* its submission's number */
    lkv_buffer *arena;  /* host-visible: row lists of its dispatches */
    VkDeviceSize arena_used;
} lkv_vk_slot;

/* Submissions in flight before taking a command buffer waits for the
 * oldest (counted as a sync). */
#define LKV_VK_SLOTS 32

#define LKV_VK_MAX_DEVICES 16

/* Waits a submission carries before its work (vk_submit.c): other handles'
 * timeline values (lanes, vk_lane.c). More pending go out in a submission
 * of their own. */
#define LKV_VK_WAITS 8

/* A point in one handle's submissions: its timeline at a value. */
struct lkv_mark {
    VkSemaphore timeline;
    uint64_t value;
};

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
    uint32_t queues;   /* queues made in the family (2 where it has them: a lane takes the second) */
    /* Held around vkQueueSubmit: a lane on a one-queue family shares its
     * parent's VkQueue, and lanes share the second one. NULL for an
     * engine's queue (the engine synchronises it; no lanes). */
    pthread_mutex_t *queue_mu;
    pthread_mutex_t queue_locks[2]; /* a parent's, per queue index */
    int queue_locks_made;
    /* Signalled with each submission's serial where the device has timeline
     * semaphores (lanes need them); VK_NULL_HANDLE otherwise. */
    VkSemaphore timeline;
    lkv_device *lane_of; /* a lane: the device it shares everything with but its queue */
    /* A parent's timelines of closed lanes, each with the last value it was
     * signalled with, for the next lane to go on from: a timeline is
     * destroyed only with the device, after its queues are idle (lavapipe's
     * queue thread was seen to touch a destroyed one after every fence of
     * the work that named it had signalled). Under the parent's lock. */
    VkSemaphore *spare;
    uint64_t *spare_value;
    int n_spare, spare_cap;
    VkSemaphore waits[LKV_VK_WAITS]; /* for the next submission (wait_mark) */
    uint64_t wait_values[LKV_VK_WAITS];
    int n_waits;
    VkDeviceSize max_alloc; /* largest single allocation */
    int external;      /* instance, device and queue are the engine's: never destroyed */
    VkCommandPool pool;
    lkv_vk_slot slots[LKV_VK_SLOTS];
    int n_slots;
    int cur;           /* the slot being recorded, -1 when none */
    VkCommandBuffer cmd; /* slots[cur].cmd while recording */
    int recording;     /* cmd holds work not yet submitted */
    uint64_t submitted; /* submissions made */
    uint64_t completed; /* every submission up to this one is done */
    lkv_buffer *freed;  /* buffers freed while submissions may still use them */
    lkv_buffer *staging; /* host-visible bounce buffer when buffers are not */
    lkv_vk_pipeline pipes[LKV_BIND_PIPE_COUNT];
};

/* vk_loader.c */
/* Messages the validation layer has sent in this process. */
extern atomic_int lkv_vk_validation_messages;
lkv_status lkv_vk_instance_create(lkv_vk_instance *out_vi);
void lkv_vk_instance_destroy(lkv_vk_instance *vi);
/* The loader and the instance entry points of an engine's VkInstance,
 * which lazykv never destroys (the library stays loaded, as always). */
lkv_status lkv_vk_instance_borrow(VkInstance instance, lkv_vk_instance *out_vi);
lkv_status lkv_vk_load_device_fns(lkv_vk_instance *vi, VkDevice dev);
lkv_status lkv_vk_check(VkResult r, const char *what);
int lkv_vk_has_device_ext(lkv_vk_instance *vi, VkPhysicalDevice phys, const char *name);
/* Whether the physical device has what the backend needs; `why` if not. */
int lkv_vk_device_usable(lkv_vk_instance *vi, VkPhysicalDevice phys, char *why, size_t why_len);

/* vk_probe.c, vk_device.c, vk_settings.c */
lkv_status lkv_vk_probe(lkv_device_report *out, int cap, int *out_count);
lkv_status lkv_vk_open(int device, lkv_device **out_dev);
/* vk_external.c: the engine's instance, device and queue. */
lkv_status lkv_vk_open_external(const lkv_external_device *ext, lkv_device **out_dev);
/* vk_device.c: the command pool and the first slot on d->dev and d->family
 * (shared by both opens). */
lkv_status lkv_vk_device_objects(lkv_device *d);
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
/* The same for a host-visible buffer (staging, row lists). */
lkv_status lkv_vk_reserve_host(lkv_device *d, lkv_buffer **buf, size_t bytes);
/* Destroys a buffer's Vulkan objects now (nothing may still use them). */
void lkv_vk_destroy_buffer(lkv_device *d, lkv_buffer *b);
/* A view of the engine's VkBuffer from `offset` (the ops table's wrap). */
lkv_status lkv_vk_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf);

/* vk_submit.c: a ring of command buffers. begin takes one (waiting for
 * the oldest only when all LKV_VK_SLOTS are in flight), submit hands it to
 * the queue with its fence and no wait, wait_idle waits for every
 * submission (the host waits of read, sync and a large write). Each
 * command buffer opens and closes with a full memory barrier, which orders
 * it after everything submitted to the queue before it and before
 * everything after: between lazykv's own submissions, and the hand-off
 * with an engine sharing the queue (docs/embedding.md, "Vulkan"). */
lkv_status lkv_vk_begin(lkv_device *d);
lkv_status lkv_vk_submit(lkv_device *d);
/* Ends the recording unsubmitted: its commands never run. */
void lkv_vk_discard(lkv_device *d);
/* Submits what is recorded and waits for all submitted work; a wait on
 * pending work counts as a sync (and always when `count`). */
lkv_status lkv_vk_wait_idle(lkv_device *d, int count);
/* Whether nothing is recorded or in flight (completions polled). */
int lkv_vk_idle(lkv_device *d);
/* Frees b now if idle, else once the last submission that may use it is
 * done. */
void lkv_vk_free_later(lkv_device *d, lkv_buffer *b);
/* The bind driver's end_entry: submit (OK) or discard (failed). */
void lkv_vk_end_entry(lkv_device *d, lkv_status *st);
/* Waits for every slot and frees the ring (close). */
void lkv_vk_ring_destroy(lkv_device *d);
void lkv_vk_barrier(lkv_device *d);
/* Submits what is recorded, and the pending waits (lkv_vk_add_wait) in an
 * empty submission of their own when nothing is recorded to carry them. */
lkv_status lkv_vk_flush(lkv_device *d);
/* A wait the next submission carries (wait_mark); flushes what is recorded
 * first, so only later work waits. */
lkv_status lkv_vk_add_wait(lkv_device *d, VkSemaphore timeline, uint64_t value);

/* vk_lane.c: lanes (core/backend.h). The timeline semaphore feature is
 * asked for at device creation where the device has it. lane_open, mark
 * and wait_mark are the bind driver's (unlocked; the ops table has them
 * locked, bind_backend.c). */
int lkv_vk_has_timeline(lkv_device *d);
lkv_status lkv_vk_timeline_create(lkv_device *d);
lkv_status lkv_vk_lane_open(lkv_device *d, lkv_device **out_lane);
/* close: a lane hands its timeline back to its parent; the parent destroys
 * its own and its lanes' once its queues are idle. */
void lkv_vk_lane_retire(lkv_device *lane);
void lkv_vk_timelines_destroy(lkv_device *d);
lkv_status lkv_vk_mark(lkv_device *d, lkv_mark **out_mark);
lkv_status lkv_vk_wait_mark(lkv_device *d, const lkv_mark *mark);
void lkv_vk_mark_free(lkv_device *d, lkv_mark *mark);
/* A second hardware queue on a GPU (lavapipe has one queue, on the CPU). */
int lkv_vk_lanes_concurrent(lkv_device *d);
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
