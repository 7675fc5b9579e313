/* RMSNorm, RoPE, SwiGLU and the residual add (see forward_ops.h). */
#include "forward_ops.h"

#include <math.h>

void lkv_rmsnorm(float *out, const float *x, const float *w, int32_t n, float eps)
{
    double ss = 0.0;
    for (int32_t i = 0; i < n; i++)
        ss += (double)x[i] * (double)x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int32_t i = 0; i < n; i++)
        out[i] = (x[i] * r) * w[i];
}

void lkv_rope_angles(const double *inv_freq, int32_t half, int32_t position, float *cos_out,
                     float *sin_out)
{
    for (int32_t i = 0; i < half; i++) {
        double a = (double)position * inv_freq[i];
        cos_out[i] = (float)cos(a);
        sin_out[i] = (float)sin(a);
    }
}

void lkv_rope_apply(float *v, int32_t heads, int32_t head_dim, const float *cos_t,
                    const float *sin_t)
{
    for (int32_t h = 0; h < heads; h++) {
        float *p = v + (int64_t)h * head_dim;
        for (int32_t i = 0; i < head_dim / 2; i++) {
            float a = p[2 * i], b = p[2 * i + 1];
            p[2 * i] = a * cos_t[i] - b * sin_t[i];
            p[2 * i + 1] = a * sin_t[i] + b * cos_t[i];
        }
    }
}

void lkv_swiglu(float *out, const float *gate, const float *up, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void lkv_add(float *x, const float *d, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        x[i] += d[i];
}
