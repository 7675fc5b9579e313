/* observe on CUDA/HIP: one launch over the listed rows (backends/gpu/kernels/observe.cu).
 * The row lists are uploaded before anything runs, so a failure leaves the
 * policy state untouched. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

lkv_status lkv_gpu_observe(lkv_device *d, const lkv_observe_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    if (a->kind != LKV_OBSERVE_RECURRENCE && a->kind != LKV_OBSERVE_ACCUMULATE &&
        a->kind != LKV_OBSERVE_ASSIGN)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s observe: unknown kind %d", d->drv->name,
                        (int)a->kind);
    if (a->n_rows <= 0)
        return LKV_OK;
    const int32_t *host[3] = {a->rows, a->row_n, a->row_t};
    size_t counts[3] = {(size_t)a->n_rows, (size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[3] = {0, 0, 0}; /* row_t 0: every row at t */
    lkv_status st = lkv_gpu_upload(d, a->row_t ? 3 : 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr probs = a->probs->ptr, last = c->state_a->ptr, mri = c->state_b->ptr;
    lkv_gpu_ptr state = c->state_f->ptr;
    int32_t cap = c->capacity, n_rows = a->n_rows, t = a->t;
    int32_t accumulate = a->kind == LKV_OBSERVE_ACCUMULATE;
    float alpha = a->alpha;
    uint32_t gx = lkv_gpu_stride_blocks(lkv_gpu_longest(a->row_n, n_rows), LKV_OBSERVE_BLOCK);
    uint32_t gy = lkv_gpu_rows_y(d, n_rows);
    if (a->kind == LKV_OBSERVE_RECURRENCE) {
        void *args[] = {&list[0], &list[1], &probs, &last, &mri,
                        &cap, &n_rows, &t, &list[2], &alpha};
        return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_observe_lazy, gx, gy, 1, LKV_OBSERVE_BLOCK,
                                     args);
    }
    void *args[] = {&list[0], &list[1], &probs, &state, &cap, &n_rows, &accumulate};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_observe_state, gx, gy, 1, LKV_OBSERVE_BLOCK,
                                 args);
}
