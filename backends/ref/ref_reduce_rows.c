/* reduce_rows, reference: each destination word from its group's source
 * words in row order, the mean through a double sum rounded once (the sum
 * the engine path takes on the host, core/engine.c). */
#include "ref_ops.h"

static float reduce_at(const float *first, size_t stride, int32_t group, int mean)
{
    if (mean) {
        double sum = 0.0;
        for (int32_t j = 0; j < group; j++)
            sum += (double)first[(size_t)j * stride];
        return (float)(sum / group);
    }
    float m = first[0];
    for (int32_t j = 1; j < group; j++) {
        float v = first[(size_t)j * stride];
        m = v > m ? v : m;
    }
    return m;
}

lkv_status lkv_ref_reduce_rows(lkv_device *dev, const lkv_reduce_rows_args *a)
{
    (void)dev;
    const float *src = (const float *)(const void *)a->src->data;
    float *dst = (float *)(void *)a->dst->data;
    size_t ss = (size_t)a->src_stride;
    int mean = a->reduce == LKV_REDUCE_MEAN && a->group > 1;
    for (int32_t i = 0; i < a->n; i++) {
        const float *first = src + (size_t)a->src_row[i] * ss;
        float *out = dst + (size_t)a->dst_row[i] * (size_t)a->dst_stride;
        for (int32_t e = 0; e < a->len[i]; e++)
            out[e] = reduce_at(first + e, ss, a->group, mean);
    }
    return LKV_OK;
}
