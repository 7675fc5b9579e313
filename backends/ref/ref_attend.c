/* attend, reference: two passes in double per query head (logits and their
 * max, then normalised probabilities and the weighted sum of V), so the oracle
 * carries no online-softmax rescaling error. GPU kernels use one online pass
 * in f32 and are compared against this within the conformance tolerances. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ref_ops.h"
#include "error.h"
#include "dtype.h"

typedef struct attend_job {
    const lkv_attend_args *a;
    atomic_int failed; /* set by a chunk that could not get scratch memory */
} attend_job;

/* One query head over one cache row: p[0..n) and, if wanted, out[0..d). */
static void attend_head(const lkv_attend_args *a, int32_t row, int32_t n, const float *q,
                        double *p, double *acc, float *out)
{
    const lkv_cache_buffers *c = a->cache;
    int32_t dim = c->head_dim;
    double m = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        const unsigned char *k = lkv_hostmem_kv_at(c->k, c, row, i);
        double s = 0.0;
        for (int32_t d = 0; d < dim; d++)
            s += (double)q[d] * lkv_dtype_load(c->dtype, k, (size_t)d);
        p[i] = s * (double)a->scale;
        if (p[i] > m)
            m = p[i];
    }
    double z = 0.0;
    for (int32_t i = 0; i < n; i++) {
        p[i] = exp(p[i] - m);
        z += p[i];
    }
    for (int32_t i = 0; i < n; i++)
        p[i] /= z;
    if (!out)
        return;
    for (int32_t d = 0; d < dim; d++)
        acc[d] = 0.0;
    for (int32_t i = 0; i < n; i++) {
        const unsigned char *v = lkv_hostmem_kv_at(c->v, c, row, i);
        for (int32_t d = 0; d < dim; d++)
            acc[d] += p[i] * lkv_dtype_load(c->dtype, v, (size_t)d);
    }
    for (int32_t d = 0; d < dim; d++)
        out[d] = (float)acc[d];
}

/* Item = (group, cache head): every query head that shares the cache head, so
 * the group's probabilities can be combined without another pass. */
static void attend_items(void *ctx, int begin, int end)
{
    attend_job *job = ctx;
    const lkv_attend_args *a = job->a;
    const lkv_cache_buffers *c = a->cache;
    int32_t per = a->q_heads / a->cache_heads;
    int32_t dim = c->head_dim;
    /* scratch: probabilities, their combination over the group, V accumulators */
    double *p = malloc(sizeof(double) * (2 * (size_t)c->capacity + (size_t)dim));
    if (!p) {
        job->failed = 1;
        return;
    }
    double *combined = p + c->capacity;
    double *acc = combined + c->capacity;
    for (int item = begin; item < end; item++) {
        int32_t g = item / a->cache_heads, ch = item % a->cache_heads;
        int32_t row = a->group_row0[g] + ch, n = a->group_n[g];
        for (int32_t i = 0; i < n; i++)
            combined[i] = a->reduce == LKV_REDUCE_MAX ? -INFINITY : 0.0;
        for (int32_t j = 0; j < per; j++) {
            int32_t qh = ch * per + j;
            size_t off = ((size_t)g * (size_t)a->q_heads + (size_t)qh) * (size_t)dim;
            const float *q = (const float *)(const void *)a->q->data + off;
            float *out = a->out ? (float *)(void *)a->out->data + off : NULL;
            attend_head(a, row, n, q, p, acc, out);
            for (int32_t i = 0; i < n; i++) {
                if (a->reduce == LKV_REDUCE_MAX)
                    combined[i] = fmax(combined[i], (double)(float)p[i]);
                else
                    combined[i] += p[i];
            }
        }
        if (!a->probs)
            continue;
        float *probs = lkv_hostmem_row_f32(a->probs, c->capacity, row);
        for (int32_t i = 0; i < n; i++)
            probs[i] = (float)(a->reduce == LKV_REDUCE_MAX ? combined[i] : combined[i] / per);
    }
    free(p);
}

lkv_status lkv_ref_attend(lkv_device *dev, const lkv_attend_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, "ref", "attend");
    if (st != LKV_OK)
        return st;
    int items = a->n_groups * a->cache_heads;
    attend_job job = {a, 0};
    double work = 0.0;
    for (int32_t g = 0; g < a->n_groups; g++)
        work += 2.0 * a->group_n[g] * a->cache->head_dim * a->q_heads;
    lkv_ref_parallel(dev, items, work, attend_items, &job);
    if (atomic_load(&job.failed))
        return lkv_fail(LKV_OUT_OF_MEMORY, "ref attend: no host memory for scratch of %d slots",
                        a->cache->capacity);
    return LKV_OK;
}
