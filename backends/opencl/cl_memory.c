/* Buffers: cl_mem objects of the device's context, zero-filled on
 * allocation, sizes rounded up to 16 bytes (the shared plans bind whole
 * 32-bit words, and 16-byte loads read whole units), or views of the
 * engine's (wrap: its cl_mem retained, an offset added to every use).
 * Copies and fills are queued in order with the kernels. No entry waits
 * but read, sync and a write too large to stage: a write of up to
 * LKV_CL_STAGED_WRITE bytes is copied into the row-list arena's host side
 * and enqueued unblocking, so a decode step's inputs cost no host wait
 * (a batch of 64 sequences' q, k and v is a few hundred KiB); a larger one
 * blocks (counted as a sync), so the caller's memory is free when it
 * returns. A blocking read or a finish drains the in-order queue, so
 * after either the arena is rewound for free (cl_dispatch.c). */
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"

#define LKV_CL_STAGED_WRITE ((size_t)8 << 20)

static lkv_status check_range(const lkv_buffer *b, size_t off, size_t bytes, const char *what)
{
    if (off > b->size || bytes > b->size - off)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl %s of %zu bytes at offset %zu overruns a "
                        "%llu-byte buffer", what, bytes, off, (unsigned long long)b->size);
    return LKV_OK;
}

lkv_status lkv_cl_finish(lkv_device *d, const char *why)
{
    d->bind.count.syncs++;
    lkv_status st = lkv_cl_check(d->lib.fn.clFinish(d->queue), "clFinish");
    if (st == LKV_OK)
        lkv_cl_drained(d);
    return st == LKV_OK ? st : lkv_fail_context(st, "%s", why);
}

lkv_status lkv_cl_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    if (bytes > d->info.max_alloc || bytes > SIZE_MAX - 16)
        return lkv_fail(LKV_OUT_OF_MEMORY, "opencl: a buffer of %zu bytes exceeds this device's "
                        "largest allocation (%llu bytes)", bytes,
                        (unsigned long long)d->info.max_alloc);
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "opencl: out of host memory for a buffer");
    b->size = ((uint64_t)bytes + 15) / 16 * 16;
    b->size = b->size ? b->size : 16;
    cl_int err = LKV_CL_SUCCESS;
    b->mem = d->lib.fn.clCreateBuffer(d->ctx, LKV_CL_MEM_READ_WRITE, (size_t)b->size, NULL, &err);
    lkv_status st = lkv_cl_check(err, "clCreateBuffer");
    const cl_uint zero = 0;
    if (st == LKV_OK)
        st = lkv_cl_check(d->lib.fn.clEnqueueFillBuffer(d->queue, b->mem, &zero, sizeof zero, 0,
                                                        (size_t)b->size, 0, NULL, NULL),
                          "clEnqueueFillBuffer");
    if (st != LKV_OK) {
        lkv_cl_free(d, b);
        return lkv_fail_context(st, "allocating %zu bytes", bytes);
    }
    *out_buf = b;
    return LKV_OK;
}

/* The cl_mem of a view must be of this context and hold the range. */
static lkv_status check_foreign(lkv_device *d, cl_mem mem, uint64_t offset, size_t bytes)
{
    cl_context ctx = NULL;
    size_t size = 0;
    cl_int err = d->lib.fn.clGetMemObjectInfo(mem, LKV_CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err == LKV_CL_SUCCESS)
        err = d->lib.fn.clGetMemObjectInfo(mem, LKV_CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != LKV_CL_SUCCESS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl wrap: handle 0x%llx is not a cl_mem "
                        "(clGetMemObjectInfo: %s)", (unsigned long long)(uintptr_t)mem,
                        lkv_cl_error_name(err) ? lkv_cl_error_name(err) : "error");
    if (ctx != d->ctx)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl wrap: the cl_mem belongs to another "
                        "context than the runtime's");
    if (offset > size || bytes > size - offset)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl wrap: %zu bytes at offset %llu overrun the "
                        "%zu-byte cl_mem", bytes, (unsigned long long)offset, size);
    return LKV_OK;
}

/* No sub-buffer: the view's offset goes into every kernel argument and
 * transfer, so it needs only the kernels' 16-byte alignment (the binding
 * alignment, checked by the shared wrap entry), not the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN, which only sub-buffers must meet. */
lkv_status lkv_cl_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf)
{
    cl_mem mem = (cl_mem)(uintptr_t)handle;
    lkv_status st = check_foreign(d, mem, offset, bytes);
    if (st != LKV_OK)
        return st;
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "opencl: out of host memory for a buffer view");
    st = lkv_cl_check(d->lib.fn.clRetainMemObject(mem), "clRetainMemObject");
    if (st != LKV_OK) {
        free(b);
        return st;
    }
    b->mem = mem;
    b->size = bytes;
    b->base = offset;
    *out_buf = b;
    return LKV_OK;
}

void lkv_cl_free(lkv_device *d, lkv_buffer *b)
{
    if (!b)
        return;
    /* Released while queued work still uses it is fine: OpenCL keeps the
     * object until that work is done. A view drops only its own retain. */
    if (b->mem)
        d->lib.fn.clReleaseMemObject(b->mem);
    free(b);
}

lkv_status lkv_cl_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n)
{
    lkv_status st = check_range(dst, off, n, "write");
    if (st != LKV_OK || n == 0)
        return st;
    d->bind.count.h2d_copies++;
    d->bind.count.h2d_bytes += (int64_t)n;
    if (n <= LKV_CL_STAGED_WRITE) {
        st = lkv_cl_list_room(d, n);
        return st == LKV_OK ? lkv_cl_put_staged(d, dst, dst->base + off, src, n) : st;
    }
    d->bind.count.syncs++; /* a blocking write waits for the queue to reach it */
    return lkv_cl_check(d->lib.fn.clEnqueueWriteBuffer(d->queue, dst->mem, LKV_CL_TRUE,
                                                       (size_t)(dst->base + off), n, src, 0, NULL,
                                                       NULL),
                        "clEnqueueWriteBuffer");
}

lkv_status lkv_cl_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    lkv_status st = check_range(src, off, n, "read");
    if (st != LKV_OK || n == 0)
        return st;
    d->bind.count.d2h_copies++;
    d->bind.count.d2h_bytes += (int64_t)n;
    d->bind.count.syncs++;
    st = lkv_cl_check(d->lib.fn.clEnqueueReadBuffer(d->queue, src->mem, LKV_CL_TRUE,
                                                    (size_t)(src->base + off), n, dst, 0, NULL,
                                                    NULL),
                      "clEnqueueReadBuffer");
    if (st == LKV_OK)
        lkv_cl_drained(d);
    return st;
}

lkv_status lkv_cl_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t n)
{
    lkv_status st = check_range(dst, dst_off, n, "copy");
    if (st == LKV_OK)
        st = check_range(src, src_off, n, "copy");
    if (st == LKV_OK && src->mem == dst->mem && n > 0 && src->base + src_off < dst->base + dst_off + n &&
        dst->base + dst_off < src->base + src_off + n)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "opencl copy of %zu bytes from offset %zu to %zu "
                      "overlaps itself", n, src_off, dst_off);
    if (st != LKV_OK || n == 0)
        return st;
    return lkv_cl_check(d->lib.fn.clEnqueueCopyBuffer(d->queue, src->mem, dst->mem,
                                                      (size_t)(src->base + src_off),
                                                      (size_t)(dst->base + dst_off), n, 0, NULL,
                                                      NULL),
                        "clEnqueueCopyBuffer");
}

lkv_status lkv_cl_sync(lkv_device *d)
{
    return lkv_cl_finish(d, "sync");
}

lkv_status lkv_cl_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes)
{
    if (*buf && (*buf)->size >= bytes)
        return LKV_OK;
    lkv_buffer *fresh = NULL;
    /* Grow with headroom: caches grow step by step. */
    size_t want = bytes + bytes / 4 < d->info.max_alloc ? bytes + bytes / 4 : bytes;
    lkv_status st = lkv_cl_alloc(d, want, &fresh);
    if (st != LKV_OK)
        return st;
    lkv_cl_free(d, *buf);
    *buf = fresh;
    return LKV_OK;
}
