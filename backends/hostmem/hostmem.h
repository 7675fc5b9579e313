/* A device whose memory is host memory: the device and buffer types and the
 * memory entries that `ref` (the plain-C oracle) and `cpu` (the fast CPU
 * backend) share, so the two differ only in their ops. A buffer is a
 * malloc'd block (or, wrapped, the caller's memory); every op completes
 * before it returns, so sync waits for nothing; the counters count what a
 * GPU backend would have launched, copied and waited for, so tests and the
 * bench read GPU cost off any machine. */
#ifndef LKV_HOSTMEM_H
#define LKV_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct lkv_device {
    int threads; /* lkv_pool_cpu_threads: LAZYKV_CPU_THREADS, else the online CPUs */
    lkv_counters counters;
    void *state; /* the backend's own (cpu: its thread pool and scratch); NULL for ref */
};

struct lkv_buffer {
    size_t size;
    unsigned char *data;
    int borrowed; /* a view of caller memory (wrap): free() keeps the data */
};

/* Typed views of a row of a [rows][capacity] buffer. */
static inline int32_t *lkv_hostmem_row_i32(const lkv_buffer *b, int32_t capacity, int32_t row)
{
    return (int32_t *)(void *)b->data + (size_t)row * (size_t)capacity;
}

static inline float *lkv_hostmem_row_f32(const lkv_buffer *b, int32_t capacity, int32_t row)
{
    return (float *)(void *)b->data + (size_t)row * (size_t)capacity;
}

/* Start of place `slot` of `row` in a K or V buffer; in a paged cache's
 * pool a place has no row term (core/backend.h). */
static inline unsigned char *lkv_hostmem_kv_slot(const lkv_buffer *b, const lkv_cache_buffers *c,
                                                 int32_t row, int32_t slot)
{
    size_t row0 = c->paged ? 0 : (size_t)row * (size_t)c->capacity;
    size_t elems = (row0 + (size_t)slot) * (size_t)c->head_dim;
    return b->data + elems * lkv_dtype_size(c->dtype);
}

/* Start of slot `slot`'s K or V in `row`: where the hole map puts it when
 * the cache fills holes (c->phys), else at the slot itself. */
static inline unsigned char *lkv_hostmem_kv_at(const lkv_buffer *b, const lkv_cache_buffers *c,
                                               int32_t row, int32_t slot)
{
    int32_t at = c->phys ? lkv_hostmem_row_i32(c->phys, c->capacity, row)[slot] : slot;
    return lkv_hostmem_kv_slot(b, c, row, at);
}

/* The one device's report: `backend`, the CPU's model name, and `what`
 * followed by the thread count as the reason; not available, with the
 * knob's error as the reason, when LAZYKV_CPU_THREADS is bad. */
void lkv_hostmem_probe(const char *backend, const char *what, lkv_device_report *out, int cap,
                       int *out_count);

/* Device 0 of `backend` (the only one), its threads from LAZYKV_CPU_THREADS
 * (lkv_pool_cpu_threads) and state NULL; close frees it. */
lkv_status lkv_hostmem_open(const char *backend, int device, lkv_device **out_dev);
void lkv_hostmem_close(lkv_device *dev);

lkv_status lkv_hostmem_alloc(lkv_device *dev, size_t bytes, lkv_buffer **out_buf);
void lkv_hostmem_free(lkv_device *dev, lkv_buffer *buf);
lkv_status lkv_hostmem_write(lkv_device *dev, lkv_buffer *dst, size_t offset, const void *src,
                             size_t bytes);
lkv_status lkv_hostmem_read(lkv_device *dev, const lkv_buffer *src, size_t offset, void *dst,
                            size_t bytes);
lkv_status lkv_hostmem_copy(lkv_device *dev, lkv_buffer *dst, size_t dst_offset,
                            const lkv_buffer *src, size_t src_offset, size_t bytes);
lkv_status lkv_hostmem_sync(lkv_device *dev);
/* A handle is an address: non-zero, offset a multiple of 4. */
lkv_status lkv_hostmem_wrap(lkv_device *dev, uint64_t handle, uint64_t offset, size_t bytes,
                            lkv_buffer **out_buf);
void lkv_hostmem_counters(const lkv_device *dev, lkv_counters *out);

/* The memory entries of an lkv_backend_ops table. */
#define LKV_HOSTMEM_OPS                                                                        \
    .alloc = lkv_hostmem_alloc, .free = lkv_hostmem_free, .write = lkv_hostmem_write,         \
    .read = lkv_hostmem_read, .copy = lkv_hostmem_copy, .sync = lkv_hostmem_sync,             \
    .wrap = lkv_hostmem_wrap, .counters = lkv_hostmem_counters

#endif /* LKV_HOSTMEM_H */
