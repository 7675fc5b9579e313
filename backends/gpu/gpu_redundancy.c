/* redundancy on CUDA/HIP: the two row lists uploaded in one copy, then one
 * launch of backends/gpu/kernels/redundancy.cu, a block per listed row; the
 * cache's probs and kept serve as its scratch (core/backend.h). */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

lkv_status lkv_gpu_redundancy(lkv_device *d, const lkv_redundancy_args *a)
{
    if (a->n_rows <= 0)
        return LKV_OK;
    const int32_t *host[2] = {a->rows, a->row_n};
    size_t counts[2] = {(size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[2] = {0, 0};
    lkv_status st = lkv_gpu_upload(d, 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    const lkv_cache_buffers *c = a->cache;
    lkv_gpu_ptr k = c->k->ptr, phys = c->phys ? c->phys->ptr : 0;
    lkv_gpu_ptr work = a->work->ptr, match = a->match->ptr, scores = a->scores->ptr;
    int32_t n = a->n_rows, cap = c->capacity, dim = c->head_dim, tail = a->protect_tail;
    int32_t kv_cap = c->paged ? 0 : cap;
    int32_t kind = c->dtype == LKV_DTYPE_F16 ? 1 : c->dtype == LKV_DTYPE_BF16 ? 2 : 0;
    float threshold = a->threshold, lambda = a->mix_lambda, scale = a->importance_scale;
    void *args[] = {&list[0], &list[1], &k,    &phys, &work,      &match,  &scores, &n,
                    &cap,     &kv_cap,  &dim,  &kind, &tail, &threshold, &lambda, &scale};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_redundancy, 1, lkv_gpu_rows_y(d, n), 1,
                                 LKV_RED_BLOCK, args);
}
