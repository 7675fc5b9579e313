/* The cpu backend's private state: its thread pool, the attend kernel of the
 * CPU's instruction set, and scratch reused across calls. The device and
 * buffer types are the host-memory device's (backends/hostmem/); the ops it
 * has not made fast run the oracle's code (backends/ref/ref_ops.h). */
#ifndef LKV_CPU_INTERNAL_H
#define LKV_CPU_INTERNAL_H

#include <pthread.h>

#include "cpu_chunk.h"
#include "hostmem/hostmem.h"
#include "pool.h"

typedef struct lkv_cpu_state {
    lkv_pool *pool;
    lkv_cpu_chunk_fn chunk;
    pthread_mutex_t lock; /* one attend at a time owns the scratch */
    unsigned char *scratch;
    size_t scratch_cap;
} lkv_cpu_state;

static inline lkv_cpu_state *lkv_cpu_state_of(const lkv_device *dev)
{
    return (lkv_cpu_state *)dev->state;
}

/* The kernel for LAZYKV_CPU_ISA (generic, avx2, avx512, neon; unset: the best
 * this CPU runs); a value this CPU cannot run, or not one of those, is
 * refused naming it. */
lkv_status lkv_cpu_pick_isa(lkv_cpu_chunk_fn *out_fn, const char **out_name);

lkv_status lkv_cpu_attend(lkv_device *dev, const lkv_attend_args *args);
lkv_status lkv_cpu_observe(lkv_device *dev, const lkv_observe_args *args);
lkv_status lkv_cpu_score(lkv_device *dev, const lkv_score_args *args);
lkv_status lkv_cpu_select(lkv_device *dev, const lkv_select_args *args);
lkv_status lkv_cpu_compact(lkv_device *dev, const lkv_compact_args *args);

#endif /* LKV_CPU_INTERNAL_H */
