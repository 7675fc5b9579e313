/* Lanes (core/backend.h, "Lanes:"): a second handle on an open device with
 * its own in-order queue on the same context, so its work can run beside
 * the parent's. Buffers are cl_mem objects of the context, valid on any of
 * its queues, so either handle's buffers serve both. Everything a thread
 * mutates per call is the lane's own: the queue, the kernels (clSetKernelArg
 * on a kernel shared by two threads would race, so the lane builds its own
 * through cl_program.c and its binary cache), the row-list arena, the
 * scratch and the lock. The rest (library, device, settings) is copied from
 * the parent, which is never touched again, so no entry holds two locks.
 * The lane holds its own reference to the context and borrows the parent's
 * to the library (never unmapped: host_library.h), so its close frees only
 * what it made, before or after the parent's.
 *
 * A mark is a marker event. OpenCL lets a queue wait on another queue's
 * event of the same context, but only commands flushed to the device are
 * sure to run, so mark flushes: otherwise a queue waiting on the mark could
 * wait for work still held on the host. */
#include <stdlib.h>

#include "cl_internal.h"
#include "error.h"

/* The parent's read-only part: what the open read and derived, never
 * changed after it. */
static void copy_parent(const lkv_device *d, lkv_device *l)
{
    l->bind.drv = d->bind.drv;
    l->bind.lim = d->bind.lim;
    l->lib = d->lib;
    l->index = d->index;
    l->dev = d->dev;
    l->info = d->info;
    l->lane = 1;
}

/* The context retained (so the lane's close releases only its own
 * reference) and a queue of our own on it, an engine's context included:
 * the lane never issues to the engine's queue. */
static lkv_status lane_queue(lkv_device *l, cl_context ctx)
{
    lkv_status st = lkv_cl_check(l->lib.fn.clRetainContext(ctx), "clRetainContext");
    if (st != LKV_OK)
        return st;
    l->ctx = ctx;
    cl_int err = LKV_CL_SUCCESS;
    l->queue = l->lib.fn.clCreateCommandQueue(ctx, l->dev, 0, &err);
    return lkv_cl_check(err, "clCreateCommandQueue");
}

lkv_status lkv_cl_lane_open(lkv_device *d, lkv_device **out_lane)
{
    lkv_device *l = calloc(1, sizeof *l);
    if (!l)
        return lkv_fail(LKV_OUT_OF_MEMORY, "opencl: out of host memory opening a lane");
    copy_parent(d, l);
    lkv_status st = LKV_OK;
    if (!lkv_host_lock_init(&l->bind.lock, &lkv_bind_inner))
        st = lkv_fail(LKV_INTERNAL, "opencl: cannot create the lane's lock");
    if (st == LKV_OK)
        st = lane_queue(l, d->ctx);
    if (st != LKV_OK) {
        lkv_cl_close(l);
        return lkv_fail_context(st, "opening a lane on opencl device %d (%s)", d->index,
                                d->info.name);
    }
    *out_lane = l;
    return LKV_OK;
}

lkv_status lkv_cl_mark(lkv_device *d, lkv_mark **out_mark)
{
    lkv_mark *m = calloc(1, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "opencl: out of host memory for a mark");
    lkv_status st = lkv_cl_check(d->lib.fn.clEnqueueMarkerWithWaitList(d->queue, 0, NULL,
                                                                       &m->event),
                                 "clEnqueueMarkerWithWaitList");
    if (st == LKV_OK)
        st = lkv_cl_check(d->lib.fn.clFlush(d->queue), "clFlush");
    if (st != LKV_OK) {
        lkv_cl_mark_free(d, m);
        return st;
    }
    *out_mark = m;
    return LKV_OK;
}

/* A barrier rather than a wait list on each later command: every command
 * issued after it, by any path, waits. */
lkv_status lkv_cl_wait_mark(lkv_device *d, const lkv_mark *m)
{
    if (!m)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl wait_mark: the mark is NULL");
    return lkv_cl_check(d->lib.fn.clEnqueueBarrierWithWaitList(d->queue, 1, &m->event, NULL),
                        "clEnqueueBarrierWithWaitList");
}

/* A CPU device (PoCL) runs both queues on the same cores. */
int lkv_cl_lanes_concurrent(lkv_device *d)
{
    return (d->info.type & LKV_CL_DEVICE_TYPE_CPU) == 0;
}

/* No lock: releasing an event touches no queue, and OpenCL keeps the event
 * until every barrier already waiting on it has passed. */
void lkv_cl_mark_free(lkv_device *d, lkv_mark *m)
{
    if (!m)
        return;
    if (m->event)
        d->lib.fn.clReleaseEvent(m->event);
    free(m);
}
