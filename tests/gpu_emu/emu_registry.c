/* backends/registry.c again, with the emulator's backend added, for
 * lazykv-emu. Linked before the library, so the library's own registry
 * object is never pulled in. */
#define LKV_REGISTRY_EXTRA_DECL extern const lkv_backend_ops lkv_backend_gpu_emu;
#define LKV_REGISTRY_EXTRA {"gpu-emu", &lkv_backend_gpu_emu, NULL},
#include "registry.c"
