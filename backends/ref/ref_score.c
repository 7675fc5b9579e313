/* score, reference: one eviction priority per slot, higher kept first. Lazy
 * scores are computed in double and rounded once to f32. */
#include <math.h>

#include "ref_ops.h"
#include "philox.h"

/* spec/policies.md section 1; exp overflow makes a term 0, never NaN. */
static double lazy_score(int32_t mri, int32_t delta)
{
    double h2 = mri == 0 ? 0.0 : 2.0 / (1.0 + exp((double)mri - 1.0));
    double h1 = 2.0 / (1.0 + exp(1.0 + (double)delta / ((double)mri + 1e-5)));
    return h1 + h2;
}

static float pooled(const float *f, int32_t lo, int32_t hi, int32_t i, int32_t kernel, int avg)
{
    int32_t half = kernel / 2;
    double sum = 0.0, best = -INFINITY;
    for (int32_t j = i - half; j <= i + half; j++) {
        if (j < lo || j >= hi)
            continue; /* padding: 0 for the average (counted), absent for the max */
        sum += f[j];
        if (f[j] > best)
            best = f[j];
    }
    return (float)(avg ? sum / kernel : best);
}

static double group_mean(const lkv_score_args *a, int32_t r, int32_t i)
{
    int32_t first = r - r % a->rows_per_group;
    double sum = 0.0;
    for (int32_t g = 0; g < a->rows_per_group; g++)
        sum += lkv_hostmem_row_f32(a->cache->state_f, a->cache->capacity, a->rows[first + g])[i];
    return sum / a->rows_per_group;
}

static void score_row(const lkv_score_args *a, int32_t r)
{
    const lkv_cache_buffers *c = a->cache;
    int32_t row = a->rows[r], n = a->row_n[r], cap = c->capacity;
    float *s = lkv_hostmem_row_f32(a->scores, cap, row);
    const int32_t *last = lkv_hostmem_row_i32(c->state_a, cap, row);
    const int32_t *mri = lkv_hostmem_row_i32(c->state_b, cap, row);
    const int32_t *pos = lkv_hostmem_row_i32(c->pos, cap, row);
    const float *f = lkv_hostmem_row_f32(c->state_f, cap, row);
    int32_t lo = a->protect_head, hi = n - a->protect_tail;
    int32_t t = a->row_t ? a->row_t[r] : a->t;
    for (int32_t i = 0; i < n; i++) {
        if (i < lo || i >= hi) {
            s[i] = INFINITY;
            continue;
        }
        switch (a->kind) {
        case LKV_SCORE_RECURRENCE: s[i] = (float)lazy_score(mri[i], t - last[i]); break;
        case LKV_SCORE_STATE: s[i] = f[i]; break;
        case LKV_SCORE_GROUP_MEAN: s[i] = (float)group_mean(a, r, i); break;
        case LKV_SCORE_RECENCY: s[i] = (float)i; break;
        case LKV_SCORE_POOL_AVG: s[i] = pooled(f, lo, hi, i, a->pool_kernel, 1); break;
        case LKV_SCORE_POOL_MAX: s[i] = pooled(f, lo, hi, i, a->pool_kernel, 0); break;
        case LKV_SCORE_GUMBEL_NOISE: s[i] = (float)(f[i] + lkv_gumbel(a->seed, row, pos[i])); break;
        }
    }
    lkv_ref_score_prior(a, r, s);
}

void lkv_ref_score_prior(const lkv_score_args *a, int32_t r, float *scores)
{
    if (!a->prior_kept)
        return;
    const int32_t *kept = lkv_hostmem_row_i32(a->prior_kept, a->cache->capacity, a->rows[r]);
    for (int32_t j = 0; j < a->prior_k; j++)
        scores[kept[j]] = INFINITY;
}

lkv_status lkv_ref_score(lkv_device *dev, const lkv_score_args *a)
{
    (void)dev;
    for (int32_t r = 0; r < a->n_rows; r++)
        score_row(a, r);
    return LKV_OK;
}
