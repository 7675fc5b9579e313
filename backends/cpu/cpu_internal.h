/* The CPU backend's private types: device, buffer, row addressing, threads. */
#ifndef LKV_CPU_INTERNAL_H
#define LKV_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct lkv_device {
    int threads;
    /* What a GPU backend would have launched, copied and waited for: the
     * cpu counts the same events so tests and the bench can read GPU cost
     * off any machine. */
    lkv_counters counters;
};

struct lkv_buffer {
    size_t size;
    unsigned char *data;
    int borrowed; /* a view of caller memory (wrap): free() keeps the data */
};

/* Typed views of a row of a [rows][capacity] buffer. */
static inline int32_t *lkv_cpu_row_i32(const lkv_buffer *b, int32_t capacity, int32_t row)
{
    return (int32_t *)(void *)b->data + (size_t)row * (size_t)capacity;
}

static inline float *lkv_cpu_row_f32(const lkv_buffer *b, int32_t capacity, int32_t row)
{
    return (float *)(void *)b->data + (size_t)row * (size_t)capacity;
}

/* Start of slot `slot` of `row` in a K or V buffer. */
static inline unsigned char *lkv_cpu_kv_slot(const lkv_buffer *b, const lkv_cache_buffers *c,
                                             int32_t row, int32_t slot)
{
    size_t elems = ((size_t)row * (size_t)c->capacity + (size_t)slot) * (size_t)c->head_dim;
    return b->data + elems * lkv_dtype_size(c->dtype);
}

/* Runs fn(ctx, begin, end) over [0, n_items) split across the device's
 * threads when `work` (a rough count of multiply-adds) makes threads pay.
 * Items must be independent; results then do not depend on the split. */
void lkv_cpu_parallel(const lkv_device *dev, int n_items, double work,
                      void (*fn)(void *ctx, int begin, int end), void *ctx);

lkv_status lkv_cpu_attend(lkv_device *dev, const lkv_attend_args *args);
lkv_status lkv_cpu_observe(lkv_device *dev, const lkv_observe_args *args);
lkv_status lkv_cpu_score(lkv_device *dev, const lkv_score_args *args);
lkv_status lkv_cpu_select(lkv_device *dev, const lkv_select_args *args);
lkv_status lkv_cpu_compact(lkv_device *dev, const lkv_compact_args *args);
lkv_status lkv_cpu_store(lkv_device *dev, const lkv_store_args *args);

#endif
