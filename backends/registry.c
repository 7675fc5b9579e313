/* Every backend lazykv knows, in the order `auto` tries them. A backend not
 * compiled into this build still has an entry, so `lazykv devices` and the
 * error for naming it can say so instead of "unknown backend". */
#include "backend.h"

const lkv_backend_entry lkv_backend_registry[] = {
    {"cuda", NULL, "not built into this lazykv: the CUDA backend has not landed yet"},
    {"hip", NULL, "not built into this lazykv: the HIP backend has not landed yet"},
#ifdef LKV_HAVE_VULKAN
    {"vulkan", &lkv_backend_vulkan, NULL},
#else
    {"vulkan", NULL, "not built into this lazykv: it was built without glslc or the Vulkan headers"},
#endif
    {"opencl", NULL, "not built into this lazykv: the OpenCL backend has not landed yet"},
    {"cpu", &lkv_backend_cpu, NULL},
};

const int lkv_backend_registry_count =
    (int)(sizeof lkv_backend_registry / sizeof lkv_backend_registry[0]);
