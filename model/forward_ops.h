/* The element-wise parts of the forward pass, one row (token or lane) at a
 * time. Their arithmetic is fixed, like the matmul's, so a row's result does
 * not depend on the rows computed beside it. */
#ifndef LKV_FORWARD_OPS_H
#define LKV_FORWARD_OPS_H

#include <stdint.h>

/* out = x * w / sqrt(mean(x^2) + eps), the mean summed in double. */
void lkv_rmsnorm(float *out, const float *x, const float *w, int32_t n, float eps);

/* Per pair i of every head: the angle position * theta^(-2i / head_dim),
 * computed in double; its cosine and sine rounded to float. */
void lkv_rope_angles(const double *inv_freq, int32_t half, int32_t position, float *cos_out,
                     float *sin_out);

/* Rotates adjacent pairs (2i, 2i + 1) of each of `heads` heads in float:
 * (a, b) -> (a cos - b sin, a sin + b cos). */
void lkv_rope_apply(float *v, int32_t heads, int32_t head_dim, const float *cos_t,
                    const float *sin_t);

/* out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). */
void lkv_swiglu(float *out, const float *gate, const float *up, int32_t n);

/* The residual connection: a block's output d added into the stream x. One
 * function for the prompt's rows and the lanes' rows alike, so a token's
 * stream is summed the same way whichever call carries it. */
void lkv_add(float *x, const float *d, int32_t n);

#endif
