/* select on CUDA/HIP: one block per listed row, a radix select on the
 * scores' order keys (backends/gpu/kernels/select.cu). */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

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
    lkv_gpu_ptr scores = a->scores->ptr, kept = a->kept->ptr;
    int32_t cap = a->capacity, n_rows = a->n_rows;
    void *args[] = {&list[0], &list[1], &list[2], &scores, &kept, &cap, &n_rows};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_select_rows, (uint32_t)n_rows, 1, 1,
                                 LKV_SELECT_BLOCK, args);
}
