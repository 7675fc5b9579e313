/* The shared plans' dispatches on OpenCL. A pipeline's kernel takes each
 * binding as (buffer, byte offset) and each 4-byte push-constant field as
 * one scalar (backends/opencl/kernels/lkv_cl.h), and runs gx * gy * gz work-groups
 * of `wg` work-items. The queue is in order, so a kernel sees the writes of
 * every command before it, which is all the plans need between dispatches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"

static lkv_status set_args(lkv_device *d, cl_kernel k, const lkv_bind_pipe_info *info,
                           const lkv_bind_buf *binds, const void *push)
{
    const lkv_cl_fns *fn = &d->lib.fn;
    cl_uint arg = 0;
    cl_int err = LKV_CL_SUCCESS;
    for (uint32_t i = 0; i < info->bindings && err == LKV_CL_SUCCESS; i++) {
        cl_ulong off = binds[i].offset + binds[i].buf->base;
        err = fn->clSetKernelArg(k, arg++, sizeof(cl_mem), &binds[i].buf->mem);
        if (err == LKV_CL_SUCCESS)
            err = fn->clSetKernelArg(k, arg++, sizeof off, &off);
    }
    for (uint32_t i = 0; i < info->push_bytes / 4 && err == LKV_CL_SUCCESS; i++)
        err = fn->clSetKernelArg(k, arg++, 4, (const unsigned char *)push + 4 * i);
    if (err != LKV_CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clSetKernelArg(%s, argument %u)", info->name, arg - 1);
        return lkv_cl_check(err, what);
    }
    return LKV_OK;
}

lkv_status lkv_cl_dispatch(lkv_device *d, lkv_bind_pipe pipe, const lkv_bind_buf *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz)
{
    lkv_status st = lkv_cl_pipe_ready(d, pipe);
    if (st != LKV_OK || gx == 0 || gy == 0 || gz == 0)
        return st;
    const lkv_bind_pipe_info *info = &lkv_bind_pipes[pipe];
    cl_kernel k = d->pipes[pipe].kernel;
    st = set_args(d, k, info, binds, push);
    if (st != LKV_OK)
        return st;
    size_t wg = d->bind.lim.wg;
    size_t global[3] = {(size_t)gx * wg, gy, gz}, local[3] = {wg, 1, 1};
    cl_int err = d->lib.fn.clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    if (err == LKV_CL_SUCCESS)
        d->bind.count.launches++;
    if (err != LKV_CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", info->name);
        return lkv_cl_check(err, what);
    }
    return LKV_OK;
}

static uint64_t arena_at(const lkv_device *d)
{
    uint64_t align = d->bind.lim.align;
    return (d->arena_used + align - 1) / align * align;
}

void lkv_cl_drained(lkv_device *d)
{
    d->arena_used = 0;
}

/* Lists and staged writes fill the arena until the queue drains, which a
 * host-I/O step does when it reads its output back. Only when they overflow
 * it first does the host wait (recycling the arena, counted as a sync), and
 * the arena then doubles, up to LKV_CL_ARENA_MAX, so the next such run
 * fits: device-I/O steps, which never drain, wait once per that many bytes. */
#define LKV_CL_ARENA_MIN ((size_t)1 << 20)
#define LKV_CL_ARENA_MAX ((size_t)32 << 20)

lkv_status lkv_cl_list_room(lkv_device *d, size_t bytes)
{
    if (d->arena && arena_at(d) + bytes <= d->arena->size)
        return LKV_OK;
    size_t have = d->arena ? (size_t)d->arena->size : 0;
    size_t want = have < LKV_CL_ARENA_MIN ? LKV_CL_ARENA_MIN
                  : have < LKV_CL_ARENA_MAX && d->arena_used > 0 ? have * 2 : have;
    /* The first arena has nothing queued on it to wait for. */
    lkv_status st = d->arena ? lkv_cl_finish(d, "recycling the row-list arena") : LKV_OK;
    want = want < bytes ? bytes : want;
    if (st == LKV_OK && want > have) {
        unsigned char *host = malloc(want + want / 4 + 16);
        st = host ? lkv_cl_reserve(d, &d->arena, want)
                  : lkv_fail(LKV_OUT_OF_MEMORY, "opencl: out of host memory for row lists");
        if (st == LKV_OK) {
            free(d->arena_host);
            d->arena_host = host;
        } else {
            free(host);
        }
    }
    if (st == LKV_OK)
        d->arena_used = 0;
    return st;
}

lkv_status lkv_cl_put_staged(lkv_device *d, const lkv_buffer *dst, uint64_t off, const void *src,
                             size_t bytes)
{
    uint64_t at = arena_at(d);
    if (!d->arena || at + bytes > d->arena->size)
        return lkv_fail(LKV_INTERNAL, "opencl: %zu bytes staged without room made for them", bytes);
    memcpy(d->arena_host + at, src, bytes);
    if (bytes > 0) {
        cl_int err = d->lib.fn.clEnqueueWriteBuffer(d->queue, dst->mem, LKV_CL_FALSE, (size_t)off,
                                                    bytes, d->arena_host + at, 0, NULL, NULL);
        if (err != LKV_CL_SUCCESS)
            return lkv_cl_check(err, "clEnqueueWriteBuffer (staged)");
    }
    d->arena_used = at + bytes;
    return LKV_OK;
}

lkv_status lkv_cl_list_put(lkv_device *d, const uint32_t *words, size_t bytes,
                           lkv_bind_buf *out_bind)
{
    lkv_status st = lkv_cl_list_room(d, bytes);
    uint64_t at = arena_at(d);
    if (st == LKV_OK)
        st = lkv_cl_put_staged(d, d->arena, at, words, bytes);
    if (st != LKV_OK)
        return st;
    out_bind->buf = d->arena;
    out_bind->offset = at;
    out_bind->range = bytes ? bytes : 4;
    return LKV_OK;
}
