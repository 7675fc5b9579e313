/* observe, reference: per-slot state updates from this step's probabilities.
 * The lazy threshold compares in f32, as spec/policies.md requires. */
#include "ref_ops.h"

static void observe_row(const lkv_observe_args *a, int32_t row, int32_t n, int32_t t)
{
    const lkv_cache_buffers *c = a->cache;
    const float *p = lkv_hostmem_row_f32(a->probs, c->capacity, row);
    if (a->kind == LKV_OBSERVE_RECURRENCE) {
        int32_t *last = lkv_hostmem_row_i32(c->state_a, c->capacity, row);
        int32_t *mri = lkv_hostmem_row_i32(c->state_b, c->capacity, row);
        for (int32_t i = 0; i < n; i++) {
            if (p[i] >= a->alpha) {
                int32_t gap = t - last[i];
                if (gap > mri[i])
                    mri[i] = gap;
                last[i] = t;
            }
        }
        return;
    }
    float *f = lkv_hostmem_row_f32(c->state_f, c->capacity, row);
    for (int32_t i = 0; i < n; i++)
        f[i] = a->kind == LKV_OBSERVE_ACCUMULATE ? f[i] + p[i] : p[i];
}

lkv_status lkv_ref_observe(lkv_device *dev, const lkv_observe_args *a)
{
    (void)dev; /* memory-bound and tiny per step: threads would not pay */
    for (int32_t r = 0; r < a->n_rows; r++)
        observe_row(a, a->rows[r], a->row_n[r], a->row_t ? a->row_t[r] : a->t);
    return LKV_OK;
}
