/* observe on CUDA/HIP: one launch over the listed rows (kernels/observe.cu).
 * The row lists are uploaded before anything runs, so a failure leaves the
 * policy state untouched. */
#include "error.h"
#include "gpu_internal.h"

#define OBSERVE_BLOCK 256u
#define OBSERVE_MAX_GX 65535u /* the kernel strides over longer rows */

static uint32_t slot_blocks(const int32_t *row_n, int32_t n_rows)
{
    int32_t most = 0;
    for (int32_t r = 0; r < n_rows; r++)
        most = row_n[r] > most ? row_n[r] : most;
    uint32_t gx = ((uint32_t)most + OBSERVE_BLOCK - 1) / OBSERVE_BLOCK;
    return gx < 1 ? 1 : gx > OBSERVE_MAX_GX ? OBSERVE_MAX_GX : gx;
}

lkv_status lkv_gpu_observe(lkv_device *d, const lkv_observe_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    if (a->kind != LKV_OBSERVE_LAZY && a->kind != LKV_OBSERVE_ACCUMULATE &&
        a->kind != LKV_OBSERVE_ASSIGN)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s observe: unknown kind %d", d->drv->name,
                        (int)a->kind);
    if (a->n_rows <= 0)
        return LKV_OK;
    const int32_t *host[2] = {a->rows, a->row_n};
    size_t counts[2] = {(size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[2];
    lkv_status st = lkv_gpu_upload(d, 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr probs = a->probs->ptr, last = c->state_a->ptr, mri = c->state_b->ptr;
    lkv_gpu_ptr state = c->state_f->ptr;
    int32_t cap = c->capacity, n_rows = a->n_rows, t = a->t;
    int32_t accumulate = a->kind == LKV_OBSERVE_ACCUMULATE;
    float alpha = a->alpha;
    uint32_t gx = slot_blocks(a->row_n, a->n_rows);
    uint32_t gy = (uint32_t)n_rows < d->lim.max_grid_y ? (uint32_t)n_rows : d->lim.max_grid_y;
    if (a->kind == LKV_OBSERVE_LAZY) {
        void *args[] = {&list[0], &list[1], &probs, &last, &mri, &cap, &n_rows, &t, &alpha};
        return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_observe_lazy, gx, gy, 1, OBSERVE_BLOCK, args);
    }
    void *args[] = {&list[0], &list[1], &probs, &state, &cap, &n_rows, &accumulate};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_observe_state, gx, gy, 1, OBSERVE_BLOCK, args);
}
