/* The registry: every backend lazykv knows, in `auto` preference order
 * (GPUs first, cpu last). It belongs to the runtime layer, above the
 * backends: core never walks it, and a backend never sees the others. */
#ifndef LKV_REGISTRY_H
#define LKV_REGISTRY_H

#include "backend.h"

/* One known backend. `ops` is NULL when this build does not include it, and
 * `missing` then says why in words. */
typedef struct lkv_backend_entry {
    const char *name;
    const lkv_backend_ops *ops;
    const char *missing;
} lkv_backend_entry;

extern const lkv_backend_entry lkv_backend_registry[];
extern const int lkv_backend_registry_count;

extern const lkv_backend_ops lkv_backend_cpu;
extern const lkv_backend_ops lkv_backend_vulkan; /* when built with LKV_HAVE_VULKAN */
extern const lkv_backend_ops lkv_backend_cuda;   /* when built with LKV_HAVE_CUDA */
extern const lkv_backend_ops lkv_backend_hip;    /* when built with LKV_HAVE_HIP */
extern const lkv_backend_ops lkv_backend_opencl; /* when built with LKV_HAVE_OPENCL */

#endif /* LKV_REGISTRY_H */
