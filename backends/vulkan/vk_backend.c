/* The Vulkan backend's tables: the driver the shared op plans of
 * backends/bind/ call (buffers in vk_memory.c, row lists in vk_submit.c,
 * pipelines and dispatch in vk_pipeline.c), and the ops table, whose
 * entries are the shared locked ones. */
#include "vk_internal.h"

static uint64_t vk_size(const lkv_buffer *b)
{
    return b->size;
}

const lkv_bind_driver lkv_vk_bind_driver = {
    .name = "vulkan",
    .alloc = lkv_vk_alloc,
    .free = lkv_vk_free,
    .write = lkv_vk_write,
    .read = lkv_vk_read,
    .copy = lkv_vk_copy,
    .sync = lkv_vk_sync,
    .pipe_ready = lkv_vk_pipe_ready,
    .dispatch = lkv_vk_dispatch,
    .list_room = lkv_vk_list_room,
    .list_put = lkv_vk_list_put,
    .reserve = lkv_vk_reserve,
    .size = vk_size,
    .wrap = lkv_vk_wrap,
    .end_entry = lkv_vk_end_entry,
    .lane_open = lkv_vk_lane_open,
    .mark = lkv_vk_mark,
    .wait_mark = lkv_vk_wait_mark,
};

/* Where a device lacks shaderFloat64 (the probe's "f32 scores"), scores
 * that the oracle computes in f64 are computed in f32. */
static const lkv_backend_deviation vk_deviations[] = {
    LKV_BIND_F32_SCORE_DEVIATIONS("no shaderFloat64",
                                  "exp of arguments up to ~100 is good to ~1e-5 relative "
                                  "(Vulkan allows 3 + 2|x| ulp)"),
    {NULL, NULL, NULL},
};

const lkv_backend_ops lkv_backend_vulkan = {
    .name = "vulkan",
    .probe = lkv_vk_probe,
    .open = lkv_vk_open,
    .close = lkv_vk_close,
    .open_external = lkv_vk_open_external,
    LKV_HOST_LOCKED_OPS,
    LKV_BIND_LOCKED_OPS,
    .row_steps = 1, /* observe and score take each row's step from its list */
    .attend_observes = 1, /* attend_probs applies the observe itself (bind_attend.c) */
    .holes = 1,     /* attend, store and compact take the hole map (LKV_HOLES pipes) */
    .paged = 1,     /* and a paged cache's pool, bound whole (kv_cap 0) */
    LKV_BIND_LANE_OPS, /* the family's second queue (vk_lane.c) */
    .mark_free = lkv_vk_mark_free,
    .lanes_concurrent = lkv_vk_lanes_concurrent,
    .deviations = vk_deviations,
};
