/* vk_loader.c with a leak of lazykv's own planted in lkv_vk_instance_create,
 * beside the driver's in vkCreateInstance: lazykv-leaky, for
 * tests/vulkan/driver_leak.sh, which requires LeakSanitizer to report it
 * through the driver suppressions. Never installed. */
#define LKV_VK_PLANTED_LEAK 1
#include "vk_loader.c"
