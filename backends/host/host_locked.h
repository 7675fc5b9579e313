/* The ops-table entries with the device lock taken, for every backend whose
 * caches share one device: the GPU host code of CUDA and HIP
 * (backends/gpu/) and the binding plans of Vulkan and OpenCL
 * (backends/bind/). The API lets distinct caches be used from distinct
 * threads, and all caches of a runtime share one device (its queue,
 * scratch, row-list space), so every entry but close holds the lock. */
#ifndef LKV_HOST_LOCKED_H
#define LKV_HOST_LOCKED_H

#include <pthread.h>

#include "backend.h"

/* What the locked entries run with the lock held. */
typedef struct lkv_host_inner {
    /* The same entries unlocked: alloc, free, write, read, copy, sync and
     * the five ops (name, probe, open and close are not used). */
    const lkv_backend_ops *ops;
    /* Makes the device current on this thread around each entry (a CUDA
     * context) and undoes it; both NULL when there is nothing to enter. */
    lkv_status (*enter)(lkv_device *d);
    void (*leave)(lkv_device *d);
    /* Frees a buffer when the device could not be entered: its memory goes
     * with the device, only the handle goes now. NULL without enter. */
    void (*drop)(lkv_device *d, lkv_buffer *b);
} lkv_host_inner;

/* The first member of every device the locked entries are given, so they
 * reach it from the lkv_device pointer. */
typedef struct lkv_host_lock {
    pthread_mutex_t mutex;
    int ready; /* mutex initialised */
    const lkv_host_inner *inner;
} lkv_host_lock;

/* Makes the lock; 1 when it is ready, 0 when the mutex could not be made
 * (the caller names the failure). */
int lkv_host_lock_init(lkv_host_lock *l, const lkv_host_inner *inner);
/* Undoes lkv_host_lock_init; nothing when it did not succeed. */
void lkv_host_lock_destroy(lkv_host_lock *l);

/* The locked entries, for a backend's ops table beside its name, probe,
 * open and close. */
#define LKV_HOST_LOCKED_OPS                                                                   \
    .alloc = lkv_host_locked_alloc, .free = lkv_host_locked_free,                              \
    .write = lkv_host_locked_write, .read = lkv_host_locked_read,                              \
    .copy = lkv_host_locked_copy, .sync = lkv_host_locked_sync,                                \
    .attend = lkv_host_locked_attend, .observe = lkv_host_locked_observe,                      \
    .score = lkv_host_locked_score, .select = lkv_host_locked_select,                          \
    .compact = lkv_host_locked_compact

lkv_status lkv_host_locked_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf);
void lkv_host_locked_free(lkv_device *d, lkv_buffer *b);
lkv_status lkv_host_locked_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src,
                                 size_t n);
lkv_status lkv_host_locked_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst,
                                size_t n);
lkv_status lkv_host_locked_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off,
                                const lkv_buffer *src, size_t src_off, size_t n);
lkv_status lkv_host_locked_sync(lkv_device *d);
lkv_status lkv_host_locked_attend(lkv_device *d, const lkv_attend_args *a);
lkv_status lkv_host_locked_observe(lkv_device *d, const lkv_observe_args *a);
lkv_status lkv_host_locked_score(lkv_device *d, const lkv_score_args *a);
lkv_status lkv_host_locked_select(lkv_device *d, const lkv_select_args *a);
lkv_status lkv_host_locked_compact(lkv_device *d, const lkv_compact_args *a);

#endif /* LKV_HOST_LOCKED_H */
