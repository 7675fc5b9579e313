/* Lanes: a second device handle on the same device whose work goes to a
 * stream of its own, so eviction can run beside the attention of the
 * layers after it (core/backend.h, "Lanes:"). The lane gets everything the
 * two handles would otherwise race on, since both run at once under two
 * locks: its own staging ring, row-list buffer and op scratch, all made on
 * first use as on any device. Device memory is the context's, so a buffer
 * of either handle is valid on both. A mark is an event recorded on the
 * handle's stream; waiting for it is the driver's stream_wait, which
 * orders the streams on the device without the host waiting. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_lane_open(lkv_device *d, lkv_device **out_lane)
{
    if (!d->drv->lane_open || !d->drv->stream_wait)
        return lkv_fail(LKV_UNSUPPORTED, "%s: the driver has no second stream", d->drv->name);
    void *api = NULL;
    lkv_status st = d->drv->lane_open(d->api, &api);
    if (st != LKV_OK)
        return lkv_fail_context(st, "opening a lane");
    lkv_device *lane = NULL;
    /* closes the lane's driver state when it fails */
    st = lkv_gpu_device_create(d->drv, api, &d->lim, &lane);
    if (st != LKV_OK)
        return st;
    lane->lane = 1;
    /* the same device: the parent's settings and occupancy answers hold */
    lane->attend_batch_bytes = d->attend_batch_bytes;
    lane->cooperative = d->cooperative;
    memcpy(lane->resident, d->resident, sizeof lane->resident);
    *out_lane = lane;
    return LKV_OK;
}

lkv_status lkv_gpu_mark(lkv_device *d, lkv_mark **out_mark)
{
    lkv_mark *m = calloc(1, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: no host memory for a mark", d->drv->name);
    lkv_status st = d->drv->event_create(d->api, &m->event);
    if (st == LKV_OK) {
        st = d->drv->event_record(d->api, m->event);
        if (st != LKV_OK)
            d->drv->event_destroy(d->api, m->event);
    }
    if (st != LKV_OK) {
        free(m);
        return lkv_fail_context(st, "making a mark");
    }
    *out_mark = m;
    return LKV_OK;
}

lkv_status lkv_gpu_wait_mark(lkv_device *d, const lkv_mark *m)
{
    if (!m)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: wait_mark of no mark", d->drv->name);
    lkv_status st = d->drv->stream_wait(d->api, m->event);
    return st == LKV_OK ? LKV_OK : lkv_fail_context(st, "waiting for a mark");
}

/* The drivers destroy an event still pending once it passes, and a wait
 * already queued on it still holds, so a mark may go at any time. */
void lkv_gpu_mark_free(lkv_device *d, lkv_mark *m)
{
    if (!m)
        return;
    d->drv->event_destroy(d->api, m->event);
    free(m);
}
