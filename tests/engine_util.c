/* tests/engine_util.h */
#include "engine_util.h"

#include <math.h>
#include <stddef.h>

#include "dtype.h"

float tu_engine_lse(const lkv_kv_layout *kv, const void *k, int32_t seq, int32_t head, int32_t n,
                    const float *q, float scale)
{
    const unsigned char *base = (const unsigned char *)k + (size_t)head * kv->head_stride;
    double m = -INFINITY, z = 0.0;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t j = 0; j < n; j++) {
            size_t at = kv->block_size
                            ? (size_t)kv->block_table[(size_t)seq * (size_t)kv->max_blocks +
                                                      (size_t)(j / kv->block_size)] *
                                      kv->block_stride +
                                  (size_t)(j % kv->block_size) * kv->slot_stride
                            : (size_t)seq * kv->seq_stride + (size_t)j * kv->slot_stride;
            double dot = 0.0;
            for (int32_t d = 0; d < kv->head_dim; d++)
                dot += (double)q[d] * (double)lkv_dtype_load(kv->dtype, base + at, (size_t)d);
            double l = dot * (double)scale;
            if (pass == 0)
                m = l > m ? l : m;
            else
                z += exp(l - m);
        }
    return (float)(m + log(z));
}
