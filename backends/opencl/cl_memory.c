/* Buffers: cl_mem objects of the device's context, zero-filled on
 * allocation, sizes rounded up to 16 bytes (the shared plans bind whole
 * 32-bit words, and 16-byte loads read whole units). Writes and reads
 * block, so the caller's memory is free again when they return; copies
 * and fills are queued in order with the kernels. */
#include <stdlib.h>

#include "cl_internal.h"
#include "error.h"

static lkv_status check_range(const lkv_buffer *b, size_t off, size_t bytes, const char *what)
{
    if (off > b->size || bytes > b->size - off)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl %s of %zu bytes at offset %zu overruns a "
                        "%llu-byte buffer", what, bytes, off, (unsigned long long)b->size);
    return LKV_OK;
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

void lkv_cl_free(lkv_device *d, lkv_buffer *b)
{
    if (!b)
        return;
    /* Released while queued work still uses it is fine: OpenCL keeps the
     * object until that work is done. */
    if (b->mem)
        d->lib.fn.clReleaseMemObject(b->mem);
    free(b);
}

lkv_status lkv_cl_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n)
{
    lkv_status st = check_range(dst, off, n, "write");
    if (st != LKV_OK || n == 0)
        return st;
    return lkv_cl_check(d->lib.fn.clEnqueueWriteBuffer(d->queue, dst->mem, LKV_CL_TRUE, off, n, src,
                                                       0, NULL, NULL),
                        "clEnqueueWriteBuffer");
}

lkv_status lkv_cl_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    lkv_status st = check_range(src, off, n, "read");
    if (st != LKV_OK || n == 0)
        return st;
    return lkv_cl_check(d->lib.fn.clEnqueueReadBuffer(d->queue, src->mem, LKV_CL_TRUE, off, n, dst,
                                                      0, NULL, NULL),
                        "clEnqueueReadBuffer");
}

lkv_status lkv_cl_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t n)
{
    lkv_status st = check_range(dst, dst_off, n, "copy");
    if (st == LKV_OK)
        st = check_range(src, src_off, n, "copy");
    if (st == LKV_OK && src == dst && n > 0 && src_off < dst_off + n && dst_off < src_off + n)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "opencl copy of %zu bytes from offset %zu to %zu "
                      "overlaps itself", n, src_off, dst_off);
    if (st != LKV_OK || n == 0)
        return st;
    return lkv_cl_check(d->lib.fn.clEnqueueCopyBuffer(d->queue, src->mem, dst->mem, src_off,
                                                      dst_off, n, 0, NULL, NULL),
                        "clEnqueueCopyBuffer");
}

lkv_status lkv_cl_sync(lkv_device *d)
{
    return lkv_cl_check(d->lib.fn.clFinish(d->queue), "clFinish");
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
