/* compact on CUDA/HIP: one launch moves K, V, pos and the states of every
 * listed row in place, each block marching forward over its (row, array,
 * column slice) (backends/gpu/kernels/compact.cu explains why that is safe). No scratch:
 * after the row lists are uploaded the launch is the only step, so a
 * failure leaves the cache as it was, never with K/V moved and state not. */
#include "dtype.h"
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

#define COMPACT_MIN_BYTES 32 /* a slice's run per slot: one whole memory sector */

/* How K and V move: the kernel variant, units per slot and the slice. */
typedef struct compact_plan {
    lkv_gpu_kernel_id kernel;
    int32_t units, slice_w;
    uint32_t slices;
} compact_plan;

/* The widest unit that divides a slot's row and both buffers' alignment;
 * then enough slices to give the device a few blocks per multiprocessor,
 * but none narrower than a sector unless the row is. Elements are moved as
 * bytes, so f16 and bf16 (2 bytes) move alike. */
static compact_plan plan(const lkv_device *d, const lkv_compact_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t row_bytes = (uint64_t)c->head_dim * lkv_dtype_size(c->dtype);
    uint64_t align = (c->k->ptr | c->v->ptr | row_bytes);
    uint32_t unit = align % 16 == 0 ? 16 : align % 4 == 0 ? 4 : 2;
    compact_plan p;
    p.kernel = unit == 16 ? LKV_GPU_K_lkv_compact_b16
               : unit == 4 ? LKV_GPU_K_lkv_compact_b4 : LKV_GPU_K_lkv_compact_b2;
    p.units = (int32_t)(row_bytes / unit);
    uint32_t min_w = COMPACT_MIN_BYTES / unit < (uint32_t)p.units ? COMPACT_MIN_BYTES / unit
                                                                   : (uint32_t)p.units;
    /* all small: units per slot and their slices fit 32 bits */
    uint32_t most = (uint32_t)lkv_gpu_div_up((uint64_t)p.units, min_w ? min_w : 1);
    uint32_t least = (uint32_t)lkv_gpu_div_up((uint64_t)p.units, LKV_COMPACT_MAX_SLICE);
    uint32_t want = (uint32_t)lkv_gpu_div_up((uint64_t)d->lim.multiprocessors * 4,
                                             (uint64_t)a->n_rows * 2);
    uint32_t slices = want > most ? most : want;
    slices = slices < least ? least : slices;
    p.slice_w = (int32_t)lkv_gpu_div_up((uint64_t)p.units, slices ? slices : 1);
    p.slices = (uint32_t)lkv_gpu_div_up((uint64_t)p.units, (uint64_t)p.slice_w);
    return p;
}

lkv_status lkv_gpu_compact(lkv_device *d, const lkv_compact_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    if (c->head_dim <= 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s compact: head_dim %d; it must be positive",
                        d->drv->name, c->head_dim);
    lkv_status st = lkv_dtype_check(c->dtype, d->drv->name, "compact");
    if (st != LKV_OK) /* before the plan divides by a 0-byte row */
        return st;
    if (a->n_rows <= 0)
        return LKV_OK;
    compact_plan p = plan(d, a);
    const int32_t *host[2] = {a->rows, a->row_k};
    size_t counts[2] = {(size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[2];
    st = lkv_gpu_upload(d, 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr kept = a->kept->ptr, k = c->k->ptr, v = c->v->ptr, pos = c->pos->ptr;
    lkv_gpu_ptr sa = c->state_a->ptr, sb = c->state_b->ptr, sf = c->state_f->ptr;
    int32_t cap = c->capacity, units = p.units, slice_w = p.slice_w, n_rows = a->n_rows;
    void *args[] = {&list[0], &list[1], &kept, &k,   &v,       &pos,   &sa,
                    &sb,      &sf,      &cap,  &units, &slice_w, &n_rows};
    return lkv_gpu_launch_kernel(d, p.kernel, 2 * p.slices + 4, lkv_gpu_rows_y(d, n_rows), 1,
                                 LKV_COMPACT_BLOCK, args);
}
