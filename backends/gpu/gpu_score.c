/* score on CUDA/HIP: lkv_score_slots over the listed rows (in double where
 * the oracle is, see backends/gpu/kernels/score.cu), then lkv_score_prior when a previous
 * selection's slots must rank first; stream order puts it second. */
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"

static lkv_status check(const lkv_device *d, const lkv_score_args *a)
{
    if (a->kind < LKV_SCORE_RECURRENCE || a->kind > LKV_SCORE_GUMBEL_NOISE)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s score: unknown kind %d", d->drv->name,
                        (int)a->kind);
    if (a->kind == LKV_SCORE_GROUP_MEAN &&
        (a->rows_per_group < 1 || a->n_rows % a->rows_per_group != 0))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s score: %d listed rows do not split into groups "
                        "of %d", d->drv->name, a->n_rows, a->rows_per_group);
    return LKV_OK;
}

static lkv_status launch_prior(lkv_device *d, const lkv_score_args *a, lkv_gpu_ptr rows,
                               uint32_t gy)
{
    lkv_gpu_ptr prior = a->prior_kept->ptr, scores = a->scores->ptr;
    int32_t cap = a->cache->capacity, n_rows = a->n_rows, prior_k = a->prior_k;
    void *args[] = {&rows, &prior, &scores, &cap, &n_rows, &prior_k};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_score_prior,
                                 lkv_gpu_stride_blocks(prior_k, LKV_SCORE_BLOCK), gy, 1,
                                 LKV_SCORE_BLOCK, args);
}

lkv_status lkv_gpu_score(lkv_device *d, const lkv_score_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_status st = check(d, a);
    if (st != LKV_OK || a->n_rows <= 0)
        return st;
    const int32_t *host[3] = {a->rows, a->row_n, a->row_t};
    size_t counts[3] = {(size_t)a->n_rows, (size_t)a->n_rows, (size_t)a->n_rows};
    lkv_gpu_ptr list[3] = {0, 0, 0}; /* row_t 0: every row at t */
    st = lkv_gpu_upload(d, a->row_t ? 3 : 2, host, counts, list);
    if (st != LKV_OK)
        return st;
    lkv_gpu_ptr pos = c->pos->ptr, last = c->state_a->ptr, mri = c->state_b->ptr;
    lkv_gpu_ptr state = c->state_f->ptr, scores = a->scores->ptr;
    int32_t cap = c->capacity, n_rows = a->n_rows, kind = (int32_t)a->kind, t = a->t;
    int32_t head = a->protect_head, tail = a->protect_tail, pool = a->pool_kernel;
    int32_t per_group = a->rows_per_group > 0 ? a->rows_per_group : 1;
    uint64_t seed = a->seed;
    uint32_t gy = lkv_gpu_rows_y(d, n_rows);
    uint32_t gx = lkv_gpu_stride_blocks(lkv_gpu_longest(a->row_n, n_rows), LKV_SCORE_BLOCK);
    void *args[] = {&list[0], &list[1], &pos, &last, &mri, &state, &scores, &cap, &n_rows,
                    &kind, &t, &list[2], &head, &tail, &pool, &per_group, &seed};
    st = lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_score_slots, gx, gy, 1, LKV_SCORE_BLOCK, args);
    if (st == LKV_OK && a->prior_kept && a->prior_k > 0)
        st = launch_prior(d, a, list[0], gy);
    return st;
}
