/* The staging ring: every host-to-device copy reads from page-locked host
 * memory, so the driver can queue it on the stream and return at once (a
 * copy from pageable memory may wait for the stream first), and the host
 * refills a region only after the event recorded behind its last copy has
 * passed. The regions are taken in turn, so the host waits only when
 * LKV_GPU_STAGES copies are still queued: a decode step never does on a
 * device that keeps up, and a wait that does happen is counted as a sync. */
#include <stdlib.h>

#include "error.h"
#include "gpu_internal.h"

/* Blocks until the region's last copy has finished, unless it already has. */
static lkv_status settle(lkv_device *d, lkv_gpu_stage *s)
{
    if (!s->pending)
        return LKV_OK;
    int done = 0;
    lkv_status st = d->drv->event_done(d->api, s->event, &done);
    if (st == LKV_OK && !done) {
        d->counters.syncs++;
        st = d->drv->event_wait(d->api, s->event);
    }
    if (st != LKV_OK)
        return lkv_fail_context(st, "waiting for a staging copy to finish");
    s->pending = 0;
    return LKV_OK;
}

/* Regions start at 64 KiB (row lists of a few thousand rows) and grow by
 * half again, up to LKV_GPU_STAGE_MAX. */
static lkv_status grow(lkv_device *d, lkv_gpu_stage *s, size_t bytes)
{
    if (s->cap >= bytes)
        return LKV_OK;
    size_t want = s->cap + s->cap / 2;
    want = want < 65536 ? 65536 : want;
    want = want < bytes ? bytes : want > LKV_GPU_STAGE_MAX ? LKV_GPU_STAGE_MAX : want;
    void *p = NULL;
    lkv_status st = d->drv->host_alloc(d->api, want, &p);
    if (st != LKV_OK)
        return lkv_fail_context(st, "%s: %zu bytes of page-locked staging memory", d->drv->name,
                                want);
    if (s->host)
        d->drv->host_free(d->api, s->host);
    s->host = p;
    s->cap = want;
    return LKV_OK;
}

lkv_status lkv_gpu_stage_take(lkv_device *d, size_t bytes, lkv_gpu_stage **out_stage)
{
    if (bytes > LKV_GPU_STAGE_MAX)
        return lkv_fail(LKV_INTERNAL, "%s: %zu bytes staged at once (at most %zu)", d->drv->name,
                        bytes, LKV_GPU_STAGE_MAX);
    lkv_gpu_stage *s = &d->stages[d->next_stage];
    lkv_status st = LKV_OK;
    if (!s->event)
        st = d->drv->event_create(d->api, &s->event);
    if (st != LKV_OK) {
        s->event = NULL;
        return lkv_fail_context(st, "creating a staging event");
    }
    st = settle(d, s);
    if (st == LKV_OK)
        st = grow(d, s, bytes);
    if (st != LKV_OK)
        return st;
    d->next_stage = (d->next_stage + 1) % LKV_GPU_STAGES;
    *out_stage = s;
    return LKV_OK;
}

lkv_status lkv_gpu_stage_copy(lkv_device *d, lkv_gpu_stage *s, lkv_gpu_ptr dst, size_t bytes)
{
    lkv_status st = d->drv->htod_async(d->api, dst, s->host, bytes);
    if (st != LKV_OK)
        return st;
    /* From here the copy may be reading the region: if the event cannot be
     * recorded, wait for the whole stream instead of guessing. */
    s->pending = 1;
    st = d->drv->event_record(d->api, s->event);
    if (st == LKV_OK)
        return LKV_OK;
    d->counters.syncs++;
    if (d->drv->sync(d->api) == LKV_OK)
        s->pending = 0;
    return lkv_fail_context(st, "recording a staging event");
}

void lkv_gpu_stage_release(lkv_device *d)
{
    for (int i = 0; i < LKV_GPU_STAGES; i++) {
        lkv_gpu_stage *s = &d->stages[i];
        /* a copy still reading the region must finish before it goes */
        if (s->pending && s->event && d->drv->event_wait(d->api, s->event) != LKV_OK)
            (void)d->drv->sync(d->api);
        if (s->event)
            d->drv->event_destroy(d->api, s->event);
        if (s->host)
            d->drv->host_free(d->api, s->host);
        s->event = NULL;
        s->host = NULL;
        s->cap = 0;
        s->pending = 0;
    }
}
