/* qk_probs, reference: core/engine_qk.c's arithmetic (a double dot product
 * over d ascending, times the scale, exp of its distance to the lse in
 * double, clamped to 1, rounded once) on K read where the engine keeps it. */
#include <math.h>

#include "dtype.h"
#include "ref_ops.h"

lkv_status lkv_ref_qk_probs(lkv_device *dev, const lkv_qk_probs_args *a)
{
    (void)dev;
    const float *q = (const float *)(const void *)a->q->data;
    const float *lse = (const float *)(const void *)a->lse->data;
    const unsigned char *k = a->k->data;
    float *probs = (float *)(void *)a->probs->data;
    for (int32_t i = 0; i < a->n; i++) {
        const float *x = q + (size_t)a->q_row[i] * (size_t)a->dim;
        double l = (double)lse[a->lse_at[i]];
        float *p = probs + (size_t)a->out_row[i] * (size_t)a->stride;
        for (int32_t j = 0; j < a->len[i]; j++) {
            const unsigned char *kj = k + lkv_ref_slot_word(&a->slots, i, j) * 4;
            double dot = 0.0;
            for (int32_t d = 0; d < a->dim; d++)
                dot += (double)x[d] * (double)lkv_dtype_load(a->dtype, kj, (size_t)d);
            double e = exp(dot * (double)a->scale - l);
            p[j] = e > 1.0 ? 1.0f : (float)e;
        }
    }
    return LKV_OK;
}
