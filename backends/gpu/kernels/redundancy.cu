// redundancy (rkv): the keys' cosine redundancy of each listed row mixed into
// its scores (backends/ref/ref_redundancy.c, core/backend.h). One block per
// row, three passes over its n slots, each thread taking slots j strided by
// the block:
//   1. slot j's similarity to every other slot, normalising on the fly
//      (|k_i| accumulated beside the dot product, so no norm array): the
//      row sum of S[j][.] (= column j's sum, S being symmetric) into work,
//      and j's spared slot r(j) (the largest i with S > threshold, else 0)
//      into match;
//   2. column j less the similarities of the rows that spared j (recomputed:
//      a few per slot), divided by n, into work;
//   3. the softmax of work over the row (block max and sum) and the mix.
// f32 throughout (the oracle is double): sums of n similarities in another
// order and an f32 exp, within the suite's 1e-5 (conformance/
// conf_redundancy.c). O(n^2 d) per row, run once per rkv buffer of steps.
// Launch: block LKV_RED_BLOCK, x = 1, y = listed rows (grid-stride).
#include "lkv_gpu.h"

// Element e of K: kind 0 f32, 1 f16, 2 bf16 (uniform over the launch).
LKV_DEV float lkv_red_elem(const unsigned *k, unsigned long long e, int kind)
{
    if (kind == 0)
        return __uint_as_float(k[e]);
    unsigned short h = ((const unsigned short *)k)[e];
    return kind == 1 ? lkv_half_to_float(h) : lkv_bf16_to_float(h);
}

// Where slot j's K row starts, in elements: through the hole map if any
// (kv_cap: the K row stride in slots, 0 in a paged cache's pool).
LKV_DEV unsigned long long lkv_red_key(const int *phys, int row, int capacity, int kv_cap,
                                       int dim, int j)
{
    unsigned long long at = (unsigned long long)row * (unsigned long long)capacity;
    int place = phys ? phys[at + (unsigned long long)j] : j;
    unsigned long long base = (unsigned long long)row * (unsigned long long)kv_cap;
    return (base + (unsigned long long)place) * (unsigned long long)dim;
}

// S[i][j] given |k_j| + eps: the dot product and |k_i| in one pass.
LKV_DEV float lkv_red_similarity(const unsigned *k, unsigned long long ki, unsigned long long kj,
                                 int dim, int kind, float norm_j)
{
    float dot = 0.0f, sq = 0.0f;
    for (int d = 0; d < dim; d++) {
        float a = lkv_red_elem(k, ki + (unsigned long long)d, kind);
        dot += a * lkv_red_elem(k, kj + (unsigned long long)d, kind);
        sq += a * a;
    }
    return dot / ((sqrtf(sq) + 1e-8f) * norm_j);
}

LKV_DEV float lkv_red_norm(const unsigned *k, unsigned long long kj, int dim, int kind)
{
    float sq = 0.0f;
    for (int d = 0; d < dim; d++) {
        float a = lkv_red_elem(k, kj + (unsigned long long)d, kind);
        sq += a * a;
    }
    return sqrtf(sq) + 1e-8f;
}

// The block's max (take_max) or sum of v; every thread gets it.
LKV_DEV float lkv_red_block(float v, bool take_max, float *red)
{
    int t = (int)threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int half = (int)blockDim.x / 2; half > 0; half /= 2) {
        if (t < half)
            red[t] = take_max ? fmaxf(red[t], red[t + half]) : red[t] + red[t + half];
        __syncthreads();
    }
    float out = red[0];
    __syncthreads(); // red is rewritten by the next call
    return out;
}

LKV_KERNEL(lkv_redundancy)(const int *rows, const int *row_n, const unsigned *k, const int *phys,
                           float *work, int *match, float *scores, int n_rows, int capacity,
                           int kv_cap, int dim, int kind, int protect_tail, float threshold,
                           float lambda, float scale)
{
    __shared__ float red[LKV_RED_BLOCK];
    int t = (int)threadIdx.x, step = (int)blockDim.x;
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        int row = rows[r], n = row_n[r];
        unsigned long long base = (unsigned long long)row * (unsigned long long)capacity;
        for (int j = t; j < n; j += step) {
            unsigned long long kj = lkv_red_key(phys, row, capacity, kv_cap, dim, j);
            float norm_j = lkv_red_norm(k, kj, dim, kind), sum = 0.0f;
            int spared = 0;
            for (int i = 0; i < n; i++) {
                if (i == j)
                    continue;
                unsigned long long ki = lkv_red_key(phys, row, capacity, kv_cap, dim, i);
                float s = lkv_red_similarity(k, ki, kj, dim, kind, norm_j);
                sum += s;
                if (s > threshold)
                    spared = i;
            }
            work[base + (unsigned long long)j] = sum;
            match[base + (unsigned long long)j] = spared;
        }
        __syncthreads();
        for (int j = t; j < n; j += step) {
            unsigned long long kj = lkv_red_key(phys, row, capacity, kv_cap, dim, j);
            float col = work[base + (unsigned long long)j], norm_j = 0.0f;
            for (int i = 0; i < n; i++) {
                if (i == j || match[base + (unsigned long long)i] != j)
                    continue;
                if (norm_j == 0.0f)
                    norm_j = lkv_red_norm(k, kj, dim, kind);
                unsigned long long ki = lkv_red_key(phys, row, capacity, kv_cap, dim, i);
                col -= lkv_red_similarity(k, ki, kj, dim, kind, norm_j);
            }
            work[base + (unsigned long long)j] = col / (float)n;
        }
        __syncthreads();
        float m = -INFINITY;
        for (int j = t; j < n; j += step)
            m = fmaxf(m, work[base + (unsigned long long)j]);
        m = lkv_red_block(m, true, red);
        float z = 0.0f;
        for (int j = t; j < n; j += step)
            z += expf(work[base + (unsigned long long)j] - m);
        z = lkv_red_block(z, false, red);
        for (int j = t; j < n - protect_tail; j += step) {
            float redundant = expf(work[base + (unsigned long long)j] - m) / z;
            float *s = scores + base + (unsigned long long)j;
            *s = lambda * scale * *s - (1.0f - lambda) * redundant;
        }
        __syncthreads(); // work and match are the next row's only after every thread is done
    }
}
