/* redundancy, reference (core/backend.h, docs/policy-rkv.md): the cosine
 * similarity matrix of a row's keys in double, row by row (each row's
 * near-copy found before its entries are added to the column sums), the
 * column means' softmax in double, rounded once when mixed into the f32
 * scores. O(n^2 d) per row: R-KV runs it once per buffer of steps. GPU
 * kernels sum each slot's similarities in f32 along the slot instead of
 * down the column (S is symmetric) and subtract the spared near-copies
 * afterwards. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dtype.h"
#include "error.h"
#include "ref_ops.h"

typedef struct redundancy_job {
    const lkv_redundancy_args *a;
    atomic_int failed;
} redundancy_job;

/* khat: n unit keys (the reference's eps on the norm); s: one row of S. */
static void unit_keys(const lkv_redundancy_args *a, int32_t row, int32_t n, double *khat)
{
    const lkv_cache_buffers *c = a->cache;
    int32_t dim = c->head_dim;
    for (int32_t j = 0; j < n; j++) {
        const unsigned char *k = lkv_hostmem_kv_at(c->k, c, row, j);
        double *u = khat + (size_t)j * (size_t)dim, norm = 0.0;
        for (int32_t d = 0; d < dim; d++) {
            u[d] = lkv_dtype_load(c->dtype, k, (size_t)d);
            norm += u[d] * u[d];
        }
        norm = sqrt(norm) + 1e-8;
        for (int32_t d = 0; d < dim; d++)
            u[d] /= norm;
    }
}

static void column_sums(const double *khat, int32_t n, int32_t dim, double threshold, double *s,
                        double *col)
{
    for (int32_t j = 0; j < n; j++)
        col[j] = 0.0;
    for (int32_t i = 0; i < n; i++) {
        const double *ui = khat + (size_t)i * (size_t)dim;
        int32_t spared = 0;
        for (int32_t j = 0; j < n; j++) {
            const double *uj = khat + (size_t)j * (size_t)dim;
            double dot = 0.0;
            for (int32_t d = 0; d < dim && j != i; d++)
                dot += ui[d] * uj[d];
            s[j] = dot;
            if (dot > threshold)
                spared = j;
        }
        s[spared] = 0.0;
        for (int32_t j = 0; j < n; j++)
            col[j] += s[j];
    }
}

static void mix_row(const lkv_redundancy_args *a, int32_t r, const double *col, int32_t n)
{
    float *scores = lkv_hostmem_row_f32(a->scores, a->cache->capacity, a->rows[r]);
    double m = -INFINITY, z = 0.0;
    for (int32_t j = 0; j < n; j++)
        m = col[j] / n > m ? col[j] / n : m;
    for (int32_t j = 0; j < n; j++)
        z += exp(col[j] / n - m);
    double lambda = a->mix_lambda, scale = a->importance_scale;
    for (int32_t j = 0; j < n - a->protect_tail; j++) {
        double red = exp(col[j] / n - m) / z;
        scores[j] = (float)(lambda * scale * (double)scores[j] - (1.0 - lambda) * red);
    }
}

static void redundancy_rows(void *ctx, int begin, int end)
{
    redundancy_job *job = ctx;
    const lkv_redundancy_args *a = job->a;
    size_t cap = (size_t)a->cache->capacity, dim = (size_t)a->cache->head_dim;
    double *khat = malloc(sizeof(double) * (cap * dim + 2 * cap));
    if (!khat) {
        job->failed = 1;
        return;
    }
    double *s = khat + cap * dim, *col = s + cap;
    for (int r = begin; r < end; r++) {
        int32_t n = a->row_n[r];
        if (n <= 0)
            continue;
        unit_keys(a, a->rows[r], n, khat);
        column_sums(khat, n, a->cache->head_dim, a->threshold, s, col);
        mix_row(a, r, col, n);
    }
    free(khat);
}

lkv_status lkv_ref_redundancy(lkv_device *dev, const lkv_redundancy_args *a)
{
    redundancy_job job = {.a = a};
    double work = 0.0;
    for (int32_t r = 0; r < a->n_rows; r++)
        work += (double)a->row_n[r] * a->row_n[r] * a->cache->head_dim;
    lkv_ref_parallel(dev, a->n_rows, work, redundancy_rows, &job);
    return job.failed ? lkv_fail(LKV_OUT_OF_MEMORY, "redundancy: out of host memory for %d "
                                                    "slots of scratch", a->cache->capacity)
                      : LKV_OK;
}
