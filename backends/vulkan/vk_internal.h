/* The Vulkan backend's private types: the loaded entry points, the device,
 * buffers, pipelines, and the helpers every op file shares. */
#ifndef LKV_VK_INTERNAL_H
#define LKV_VK_INTERNAL_H

#define VK_NO_PROTOTYPES /* every entry point comes from vk_symbols.h */
#include <vulkan/vulkan.h>

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"

typedef struct lkv_vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define LKV_VK_GLOBAL(name) PFN_##name name;
#define LKV_VK_INSTANCE(name) PFN_##name name;
#define LKV_VK_INSTANCE_OPT(name) PFN_##name name;
#define LKV_VK_DEVICE(name) PFN_##name name;
#include "vk_symbols.h"
#undef LKV_VK_GLOBAL
#undef LKV_VK_INSTANCE
#undef LKV_VK_INSTANCE_OPT
#undef LKV_VK_DEVICE
} lkv_vk_fns;

/* A loaded libvulkan and one instance on it. */
typedef struct lkv_vk_instance {
    void *lib;
    lkv_vk_fns fn;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
} lkv_vk_instance;

typedef enum lkv_vk_pipe_id {
#define LKV_VK_PIPE(name, bindings, push) LKV_VK_PIPE_##name,
#include "vk_pipelines.h"
#undef LKV_VK_PIPE
    LKV_VK_PIPE_COUNT
} lkv_vk_pipe_id;

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
    pthread_mutex_t lock; /* held by every op entry (vk_backend.c) */
    int locked;           /* lock initialised */
    lkv_vk_instance vi;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkDevice dev;
    int fns_loaded;    /* every LKV_VK_DEVICE entry point resolved */
    VkQueue queue;
    uint32_t family;
    int has_f64;       /* shaderFloat64: scores in double, as the oracle */
    uint32_t wg;       /* workgroup size: a power of two, a specialization constant */
    uint32_t max_groups; /* workgroups worth launching at once (see workgroup_budget) */
    VkDeviceSize max_range, align; /* storage-buffer binding limits */
    VkDeviceSize max_alloc;        /* largest single allocation */
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    int recording;     /* cmd holds work not yet submitted */
    lkv_buffer *arena; /* host-visible: row lists of the recorded dispatches */
    VkDeviceSize arena_used;
    lkv_buffer *staging; /* host-visible bounce buffer when buffers are not */
    lkv_buffer *logits, *partials, *lse; /* attend scratch, grown on demand */
    lkv_buffer *compact_scratch;         /* compact's gather rounds */
    lkv_vk_pipeline pipes[LKV_VK_PIPE_COUNT];
};

/* One storage-buffer binding of a dispatch. */
typedef struct lkv_vk_binding {
    const lkv_buffer *buf;
    VkDeviceSize offset, range;
} lkv_vk_binding;

/* A window over rows [lo, hi] of a [rows][per_row] buffer of `elem`-byte
 * values: the binding and the elements that precede row lo in it (the
 * binding offset is rounded down to the device's alignment). */
typedef struct lkv_vk_window {
    lkv_vk_binding bind;
    uint32_t skew;
} lkv_vk_window;

/* vk_loader.c */
/* Messages the validation layer has sent in this process. */
extern atomic_int lkv_vk_validation_messages;
lkv_status lkv_vk_instance_create(lkv_vk_instance *out_vi);
void lkv_vk_instance_destroy(lkv_vk_instance *vi);
lkv_status lkv_vk_load_device_fns(lkv_vk_instance *vi, VkDevice dev);
lkv_status lkv_vk_check(VkResult r, const char *what);
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
/* Makes room for `bytes` of lists (one op's, all runs, alignment included)
 * before the op records anything, so putting them cannot fail half-way. */
lkv_status lkv_vk_arena_room(lkv_device *d, size_t bytes);
/* Room for an op's lists of `n_rows` entries of `ncols` columns. */
static inline size_t lkv_vk_list_bytes(const lkv_device *d, int32_t n_rows, int ncols)
{
    return (size_t)n_rows * ((size_t)ncols * 4 + (size_t)d->align) + (size_t)d->align;
}
/* Writes entries first .. first+len of `ncols` host int32 columns (rows,
 * row_n, ...) interleaved into the arena, for the shader's `list`. */
lkv_status lkv_vk_put_list(lkv_device *d, const int32_t *const *cols, int ncols, int32_t first,
                           int32_t len, lkv_vk_binding *out_bind);

/* vk_pipeline.c */
lkv_status lkv_vk_dispatch(lkv_device *d, lkv_vk_pipe_id pipe, const lkv_vk_binding *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz);
/* Builds a pipeline now, so an op can acquire everything before recording. */
lkv_status lkv_vk_pipe_ready(lkv_device *d, lkv_vk_pipe_id id);
void lkv_vk_pipelines_destroy(lkv_device *d);

/* vk_window.c */
lkv_vk_window lkv_vk_window_of(const lkv_device *d, const lkv_buffer *b, int64_t row_lo,
                               int64_t row_hi, VkDeviceSize row_bytes, uint32_t elem);
/* Splits a row list into runs that fit one dispatch: rows spanning at most
 * `rows_fit` consecutive rows, at most the device's group count, whole
 * multiples of `unit` entries. Returns the run length starting at `first`. */
int32_t lkv_vk_run(const lkv_device *d, const int32_t *rows, int32_t count, int32_t first,
                   int64_t rows_fit, int32_t unit, int64_t *out_lo, int64_t *out_hi);
/* The largest of v[first .. first+len): a run's longest row, which sizes
 * its grid. */
int32_t lkv_vk_longest(const int32_t *v, int32_t first, int32_t len);
/* How many consecutive rows of `row_bytes` one binding can span. */
int64_t lkv_vk_rows_fit(const lkv_device *d, VkDeviceSize row_bytes);
/* Workgroups along x for `items` invocations in each of `rows` rows of a
 * grid-stride dispatch: one per item, within the device's budget. */
uint32_t lkv_vk_groups(const lkv_device *d, int64_t items, int64_t rows);

/* The ops (one file each). */
lkv_status lkv_vk_attend(lkv_device *d, const lkv_attend_args *a);
lkv_status lkv_vk_observe(lkv_device *d, const lkv_observe_args *a);
lkv_status lkv_vk_score(lkv_device *d, const lkv_score_args *a);
lkv_status lkv_vk_select(lkv_device *d, const lkv_select_args *a);
lkv_status lkv_vk_compact(lkv_device *d, const lkv_compact_args *a);

extern const lkv_backend_ops lkv_backend_vulkan;

#endif
