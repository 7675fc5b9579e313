/* select on CUDA/HIP: a radix select on the scores' order keys
 * (backends/gpu/kernels/select.cu). Where every row fits a few blocks'
 * shared memory and those blocks fit the device at once, they share each
 * row (lkv_select_spread: the scores read once, by many blocks; a
 * cooperative launch when a row takes more than one); else one block a
 * row reads it five times (lkv_select_rows). */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

/* lkv_select_spread over ceil(longest / LKV_SELECT_CHUNK) blocks a row:
 * LKV_UNSUPPORTED, with nothing launched, where those do not fit the
 * device at once or the driver cannot launch them so. */
static lkv_status launch_spread(lkv_device *d, const lkv_select_args *a, const lkv_gpu_ptr *list)
{
    lkv_gpu_kernel_id kernel = LKV_GPU_K_lkv_select_spread;
    int32_t longest = lkv_gpu_longest(a->row_n, a->n_rows);
    uint64_t parts = lkv_gpu_div_up(longest > 0 ? (uint64_t)longest : 1u, LKV_SELECT_CHUNK);
    const uint32_t grid[3] = {(uint32_t)parts, (uint32_t)a->n_rows, 1};
    int together = d->cooperative && lkv_gpu_one_wave(d, kernel, LKV_SELECT_BLOCK, grid);
    if ((uint32_t)a->n_rows > d->lim.max_grid_y || (parts > 1 && !together))
        return LKV_UNSUPPORTED;
    lkv_status st = lkv_gpu_reserve(d, &d->select_sync,
                                    (size_t)a->n_rows * LKV_SELECT_SYNC_WORDS(parts) * 4);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr scores = a->scores->ptr, kept = a->kept->ptr, sync = d->select_sync->ptr;
    int32_t cap = a->capacity;
    void *args[] = {(void *)&list[0], (void *)&list[1], (void *)&list[2], &scores, &kept, &sync,
                    &cap};
    if (parts == 1)
        return lkv_gpu_launch_kernel(d, kernel, grid[0], grid[1], grid[2], LKV_SELECT_BLOCK,
                                     args);
    return lkv_gpu_launch_cooperative(d, kernel, grid, LKV_SELECT_BLOCK, args);
}

lkv_status lkv_gpu_select(lkv_device *d, const lkv_select_args *a)
{
    if (a->n_rows <= 0)
        return LKV_OK;
    const int32_t *host[3] = {a->rows, a->row_n, a->row_k};
    size_t counts[3] = {(size_t)a->n_rows, (size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[3];
    lkv_status st = lkv_gpu_upload(d, 3, host, counts, list);
    if (st != LKV_OK)
        return st;
    st = launch_spread(d, a, list);
    if (st != LKV_UNSUPPORTED)
        return st;
    lkv_clear_error(); /* the rows do not fit the spread select: one block a row */
    lkv_gpu_ptr scores = a->scores->ptr, kept = a->kept->ptr;
    int32_t cap = a->capacity, n_rows = a->n_rows;
    void *args[] = {&list[0], &list[1], &list[2], &scores, &kept, &cap, &n_rows};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_select_rows, (uint32_t)n_rows, 1, 1,
                                 LKV_SELECT_BLOCK, args);
}
