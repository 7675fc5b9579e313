/* The OpenCL backend's private types: the loaded ICD loader and its entry
 * points, the flattened list of every platform's devices, the open device
 * and its buffers. The op plans are backends/bind/'s, shared with Vulkan;
 * this backend builds the kernels (backends/opencl/kernels/) and issues the work. */
#ifndef LKV_CL_INTERNAL_H
#define LKV_CL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "backend.h"
#include "bind/bind_internal.h"
#include "cl_api.h"
#include "host/host_symbols.h"

typedef struct lkv_cl_fns {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SLOT(ret, name, params)
#include "cl_symbols.h"
#undef LKV_SYM
} lkv_cl_fns;

#define LKV_CL_MAX_DEVICES 32

/* A loaded libOpenCL and every device of every platform, in platform
 * order: the index into `devs` is the device number users name
 * (opencl:1). */
typedef struct lkv_cl_lib {
    void *handle;
    char path[256];
    lkv_cl_fns fn;
    int n_devs;
    cl_device_id devs[LKV_CL_MAX_DEVICES];
    cl_platform_id dev_platform[LKV_CL_MAX_DEVICES];
} lkv_cl_lib;

/* What lazykv reads of a device, for the probe and the open. */
typedef struct lkv_cl_info {
    char name[128], platform[96], platform_version[128], version[96], c_version[64], driver[96];
    cl_device_type type;
    cl_uint vendor_id;
    cl_uint compute_units;
    size_t max_wg;
    cl_ulong global_mem, max_alloc, local_mem;
    cl_bool available, compiler;
    int has_f64;
    char uuid[40], pci[16]; /* "" when the device does not say */
} lkv_cl_info;

struct lkv_buffer {
    cl_mem mem;
    uint64_t size; /* bytes: ours a multiple of 16 (requests are rounded up), a view's as given */
    uint64_t base; /* a view's offset into mem, added to every kernel argument and transfer */
};

/* One built pipeline: its program and kernel, made on first use. */
typedef struct lkv_cl_pipe {
    cl_program program;
    cl_kernel kernel;
} lkv_cl_pipe;

struct lkv_device {
    lkv_bind_device bind; /* first: the shared op plans reach it (backends/bind/) */
    lkv_cl_lib lib;
    int index;
    cl_device_id dev;
    lkv_cl_info info;
    cl_context ctx;
    cl_command_queue queue; /* in order: each command sees the ones before it */
    int external;           /* context and queue are the engine's (retained, not made) */
    int lane;               /* a lane (cl_lane.c): the queue is its own, the rest its parent's */
    lkv_cl_pipe pipes[LKV_BIND_PIPE_COUNT];
    /* Row lists and staged writes: written into `arena` from a host copy
     * that must stay untouched until the queue has run the write, so the
     * arena is rewound only once the queue has drained (cl_dispatch.c). */
    lkv_buffer *arena;
    unsigned char *arena_host;
    uint64_t arena_used;
};

/* cl_loader.c: the library, its entry points, the device list. */
lkv_status lkv_cl_load(lkv_cl_lib *out_lib);
void lkv_cl_unload(lkv_cl_lib *lib);
/* A failed call in words: "opencl: <what>: CL_OUT_OF_RESOURCES (-5)". */
lkv_status lkv_cl_check(cl_int err, const char *what);
const char *lkv_cl_error_name(cl_int err);

/* cl_info.c: what lazykv reads of device `i` of the list, and whether it
 * can run the kernels (`why` when not). */
void lkv_cl_read_info(const lkv_cl_lib *lib, int i, lkv_cl_info *out);
int lkv_cl_usable(const lkv_cl_info *info, char *why, size_t why_len);

/* cl_probe.c, cl_device.c */
lkv_status lkv_cl_probe(lkv_device_report *out, int cap, int *out_count);
lkv_status lkv_cl_open(int device, lkv_device **out_dev);
/* cl_external.c: the engine's context, device and in-order queue. */
lkv_status lkv_cl_open_external(const lkv_external_device *ext, lkv_device **out_dev);
/* Opens device `index` of the list, or the listed device `want` when not
 * NULL, on `ctx` and `queue`: made here when NULL, else the engine's,
 * checked by lkv_cl_external_check and retained (cl_device.c). */
lkv_status lkv_cl_open_on(int index, cl_device_id want, cl_context ctx, cl_command_queue queue,
                          lkv_device **out_dev);
/* The engine's queue is an in-order queue of `ctx` and the device d->dev. */
lkv_status lkv_cl_external_check(lkv_device *d, cl_context ctx, cl_command_queue queue);
void lkv_cl_close(lkv_device *d);

/* A point in one queue's issued work: its marker event. */
struct lkv_mark {
    cl_event event;
};

/* cl_lane.c: lanes (core/backend.h): lane_open, mark and wait_mark are the
 * bind driver's (unlocked; the ops table has them locked, bind_backend.c). */
lkv_status lkv_cl_lane_open(lkv_device *d, lkv_device **out_lane);
lkv_status lkv_cl_mark(lkv_device *d, lkv_mark **out_mark);
lkv_status lkv_cl_wait_mark(lkv_device *d, const lkv_mark *mark);
void lkv_cl_mark_free(lkv_device *d, lkv_mark *mark);
int lkv_cl_lanes_concurrent(lkv_device *d);

/* cl_memory.c */
lkv_status lkv_cl_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf);
void lkv_cl_free(lkv_device *d, lkv_buffer *b);
lkv_status lkv_cl_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n);
lkv_status lkv_cl_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n);
lkv_status lkv_cl_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t n);
lkv_status lkv_cl_sync(lkv_device *d);
lkv_status lkv_cl_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes);
/* A view of the engine's cl_mem (retained until free) from `offset`. */
lkv_status lkv_cl_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf);

/* cl_program.c: a pipeline's kernel, built from the embedded source or
 * taken from the program-binary cache (cl_cache.c). */
lkv_status lkv_cl_pipe_ready(lkv_device *d, lkv_bind_pipe id);
void lkv_cl_pipes_destroy(lkv_device *d);

/* cl_cache.c: the on-disk program-binary cache. The folder is
 * $LAZYKV_OPENCL_CACHE, else $XDG_CACHE_HOME/lazykv/opencl, else
 * $HOME/.cache/lazykv/opencl; LAZYKV_OPENCL_CACHE=off turns it off. Every
 * failure to read or write it is silent: a build from source follows. */
/* The texts of one program: the common header, then its kernel source. */
#define LKV_CL_TEXTS 2

typedef struct lkv_cl_cache_key {
    char text[1024]; /* everything the binary depends on, stored in the file and compared */
    char file[32];   /* its hash as the file name */
} lkv_cl_cache_key;
void lkv_cl_cache_key_make(const lkv_device *d, const char *const texts[LKV_CL_TEXTS], const char *options,
                           lkv_cl_cache_key *out_key);
/* The cache folder, made if missing, opened and checked: ours, writable
 * by no one else, under folders no one else can rename it out of (root's
 * or ours, or sticky). -1 when the cache is off or the folder fails a
 * check; load and store then do nothing. */
int lkv_cl_cache_open(void);
void lkv_cl_cache_close(int dir);
/* The binary cached in the open folder `dir` (malloc'ed) or NULL. */
unsigned char *lkv_cl_cache_load(int dir, const lkv_cl_cache_key *key, size_t *out_size);
void lkv_cl_cache_store(int dir, const lkv_cl_cache_key *key, const unsigned char *bin,
                        size_t size);
/* Binaries taken from the cache (accepted by the driver, the pipeline's
 * kernel in them) and written to it in this process (tests). */
extern atomic_int lkv_cl_cache_hits, lkv_cl_cache_stores;

/* cl_dispatch.c: the shared plans' dispatches and row lists. */
lkv_status lkv_cl_dispatch(lkv_device *d, lkv_bind_pipe pipe, const lkv_bind_buf *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz);
lkv_status lkv_cl_list_room(lkv_device *d, size_t bytes);
lkv_status lkv_cl_list_put(lkv_device *d, const uint32_t *words, size_t bytes,
                           lkv_bind_buf *out_bind);
/* Copies `bytes` of src into the arena's host side (room made by
 * list_room) and enqueues their write to dst at `off`, unwaited: the host
 * copy stays untouched until the queue drains, as the lists' do. */
lkv_status lkv_cl_put_staged(lkv_device *d, const lkv_buffer *dst, uint64_t off, const void *src,
                             size_t bytes);
/* clFinish, counted as a sync. */
lkv_status lkv_cl_finish(lkv_device *d, const char *why);
/* The queue has run everything enqueued so far (a finish or a blocking
 * read returned): no queued write still reads the arena's host side. */
void lkv_cl_drained(lkv_device *d);

/* cl_backend.c: the driver table of the shared plans. */
extern const lkv_bind_driver lkv_cl_bind_driver;

/* The embedded kernel texts (generated by backends/opencl/backend.cmake):
 * the header every program starts with (the kinds of core/op_kinds.h, then
 * backends/opencl/kernels/lkv_cl.h), and backends/opencl/kernels/<name>.cl
 * (NULL when there is no such source). A program is the two, in order
 * (LKV_CL_TEXTS). */
const char *lkv_cl_kernel_header(void);
const char *lkv_cl_kernel_source(const char *name);

extern const lkv_backend_ops lkv_backend_opencl;

#endif /* LKV_CL_INTERNAL_H */
