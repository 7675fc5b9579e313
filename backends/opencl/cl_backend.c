/* The OpenCL backend's tables: the driver the shared op plans of
 * backends/bind/ call (buffers in cl_memory.c, pipelines in cl_program.c,
 * dispatch and row lists in cl_dispatch.c), and the ops table, whose entries
 * are the shared locked ones and the lanes' (cl_lane.c). */
#include "cl_internal.h"

static uint64_t cl_size(const lkv_buffer *b)
{
    return b->size;
}

const lkv_bind_driver lkv_cl_bind_driver = {
    .name = "opencl",
    .alloc = lkv_cl_alloc,
    .free = lkv_cl_free,
    .write = lkv_cl_write,
    .read = lkv_cl_read,
    .copy = lkv_cl_copy,
    .sync = lkv_cl_sync,
    .pipe_ready = lkv_cl_pipe_ready,
    .dispatch = lkv_cl_dispatch,
    .list_room = lkv_cl_list_room,
    .list_put = lkv_cl_list_put,
    .reserve = lkv_cl_reserve,
    .size = cl_size,
    .wrap = lkv_cl_wrap,
    .lane_open = lkv_cl_lane_open,
    .mark = lkv_cl_mark,
    .wait_mark = lkv_cl_wait_mark,
};

/* Where a device lacks cl_khr_fp64, or LAZYKV_OPENCL_F64=0 turns it off
 * (the probe's "f32 scores"), scores that the oracle computes in f64 are
 * computed in f32. */
static const lkv_backend_deviation cl_deviations[] = {
    LKV_BIND_F32_SCORE_DEVIATIONS("no cl_khr_fp64 (or LAZYKV_OPENCL_F64=0)",
                                  "OpenCL's float exp is good to 3 ulp, about 6e-6 relative "
                                  "for these arguments"),
    {NULL, NULL, NULL},
};

const lkv_backend_ops lkv_backend_opencl = {
    .name = "opencl",
    .probe = lkv_cl_probe,
    .open = lkv_cl_open,
    .close = lkv_cl_close,
    .open_external = lkv_cl_open_external,
    LKV_HOST_LOCKED_OPS,
    LKV_BIND_LOCKED_OPS,
    LKV_BIND_LANE_OPS, /* a second in-order queue (cl_lane.c) */
    .mark_free = lkv_cl_mark_free,
    .lanes_concurrent = lkv_cl_lanes_concurrent,
    .row_steps = 1, /* observe and score take each row's step from its list */
    .attend_observes = 1, /* attend_probs applies the observe itself (bind_attend.c) */
    .holes = 1,     /* attend, store and compact take the hole map (LKV_HOLES pipes) */
    .paged = 1,     /* and a paged cache's pool, bound whole (kv_cap 0) */
    .deviations = cl_deviations,
};
