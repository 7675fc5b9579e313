/* compact on CUDA/HIP: one launch moves K, V, pos and the states of every
 * listed row in place, each block marching forward over its (row, array,
 * column slice) (backends/gpu/kernels/compact.cu explains why that is safe). No scratch:
 * after the row lists are uploaded the launch is the only step, so a
 * failure leaves the cache as it was, never with K/V moved and state not.
 *
 * A cache that fills holes moves no K/V: lkv_compact_phys rebuilds the
 * hole map (scatter to scratch, then copy back), in runs of rows whose map
 * fits a bounded scratch, then the same compact launch moves the metadata
 * only. The first scatter touches only scratch, so a launch refused there
 * leaves the cache as it was; one refused after the first copy-back leaves
 * an eviction half done, which the core reports as one that failed
 * part-way (as OpenCL's queued dispatches do). */
#include "dtype.h"
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

#define COMPACT_MIN_BYTES 32 /* a slice's run per slot: one whole memory sector */
#define COMPACT_PHYS_SCRATCH ((uint64_t)16 << 20) /* map rows in scratch at once, bytes */

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

/* The map rebuild of `len` listed rows from `first` (lists: rows, row_k,
 * row_n on the device): scatter into scratch, then copy back. */
static lkv_status phys_run(lkv_device *d, const lkv_compact_args *a, const lkv_gpu_ptr *list,
                           int32_t first, int32_t len)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_gpu_ptr kept = a->kept->ptr, phys = c->phys->ptr, scratch = d->compact_scratch->ptr;
    lkv_gpu_ptr rows = list[0] + (lkv_gpu_ptr)first * 4, k = list[1] + (lkv_gpu_ptr)first * 4;
    lkv_gpu_ptr n = list[2] + (lkv_gpu_ptr)first * 4;
    int32_t cap = c->capacity, longest = 0, phase = 0;
    for (int32_t r = first; r < first + len; r++)
        longest = a->row_n[r] > longest ? a->row_n[r] : longest;
    void *args[] = {&rows, &k, &n, &kept, &phys, &scratch, &cap, &len, &phase};
    lkv_status st = LKV_OK;
    for (; st == LKV_OK && phase < 2; phase++)
        st = lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_compact_phys,
                                   lkv_gpu_stride_blocks(longest, LKV_COMPACT_BLOCK),
                                   lkv_gpu_rows_y(d, len), 1, LKV_COMPACT_BLOCK, args);
    return st;
}

/* Holes: the map rebuilt run by run (a run copies back before the next
 * scatters into the shared scratch), then the metadata. */
static lkv_status compact_holes(lkv_device *d, const lkv_compact_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t row_bytes = (uint64_t)c->capacity * 4;
    uint64_t fit = COMPACT_PHYS_SCRATCH / row_bytes;
    int32_t run = fit < 1 ? 1 : fit < (uint64_t)a->n_rows ? (int32_t)fit : a->n_rows;
    lkv_status st = lkv_gpu_reserve(d, &d->compact_scratch, (size_t)(row_bytes * (uint64_t)run));
    const int32_t *host[3] = {a->rows, a->row_k, a->row_n};
    size_t counts[3] = {(size_t)a->n_rows, (size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[3];
    if (st == LKV_OK)
        st = lkv_gpu_upload(d, 3, host, counts, list);
    for (int32_t first = 0; st == LKV_OK && first < a->n_rows; first += run) {
        int32_t len = a->n_rows - first < run ? a->n_rows - first : run;
        st = phys_run(d, a, list, first, len);
    }
    if (st != LKV_OK)
        return st;
    /* compact_b4 with no K/V units: x = 4 moves pos and the three states */
    lkv_gpu_ptr kept = a->kept->ptr, none = 0, pos = c->pos->ptr;
    lkv_gpu_ptr sa = c->state_a->ptr, sb = c->state_b->ptr, sf = c->state_f->ptr;
    int32_t cap = c->capacity, units = 0, slice_w = 1, n_rows = a->n_rows;
    void *args[] = {&list[0], &list[1], &kept, &none, &none,  &pos,   &sa,
                    &sb,      &sf,      &cap,  &units, &slice_w, &n_rows};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_compact_b4, 4, lkv_gpu_rows_y(d, n_rows), 1,
                                 LKV_COMPACT_BLOCK, args);
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
    if (c->phys)
        return compact_holes(d, a);
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
