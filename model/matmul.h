/* y = W x for a batch of inputs ("lanes"), threaded over W's rows: each row of
 * W is read once for every lane, so lanes stepping together share the pass
 * over the weights. */
#ifndef LKV_MATMUL_H
#define LKV_MATMUL_H

#include <stdint.h>

#include "pool.h"

/* W: [rows][cols] row-major; x: [lanes][cols]; y: [lanes][rows].
 * Sums in f32 over 8 interleaved partial sums (a fixed order, so results do
 * not depend on the thread count). */
void lkv_matmul(lkv_pool *pool, const float *w, int32_t rows, int32_t cols, const float *x,
                int32_t lanes, float *y);

#endif
