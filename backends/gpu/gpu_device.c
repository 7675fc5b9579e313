/* A CUDA-like device as the ops see it: the driver's table and state, its
 * limits, and the scratch every op shares. */
#include <stdlib.h>

#include "error.h"
#include "gpu_internal.h"

static lkv_status check_limits(const lkv_gpu_driver *drv, const lkv_gpu_limits *lim)
{
    /* The kernels tile blocks by whole warps; anything else would be a driver
     * reporting nonsense, which we refuse rather than launch into. */
    if (lim->warp != 32 && lim->warp != 64)
        return lkv_fail(LKV_INCOMPATIBLE, "%s: warp size %d; the kernels support 32 and 64",
                        drv->name, lim->warp);
    if (lim->multiprocessors < 1 || lim->max_grid_y < 1 || lim->max_grid_z < 1)
        return lkv_fail(LKV_DEVICE_ERROR, "%s: the driver reported %d multiprocessors and grid "
                        "limits y %u z %u", drv->name, lim->multiprocessors,
                        (unsigned)lim->max_grid_y, (unsigned)lim->max_grid_z);
    return LKV_OK;
}

lkv_status lkv_gpu_device_create(const lkv_gpu_driver *drv, void *api, const lkv_gpu_limits *lim,
                                 lkv_device **out_dev)
{
    int64_t attend_batch_bytes = 0;
    int cooperative = 0;
    lkv_status st = check_limits(drv, lim);
    if (st == LKV_OK)
        st = lkv_gpu_attend_settings(drv, &attend_batch_bytes, &cooperative);
    lkv_device *d = st == LKV_OK ? calloc(1, sizeof *d) : NULL;
    if (st == LKV_OK && !d)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "%s: no host memory for the device", drv->name);
    if (st == LKV_OK && !lkv_host_lock_init(&d->lock, &lkv_gpu_inner)) {
        free(d);
        st = lkv_fail(LKV_INTERNAL, "%s: could not create the device lock", drv->name);
    }
    if (st != LKV_OK) {
        drv->close(api);
        return st;
    }
    d->drv = drv;
    d->api = api;
    d->lim = *lim;
    d->attend_batch_bytes = attend_batch_bytes;
    d->cooperative = cooperative;
    *out_dev = d;
    return LKV_OK;
}

void lkv_gpu_close(lkv_device *d)
{
    if (!d)
        return;
    lkv_buffer *scratch[] = {d->lists,       d->logits,          d->partials,   d->lse,
                             d->attend_done, d->compact_scratch, d->select_sync};
    size_t count = sizeof scratch / sizeof scratch[0];
    if (d->drv->enter(d->api) == LKV_OK) {
        /* a lane's work may still read its scratch and the other handle's
         * buffers, and its stream goes below: it finishes first */
        if (d->lane)
            (void)d->drv->sync(d->api);
        lkv_gpu_stage_release(d);
        lkv_gpu_free_retired(d);
        for (size_t i = 0; i < count; i++)
            lkv_gpu_free(d, scratch[i]);
        d->drv->leave(d->api);
    } else {
        /* Without the context current the driver cannot free; the device
         * memory (and the staging memory and events) goes with the context
         * (below, or with the parent's for a lane), the handles go now. */
        for (size_t i = 0; i < count; i++)
            free(scratch[i]);
        for (int i = 0; i < d->n_retired; i++)
            free(d->retired[i]);
    }
    /* close releases the context, and every allocation with it, even where
     * enter failed above; a lane's releases only its stream */
    d->drv->close(d->api);
    free(d->lists_host);
    lkv_host_lock_destroy(&d->lock);
    free(d);
}
