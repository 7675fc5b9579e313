/* The host side shared by the CUDA and HIP backends (and the test suite's
 * CPU SIMT emulator): buffers, scratch, row-list uploads and the launch
 * sequence of every op, written once against a small driver table. The
 * kernels they launch are one source (the .cu files in backends/gpu/kernels/); a backend
 * folder only loads its driver and module and fills the table.
 *
 * Work is ordered on the one stream the driver holds (one lazykv created, or
 * the engine's, borrowed through open_external), so a copy or launch sees
 * everything issued before it. Nothing but a read, a sync or a full staging
 * ring makes the host wait for the device: host-to-device copies go from a
 * ring of page-locked staging regions (lkv_gpu_stage), each reused only once
 * the event recorded after its copy has passed. A lane (gpu_lane.c) is a
 * second device handle with a stream, ring and scratch of its own on the
 * same device; the two are ordered only through marks (events). */
#ifndef LKV_GPU_INTERNAL_H
#define LKV_GPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "host/host_locked.h"

typedef uint64_t lkv_gpu_ptr; /* a device address (CUdeviceptr, hipDeviceptr_t) */

typedef enum lkv_gpu_kernel_id {
#define LKV_GPU_KERNEL(name) LKV_GPU_K_##name,
#include "gpu_kernels.h"
#undef LKV_GPU_KERNEL
    LKV_GPU_KERNEL_COUNT
} lkv_gpu_kernel_id;

/* The entry-point names, indexed by lkv_gpu_kernel_id (gpu_kernels.c). */
extern const char *const lkv_gpu_kernel_names[];

/* One kernel launch: a 3-D grid of 1-D blocks. `args` points at each
 * parameter's value in order, as cuLaunchKernel and hipModuleLaunchKernel take
 * them; a pointer parameter is passed as an lkv_gpu_ptr. */
typedef struct lkv_gpu_launch {
    lkv_gpu_kernel_id kernel;
    uint32_t grid[3];
    uint32_t block; /* threads, a multiple of 64, at most LKV_BLOCK_MAX (256) */
    void **args;
} lkv_gpu_launch;

/* What a driver does for the shared code. `api` is the driver's own state.
 * Every call may fail with a status and a message naming the driver call. */
typedef struct lkv_gpu_driver {
    const char *name; /* "cuda", "hip", "gpu-emu": prefixes messages */
    /* Makes the device current on the calling thread for the calls that
     * follow, and undoes it (cuCtxPushCurrent / cuCtxPopCurrent). */
    lkv_status (*enter)(void *api);
    void (*leave)(void *api);
    lkv_status (*mem_alloc)(void *api, size_t bytes, lkv_gpu_ptr *out_ptr);
    void (*mem_free)(void *api, lkv_gpu_ptr ptr);
    /* Queued on the stream, like every call below but dtoh and sync. */
    lkv_status (*mem_zero)(void *api, lkv_gpu_ptr ptr, size_t bytes);
    /* Page-locked host memory for staging (cuMemHostAlloc, hipHostMalloc). */
    lkv_status (*host_alloc)(void *api, size_t bytes, void **out_host);
    void (*host_free)(void *api, void *host);
    /* Queues a copy from page-locked `src` (host_alloc's), which must stay
     * as it is until an event recorded after the copy has passed. */
    lkv_status (*htod_async)(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes);
    /* Returns once `dst` holds the data: waits for the stream. */
    lkv_status (*dtoh)(void *api, void *dst, lkv_gpu_ptr src, size_t bytes);
    lkv_status (*dtod)(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes);
    lkv_status (*launch)(void *api, const lkv_gpu_launch *launch);
    /* launch with every block of the grid resident on the device at once
     * (cuLaunchCooperativeKernel, hipModuleLaunchCooperativeKernel), as a
     * kernel that calls lkv_grid_wait (kernels/lkv_gpu.h) needs.
     * LKV_UNSUPPORTED, with a message naming the grid's blocks and the
     * limit, when the grid does not fit on the device at once: nothing is
     * launched and nothing changes. Other failures as launch. NULL when the
     * driver has no cooperative launch. */
    lkv_status (*launch_cooperative)(void *api, const lkv_gpu_launch *launch);
    /* Blocks of `block` threads of `kernel` one multiprocessor holds at once
     * (cuOccupancyMaxActiveBlocksPerMultiprocessor); NULL, or a failure,
     * leaves the planner its default (backends/plan/attend_plan.h). */
    lkv_status (*occupancy)(void *api, lkv_gpu_kernel_id kernel, uint32_t block,
                            int *out_blocks);
    /* Events on the stream: record marks everything queued so far; done
     * asks without waiting (*out_done 1 once it passed); wait blocks. */
    lkv_status (*event_create)(void *api, void **out_event);
    void (*event_destroy)(void *api, void *event);
    lkv_status (*event_record)(void *api, void *event);
    lkv_status (*event_done)(void *api, void *event, int *out_done);
    lkv_status (*event_wait)(void *api, void *event);
    /* Waits for everything queued on the stream. */
    lkv_status (*sync)(void *api);
    /* Told of memory the caller lends through wrap (on = 1) and of the view
     * going away (on = 0), for a driver that checks addresses (gpu-emu);
     * NULL for the others: a view needs no driver call. */
    lkv_status (*borrow)(void *api, lkv_gpu_ptr ptr, size_t bytes, int on);
    /* Lanes (gpu_lane.c). lane_open makes a second state on the same
     * device (context, module) with a stream of its own, called with `api`
     * entered: every allocation of either is valid on both, and closing it
     * (close) releases only its stream and what it made, so `api` must
     * outlive it. UNSUPPORTED, with the reason, when the device cannot (it
     * runs on an engine's borrowed stream). stream_wait makes work queued
     * on the stream from now on wait for `event`, recorded by this state or
     * another of the same device; the host does not wait. */
    lkv_status (*lane_open)(void *api, void **out_api);
    lkv_status (*stream_wait)(void *api, void *event);
    /* Releases everything `api` holds; the device is gone after it. */
    void (*close)(void *api);
} lkv_gpu_driver;

/* What the shared code needs to know of the device, filled by the driver. */
typedef struct lkv_gpu_limits {
    int warp;            /* threads per warp or wavefront: 32 or 64 */
    int multiprocessors; /* SMs / CUs: how many blocks keep the device busy */
    uint32_t max_grid_y, max_grid_z; /* grid limits (x is at least 2^31 - 1) */
} lkv_gpu_limits;

struct lkv_buffer {
    lkv_gpu_ptr ptr;
    size_t size;
    int borrowed; /* wrap's view of memory the caller owns: never freed here */
};

/* One region of the staging ring: page-locked host memory a copy reads
 * from, and the event recorded after that copy. */
typedef struct lkv_gpu_stage {
    unsigned char *host;
    size_t cap;
    void *event;  /* created on first use */
    int pending;  /* a copy from `host` may still be running */
} lkv_gpu_stage;

/* Regions in the ring: so many host-to-device copies may be in flight
 * before the oldest must have finished. */
#define LKV_GPU_STAGES 16
/* Outgrown scratch buffers kept until the next host wait. */
#define LKV_GPU_RETIRED 16
/* The most bytes one region takes: a larger write goes in pieces. */
#define LKV_GPU_STAGE_MAX ((size_t)1 << 20)

struct lkv_device {
    lkv_host_lock lock; /* first: held by every locked entry (host/host_locked.h) */
    const lkv_gpu_driver *drv;
    void *api;
    lkv_gpu_limits lim;
    /* A lane (lkv_gpu_lane_open): its own stream, staging ring, row lists
     * and scratch on another handle's device, so close waits for it. */
    int lane;
    /* Row lists of the current op, uploaded in one copy (lkv_gpu_upload). */
    lkv_buffer *lists;
    unsigned char *lists_host; /* where they are packed first */
    size_t lists_host_cap;
    /* The staging ring (gpu_stage.c); `next` is the region used next. */
    lkv_gpu_stage stages[LKV_GPU_STAGES];
    int next_stage;
    /* Scratch outgrown while work may still read it: freeing device memory
     * waits for the device, so it is freed at the next host wait instead
     * (lkv_gpu_read, lkv_gpu_sync) or at close. */
    lkv_buffer *retired[LKV_GPU_RETIRED];
    int n_retired;
    /* What the device did, for the counters op: counted where it happens. */
    lkv_counters counters;
    /* Op scratch, grown on demand and kept (lkv_gpu_reserve). */
    lkv_buffer *logits, *partials, *lse, *attend_done, *compact_scratch, *select_sync;
    int64_t attend_batch_bytes; /* scratch budget of an attend batch (gpu_attend.c) */
    int cooperative;            /* attend may launch cooperatively (gpu_attend.c) */
    /* Each kernel's resident blocks a multiprocessor at the launch block
     * the host uses, asked once (drv->occupancy): 0 not asked yet, -1 the
     * driver could not say. */
    int resident[LKV_GPU_KERNEL_COUNT];
};

/* gpu_device.c: wraps an opened driver into a device, and tears it down. On
 * failure the driver is closed. */
lkv_status lkv_gpu_device_create(const lkv_gpu_driver *drv, void *api, const lkv_gpu_limits *lim,
                                 lkv_device **out_dev);
void lkv_gpu_close(lkv_device *d);

/* gpu_memory.c: the ops table's buffer entries (called with the lock held). */
lkv_status lkv_gpu_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf);
void lkv_gpu_free(lkv_device *d, lkv_buffer *b);
lkv_status lkv_gpu_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n);
lkv_status lkv_gpu_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n);
lkv_status lkv_gpu_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                        size_t src_off, size_t n);
lkv_status lkv_gpu_sync(lkv_device *d);

/* wrap: a view of caller-owned device memory at handle + offset. */
lkv_status lkv_gpu_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                        lkv_buffer **out_buf);

/* gpu_stage.c: a staging region of at least `bytes` (<= LKV_GPU_STAGE_MAX)
 * the host may fill now, waiting (a counted sync) only when the copy that
 * last read it has not finished; then the copy from it and its event. */
lkv_status lkv_gpu_stage_take(lkv_device *d, size_t bytes, lkv_gpu_stage **out_stage);
lkv_status lkv_gpu_stage_copy(lkv_device *d, lkv_gpu_stage *s, lkv_gpu_ptr dst, size_t bytes);
/* Releases the ring (the device entered). */
void lkv_gpu_stage_release(lkv_device *d);

/* Frees the retired scratch (after a host wait, or at close). */
void lkv_gpu_free_retired(lkv_device *d);

/* Grows *buf to at least `bytes` (contents not kept); the old buffer is
 * retired, not freed. */
lkv_status lkv_gpu_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes);

/* Uploads `n` host arrays of int32 in one copy (through the staging ring,
 * so the host does not wait) and gives their device addresses in out_ptrs.
 * The device space is reused by the next upload; stream order makes that
 * safe. Nothing is uploaded when it fails. */
lkv_status lkv_gpu_upload(lkv_device *d, int n, const int32_t *const *host, const size_t *counts,
                          lkv_gpu_ptr *out_ptrs);

/* lkv_gpu_upload of n_cols row lists of n entries followed by an engine's
 * slots (base, tab_row, table: core/backend.h), out_ptrs in that order;
 * a dense layout's tab_row and table are stand-ins the kernels never read. */
lkv_status lkv_gpu_upload_slots(lkv_device *d, int n_cols, const int32_t *const *cols,
                                int32_t n, const lkv_engine_slots *s, lkv_gpu_ptr *out_ptrs);

/* Launches `kernel` on a grid of 1-D blocks of `block` threads. */
lkv_status lkv_gpu_launch_kernel(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t gx, uint32_t gy,
                                 uint32_t gz, uint32_t block, void **args);
/* The same with every block resident at once (the driver's
 * launch_cooperative): LKV_UNSUPPORTED, with nothing launched, where the
 * driver has none or the grid does not fit the device at once. */
lkv_status lkv_gpu_launch_cooperative(lkv_device *d, lkv_gpu_kernel_id kernel,
                                      const uint32_t grid[3], uint32_t block, void **args);

/* The blocks of `kernel` one multiprocessor holds at `block` threads (the
 * driver's occupancy query, asked once per kernel; each kernel has one
 * launch block), or -1 where the driver cannot say. */
int lkv_gpu_resident(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t block);
/* Whether a grid of `kernel`'s blocks of `block` threads may fit the device
 * at once: within one wave by lkv_gpu_resident's answer (unknown: the
 * driver decides). Larger grids are not offered to the cooperative launch,
 * which would refuse them on every call of a large batch. */
int lkv_gpu_one_wave(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t block,
                     const uint32_t grid[3]);

/* Launch arithmetic the ops share. */

/* Most blocks along x for a kernel that strides over what is left. */
#define LKV_GPU_STRIDE_GX 65535u

/* a / b rounded up (b > 0), without overflow near UINT64_MAX */
static inline uint64_t lkv_gpu_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* The most valid slots of the listed rows (0 for none). */
static inline int32_t lkv_gpu_longest(const int32_t *row_n, int32_t n_rows)
{
    int32_t most = 0;
    for (int32_t r = 0; r < n_rows; r++)
        most = row_n[r] > most ? row_n[r] : most;
    return most;
}

/* Grid x over `items` (slots) in blocks of `block`: at least 1, at most
 * LKV_GPU_STRIDE_GX (the kernel strides over the rest). */
static inline uint32_t lkv_gpu_stride_blocks(int32_t items, uint32_t block)
{
    uint64_t gx = lkv_gpu_div_up((uint64_t)(items > 0 ? items : 0), block);
    return gx < 1 ? 1 : gx > LKV_GPU_STRIDE_GX ? LKV_GPU_STRIDE_GX : (uint32_t)gx;
}

/* Grid y over `n_rows` listed rows: one per row up to the device's limit,
 * the kernel striding over the rest. */
static inline uint32_t lkv_gpu_rows_y(const lkv_device *d, int32_t n_rows)
{
    return (uint32_t)n_rows < d->lim.max_grid_y ? (uint32_t)n_rows : d->lim.max_grid_y;
}

/* The ops (gpu_attend.c ... gpu_store.c, gpu_gather.c), called with the lock held. */
lkv_status lkv_gpu_attend(lkv_device *d, const lkv_attend_args *a);
/* attend's scratch budget per batch, from the environment (gpu_attend.c
 * says which variable); read when a device is created. */
lkv_status lkv_gpu_attend_settings(const lkv_gpu_driver *drv, int64_t *out_batch_bytes,
                                   int *out_cooperative);
lkv_status lkv_gpu_observe(lkv_device *d, const lkv_observe_args *a);
lkv_status lkv_gpu_score(lkv_device *d, const lkv_score_args *a);
lkv_status lkv_gpu_select(lkv_device *d, const lkv_select_args *a);
lkv_status lkv_gpu_compact(lkv_device *d, const lkv_compact_args *a);
lkv_status lkv_gpu_store(lkv_device *d, const lkv_store_args *a);
lkv_status lkv_gpu_gather(lkv_device *d, const lkv_gather_args *a);
lkv_status lkv_gpu_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a);
lkv_status lkv_gpu_move_kept(lkv_device *d, const lkv_move_kept_args *a);
lkv_status lkv_gpu_qk_probs(lkv_device *d, const lkv_qk_probs_args *a);
lkv_status lkv_gpu_redundancy(lkv_device *d, const lkv_redundancy_args *a);

/* gpu_lane.c: the lanes of core/backend.h (called with the lock held). A
 * mark is an event recorded on the handle's stream. */
struct lkv_mark {
    void *event;
};
lkv_status lkv_gpu_lane_open(lkv_device *d, lkv_device **out_lane);
lkv_status lkv_gpu_mark(lkv_device *d, lkv_mark **out_mark);
lkv_status lkv_gpu_wait_mark(lkv_device *d, const lkv_mark *m);
void lkv_gpu_mark_free(lkv_device *d, lkv_mark *m);

/* gpu_backend.c: one ops table per driver family, the entries locked by
 * backends/host/host_locked.c around the unlocked ones above, with the
 * driver entered for each. The backends fill in name, probe and open. */
extern const lkv_host_inner lkv_gpu_inner;
/* store, wrap, counters and the lanes, which the shared locked entries
 * lack, locked the same way here. */
lkv_status lkv_gpu_locked_store(lkv_device *d, const lkv_store_args *a);
lkv_status lkv_gpu_locked_gather(lkv_device *d, const lkv_gather_args *a);
lkv_status lkv_gpu_locked_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a);
lkv_status lkv_gpu_locked_move_kept(lkv_device *d, const lkv_move_kept_args *a);
lkv_status lkv_gpu_locked_qk_probs(lkv_device *d, const lkv_qk_probs_args *a);
lkv_status lkv_gpu_locked_redundancy(lkv_device *d, const lkv_redundancy_args *a);
lkv_status lkv_gpu_locked_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                               lkv_buffer **out_buf);
void lkv_gpu_locked_counters(const lkv_device *d, lkv_counters *out);
lkv_status lkv_gpu_locked_lane_open(lkv_device *d, lkv_device **out_lane);
lkv_status lkv_gpu_locked_mark(lkv_device *d, lkv_mark **out_mark);
lkv_status lkv_gpu_locked_wait_mark(lkv_device *d, const lkv_mark *m);
void lkv_gpu_locked_mark_free(lkv_device *d, lkv_mark *m);
/* The family's known deviations (gpu_attend.c): a batch call is not bit for
 * bit its sequences' single calls. */
extern const lkv_backend_deviation lkv_gpu_deviations[];

#define LKV_GPU_OPS_COMMON                                                                    \
    .close = lkv_gpu_close, LKV_HOST_LOCKED_OPS, .store = lkv_gpu_locked_store,               \
    .gather = lkv_gpu_locked_gather, .reduce_rows = lkv_gpu_locked_reduce_rows,                \
    .move_kept = lkv_gpu_locked_move_kept, .qk_probs = lkv_gpu_locked_qk_probs,                \
    .redundancy = lkv_gpu_locked_redundancy,                                                  \
    .wrap = lkv_gpu_locked_wrap, .counters = lkv_gpu_locked_counters,                         \
    .lane_open = lkv_gpu_locked_lane_open, .mark = lkv_gpu_locked_mark,                        \
    .wait_mark = lkv_gpu_locked_wait_mark, .mark_free = lkv_gpu_locked_mark_free,              \
    .attend_observes = 1, /* attend.cu applies the observe where it computes probabilities */ \
    .holes = 1, /* attend, store and compact take the hole map */                              \
    .paged = 1, /* and the pool of a paged cache (kv_cap 0) */                                 \
    .deviations = lkv_gpu_deviations

#endif /* LKV_GPU_INTERNAL_H */
