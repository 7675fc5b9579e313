/* Every backend lazykv knows, in the order `auto` tries them. A backend not
 * compiled into this build still has an entry, so `lazykv devices` and the
 * error for naming it can say so instead of "unknown backend". */
#include "registry.h"

#ifdef LKV_REGISTRY_EXTRA_DECL
LKV_REGISTRY_EXTRA_DECL /* a test build's extra backend (tests/gpu_emu/) */
#endif

const lkv_backend_entry lkv_backend_registry[] = {
#ifdef LKV_HAVE_CUDA
    {"cuda", &lkv_backend_cuda, NULL},
#else
    {"cuda", NULL, "not built into this lazykv: it was built without nvcc"},
#endif
#ifdef LKV_HAVE_HIP
    {"hip", &lkv_backend_hip, NULL},
#else
    {"hip", NULL, "not built into this lazykv: it was built without hipcc"},
#endif
#ifdef LKV_HAVE_VULKAN
    {"vulkan", &lkv_backend_vulkan, NULL},
#else
    {"vulkan", NULL, "not built into this lazykv: it was built without glslc or the Vulkan headers"},
#endif
#ifdef LKV_HAVE_OPENCL
    {"opencl", &lkv_backend_opencl, NULL},
#else
    {"opencl", NULL, "not built into this lazykv: it was configured with LAZYKV_OPENCL=OFF"},
#endif
#ifdef LKV_REGISTRY_EXTRA
    LKV_REGISTRY_EXTRA
#endif
    {"cpu", &lkv_backend_cpu, NULL},
};

const int lkv_backend_registry_count =
    (int)(sizeof lkv_backend_registry / sizeof lkv_backend_registry[0]);
