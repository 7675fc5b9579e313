/* Buffers, scratch and row-list uploads of a CUDA-like device. Every entry
 * either does all it was asked or nothing. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_alloc(lkv_device *d, size_t bytes, lkv_buffer **out_buf)
{
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for a buffer handle",
                        d->drv->name);
    /* Whole 16-byte units, so a kernel's vector access of the last element
     * of an odd-sized buffer stays inside the allocation. */
    size_t padded = bytes > SIZE_MAX - 15 ? bytes : (bytes + 15) & ~(size_t)15;
    lkv_status st = d->drv->mem_alloc(d->api, padded ? padded : 16, &b->ptr);
    if (st != LKV_OK) {
        free(b);
        return lkv_fail_context(st, "allocating %zu bytes", bytes);
    }
    st = d->drv->mem_zero(d->api, b->ptr, padded ? padded : 16);
    if (st != LKV_OK) {
        d->drv->mem_free(d->api, b->ptr);
        free(b);
        return lkv_fail_context(st, "zeroing %zu new bytes", bytes);
    }
    b->size = bytes;
    *out_buf = b;
    return LKV_OK;
}

void lkv_gpu_free(lkv_device *d, lkv_buffer *b)
{
    if (!b)
        return;
    if (!b->borrowed)
        d->drv->mem_free(d->api, b->ptr);
    else if (d->drv->borrow)
        (void)d->drv->borrow(d->api, b->ptr, b->size, 0); /* nothing to undo if it fails */
    free(b);
}

/* A view costs one small host allocation: no wait, and no driver call but
 * the optional `borrow` of a checking driver. The address is the caller's to
 * vouch for; only its shape is checked. */
lkv_status lkv_gpu_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                        lkv_buffer **out_buf)
{
    if (!handle || offset % 4 || handle % 4 || handle > UINT64_MAX - offset ||
        bytes > UINT64_MAX - (handle + offset))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s device array: handle 0x%llx offset %llu (%zu "
                        "bytes) is not a usable device address (non-zero, handle and offset "
                        "multiples of 4)", d->drv->name, (unsigned long long)handle,
                        (unsigned long long)offset, bytes);
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory wrapping a device array",
                        d->drv->name);
    b->ptr = handle + offset;
    b->size = bytes;
    b->borrowed = 1;
    lkv_status st = d->drv->borrow ? d->drv->borrow(d->api, b->ptr, bytes, 1) : LKV_OK;
    if (st != LKV_OK) {
        free(b);
        return st;
    }
    *out_buf = b;
    return LKV_OK;
}

static lkv_status check_range(const lkv_device *d, const lkv_buffer *b, size_t off, size_t n,
                              const char *what)
{
    if (off > b->size || n > b->size - off)
        return lkv_fail(LKV_INTERNAL, "%s %s of %zu bytes at offset %zu overruns a %zu-byte buffer",
                        d->drv->name, what, n, off, b->size);
    return LKV_OK;
}

/* Copies n host bytes to dst through the staging ring, in pieces of at
 * most one region, each queued behind the work before it; the host waits
 * only when the ring comes round to a piece still in flight. Counted as one
 * copy of n bytes. */
static lkv_status staged_htod(lkv_device *d, lkv_gpu_ptr dst, const void *src, size_t n)
{
    lkv_status st = LKV_OK;
    for (size_t done = 0; st == LKV_OK && done < n;) {
        size_t piece = n - done < LKV_GPU_STAGE_MAX ? n - done : LKV_GPU_STAGE_MAX;
        lkv_gpu_stage *s = NULL;
        st = lkv_gpu_stage_take(d, piece, &s);
        if (st != LKV_OK)
            break;
        memcpy(s->host, (const unsigned char *)src + done, piece);
        st = lkv_gpu_stage_copy(d, s, dst + done, piece);
        done += piece;
    }
    if (st == LKV_OK && n) {
        d->counters.h2d_copies++;
        d->counters.h2d_bytes += (int64_t)n;
    }
    return st;
}

lkv_status lkv_gpu_write(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n)
{
    lkv_status st = check_range(d, dst, off, n, "write");
    if (st == LKV_OK && n)
        st = staged_htod(d, dst->ptr + off, src, n);
    return st;
}

/* Frees the retired scratch once the host has waited for the stream, so
 * nothing queued can still read it. */
void lkv_gpu_free_retired(lkv_device *d)
{
    for (int i = 0; i < d->n_retired; i++)
        lkv_gpu_free(d, d->retired[i]);
    d->n_retired = 0;
}

/* A read waits for the stream: one sync, whatever it found queued. */
lkv_status lkv_gpu_read(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n)
{
    lkv_status st = check_range(d, src, off, n, "read");
    if (st == LKV_OK && n) {
        d->counters.syncs++;
        st = d->drv->dtoh(d->api, dst, src->ptr + off, n);
        if (st == LKV_OK)
            lkv_gpu_free_retired(d);
    }
    if (st == LKV_OK && n) {
        d->counters.d2h_copies++;
        d->counters.d2h_bytes += (int64_t)n;
    }
    return st;
}

lkv_status lkv_gpu_copy(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                        size_t src_off, size_t n)
{
    lkv_status st = check_range(d, dst, dst_off, n, "copy destination");
    if (st == LKV_OK)
        st = check_range(d, src, src_off, n, "copy source");
    if (st == LKV_OK && n)
        st = d->drv->dtod(d->api, dst->ptr + dst_off, src->ptr + src_off, n);
    return st;
}

lkv_status lkv_gpu_sync(lkv_device *d)
{
    d->counters.syncs++;
    lkv_status st = d->drv->sync(d->api);
    if (st == LKV_OK)
        lkv_gpu_free_retired(d);
    return st;
}

lkv_status lkv_gpu_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes)
{
    if (*buf && (*buf)->size >= bytes)
        return LKV_OK;
    /* Grow by half again, so a cache that lengthens step by step does not
     * reallocate on every step. */
    size_t want = bytes > SIZE_MAX / 3 * 2 ? bytes : bytes + bytes / 2;
    lkv_buffer *fresh = NULL;
    lkv_status st = lkv_gpu_alloc(d, want, &fresh);
    if (st != LKV_OK) {
        want = bytes;
        st = lkv_gpu_alloc(d, want, &fresh);
    }
    if (st != LKV_OK)
        return lkv_fail_context(st, "%s scratch of %zu bytes", d->drv->name, bytes);
    /* Work already queued may still use the old scratch, and freeing device
     * memory now would wait for it (cuMemFree and hipFree synchronize): it
     * is retired until the host next waits anyway. Only when too many are
     * retired does one go now, a host wait counted like any other. */
    if (*buf && d->n_retired == LKV_GPU_RETIRED) {
        d->counters.syncs++;
        lkv_gpu_free(d, d->retired[0]);
        memmove(d->retired, d->retired + 1, (LKV_GPU_RETIRED - 1) * sizeof d->retired[0]);
        d->n_retired--;
    }
    if (*buf)
        d->retired[d->n_retired++] = *buf;
    *buf = fresh;
    return LKV_OK;
}

static lkv_status host_room(lkv_device *d, size_t bytes)
{
    if (d->lists_host_cap >= bytes)
        return LKV_OK;
    unsigned char *p = realloc(d->lists_host, bytes);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: no host memory for %zu bytes of row lists",
                        d->drv->name, bytes);
    d->lists_host = p;
    d->lists_host_cap = bytes;
    return LKV_OK;
}

lkv_status lkv_gpu_upload(lkv_device *d, int n, const int32_t *const *host, const size_t *counts,
                          lkv_gpu_ptr *out_ptrs)
{
    /* Each list starts on a 16-byte boundary, so kernels may read them by vector. */
    size_t total = 0, offs[16];
    if (n < 1 || n > 16)
        return lkv_fail(LKV_INTERNAL, "%s: %d row lists in one upload (1..16)", d->drv->name, n);
    for (int i = 0; i < n; i++) {
        offs[i] = total;
        total += (counts[i] * sizeof(int32_t) + 15) & ~(size_t)15;
    }
    lkv_status st = host_room(d, total ? total : 16);
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->lists, total ? total : 16);
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (counts[i])
            memcpy(d->lists_host + offs[i], host[i], counts[i] * sizeof(int32_t));
    if (total) {
        /* Queued behind the previous op's kernels, which may still read the
         * lists it replaces. */
        st = staged_htod(d, d->lists->ptr, d->lists_host, total);
        if (st != LKV_OK)
            return lkv_fail_context(st, "uploading %zu bytes of row lists", total);
    }
    for (int i = 0; i < n; i++)
        out_ptrs[i] = d->lists->ptr + offs[i];
    return LKV_OK;
}

lkv_status lkv_gpu_upload_slots(lkv_device *d, int n_cols, const int32_t *const *cols,
                                int32_t n, const lkv_engine_slots *s, lkv_gpu_ptr *out_ptrs)
{
    /* a dense layout uploads a one-entry table, never read */
    static const int32_t none = 0;
    int paged = s->block_size > 0;
    const int32_t *host[16];
    size_t counts[16];
    if (n_cols < 0 || n_cols > 13)
        return lkv_fail(LKV_INTERNAL, "%s: %d row lists beside the slots (0..13)", d->drv->name,
                        n_cols);
    for (int c = 0; c < n_cols; c++)
        host[c] = cols[c], counts[c] = (size_t)n;
    host[n_cols] = (const int32_t *)(const void *)s->base;
    host[n_cols + 1] = paged ? s->tab_row : host[n_cols];
    host[n_cols + 2] = paged ? s->table : &none;
    counts[n_cols] = counts[n_cols + 1] = (size_t)n;
    counts[n_cols + 2] = paged ? (size_t)s->table_rows * (size_t)s->max_blocks : 1;
    return lkv_gpu_upload(d, n_cols + 3, host, counts, out_ptrs);
}

static lkv_status launch_with(lkv_device *d, lkv_gpu_kernel_id kernel, const uint32_t grid[3],
                              uint32_t block, void **args, int cooperative)
{
    uint32_t gx = grid[0], gy = grid[1], gz = grid[2];
    /* the names below are indexed by it */
    if ((int)kernel < 0 || (int)kernel >= LKV_GPU_KERNEL_COUNT)
        return lkv_fail(LKV_INTERNAL, "%s: kernel id %d outside 0..%d", d->drv->name, (int)kernel,
                        LKV_GPU_KERNEL_COUNT - 1);
    if (gx == 0 || gy == 0 || gz == 0)
        return LKV_OK; /* nothing to do: an empty grid is not an error */
    if (gy > d->lim.max_grid_y || gz > d->lim.max_grid_z || gx > INT32_MAX)
        return lkv_fail(LKV_INTERNAL, "%s: grid %u x %u x %u for %s exceeds the device's limits "
                        "(y %u, z %u)", d->drv->name, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                        lkv_gpu_kernel_names[kernel], (unsigned)d->lim.max_grid_y,
                        (unsigned)d->lim.max_grid_z);
    if (cooperative && !d->drv->launch_cooperative)
        return lkv_fail(LKV_UNSUPPORTED, "%s: no cooperative launch", d->drv->name);
    lkv_gpu_launch l = {kernel, {gx, gy, gz}, block, args};
    lkv_status st = cooperative ? d->drv->launch_cooperative(d->api, &l)
                                : d->drv->launch(d->api, &l);
    if (st == LKV_OK)
        d->counters.launches++;
    if (st == LKV_UNSUPPORTED && cooperative)
        return st; /* nothing launched: the caller takes its other way */
    if (st != LKV_OK)
        return lkv_fail_context(st, "launching %s (%u x %u x %u blocks of %u)",
                                lkv_gpu_kernel_names[kernel], (unsigned)gx, (unsigned)gy,
                                (unsigned)gz, (unsigned)block);
    return LKV_OK;
}

lkv_status lkv_gpu_launch_kernel(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t gx, uint32_t gy,
                                 uint32_t gz, uint32_t block, void **args)
{
    const uint32_t grid[3] = {gx, gy, gz};
    return launch_with(d, kernel, grid, block, args, 0);
}

lkv_status lkv_gpu_launch_cooperative(lkv_device *d, lkv_gpu_kernel_id kernel,
                                      const uint32_t grid[3], uint32_t block, void **args)
{
    return launch_with(d, kernel, grid, block, args, 1);
}

int lkv_gpu_resident(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t block)
{
    if (d->resident[kernel] == 0) {
        int blocks = 0;
        lkv_status st = d->drv->occupancy ? d->drv->occupancy(d->api, kernel, block, &blocks)
                                          : LKV_UNSUPPORTED;
        d->resident[kernel] = st == LKV_OK && blocks > 0 ? blocks : -1;
        lkv_clear_error(); /* a driver that cannot say is not a failure of the call */
    }
    return d->resident[kernel];
}

int lkv_gpu_one_wave(lkv_device *d, lkv_gpu_kernel_id kernel, uint32_t block,
                     const uint32_t grid[3])
{
    int resident = lkv_gpu_resident(d, kernel, block);
    uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
    return resident <= 0 || blocks <= (uint64_t)d->lim.multiprocessors * (uint64_t)resident;
}
