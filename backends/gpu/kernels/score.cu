// score: the eviction priority of every valid slot of each listed row,
// higher kept first (backends/cpu/cpu_score.c, formula by formula):
//   lkv_score_slots  slots [0, protect_head) and [n - protect_tail, n) score
//                    +inf; the others by `kind` (lkv_score_kind): recurrence h1 + h2
//                    of the MRI, state_f, the group mean of state_f, the slot
//                    index, state_f pooled (average, zero padded, or max) over
//                    the unprotected range, state_f + Gumbel noise.
//   lkv_score_prior  afterwards, the first prior_k slots listed in the row of
//                    prior_kept (a previous select) score +inf. A second
//                    launch because a slot's own thread cannot tell whether
//                    it is listed; stream order puts it after the first.
// Arithmetic: lazy, noisy, group mean and average pooling run in double with
// the oracle's operations in the oracle's order and round once to f32, so
// they match it exactly but where the device's exp/log (CUDA: at most 1 ulp
// in double; the oracle's glibc rounds correctly) lands a value on the other
// side of an f32 rounding boundary, which the suite's tolerance (1e-6
// relative) absorbs. Nothing here forms an a * b + c the compiler could
// contract into an FMA the oracle does not do. Max pooling, state and
// recency are exact.
// Launch: block LKV_SCORE_BLOCK (any multiple of 64), x = blocks over the
// slots of the longest row (lkv_score_slots) or over prior_k
// (lkv_score_prior), both grid-stride; y = listed rows, grid-stride over
// n_rows. row_t: each listed row's own step for the recurrence score, or
// null: every row at t.
#include "lkv_gpu.h" // the kinds (lkv_score_kind) through lkv_kernel_abi.h

// spec/policies.md section 1; an overflowing exp makes its term 0, never NaN.
LKV_DEV double lkv_lazy_score(int mri, int delta)
{
    double h2 = mri == 0 ? 0.0 : 2.0 / (1.0 + exp((double)mri - 1.0));
    double h1 = 2.0 / (1.0 + exp(1.0 + (double)delta / ((double)mri + 1e-5)));
    return h1 + h2;
}

// Philox4x32-10, the first word of counter (c0, c1, 0, 0) under key
// (k0, k1): a port of lkv_philox in base/philox.h, which is the reference
// (integer only, so the bits are the CPU's on every device).
LKV_DEV unsigned int lkv_philox_word(unsigned int c0, unsigned int c1, unsigned int k0,
                                     unsigned int k1)
{
    unsigned int c2 = 0u, c3 = 0u;
    for (int r = 0; r < 10; r++) {
        unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
        unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
        unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
        unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
        unsigned int n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

// Standard Gumbel noise -log(-log(u)), u in (0, 1) from the top 24 bits, as
// lkv_gumbel in base/philox.h.
LKV_DEV double lkv_gumbel_noise(unsigned long long seed, int row, int position)
{
    unsigned int bits = lkv_philox_word((unsigned int)row, (unsigned int)position,
                                        (unsigned int)seed, (unsigned int)(seed >> 32));
    double u = ((double)(bits >> 8) + 0.5) * (1.0 / 16777216.0);
    return -log(-log(u));
}

// state_f of slot i pooled over [i - kernel/2, i + kernel/2] within [lo, hi):
// padding counts as 0 in the average and is absent from the max, which skips
// NaN (a NaN never compares greater), as the oracle's loop does.
LKV_DEV float lkv_pooled(const float *f, int lo, int hi, int i, int kernel, int avg)
{
    int half = kernel / 2;
    double sum = 0.0, best = -INFINITY;
    for (int j = i - half; j <= i + half; j++) {
        if (j < lo || j >= hi)
            continue;
        sum += f[j];
        if (f[j] > best)
            best = f[j];
    }
    return (float)(avg ? sum / kernel : best);
}

// The mean of state_f at slot i over the rows of listed row r's group: the
// rows_per_group consecutive list entries that contain r.
LKV_DEV float lkv_group_mean(const int *rows, const float *state, int cap, int r, int i,
                             int rows_per_group)
{
    int first = r - r % rows_per_group;
    double sum = 0.0;
    for (int g = 0; g < rows_per_group; g++)
        sum += state[(unsigned long long)rows[first + g] * (unsigned long long)cap +
                     (unsigned long long)i];
    return (float)(sum / rows_per_group);
}

LKV_KERNEL(lkv_score_slots)(const int *rows, const int *row_n, const int *pos, const int *last,
                            const int *mri, const float *state, float *scores, int cap,
                            int n_rows, int kind, int t, const int *row_t, int protect_head,
                            int protect_tail, int pool_kernel, int rows_per_group,
                            unsigned long long seed)
{
    int stride = (int)(gridDim.x * blockDim.x);
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        int row = rows[r], n = row_n[r], tr = row_t ? row_t[r] : t;
        unsigned long long base = (unsigned long long)row * (unsigned long long)cap;
        int lo = protect_head, hi = n - protect_tail;
        for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
            unsigned long long x = base + (unsigned long long)i;
            float s;
            if (i < lo || i >= hi)
                s = INFINITY;
            else if (kind == LKV_SCORE_RECURRENCE)
                s = (float)lkv_lazy_score(mri[x], tr - last[x]);
            else if (kind == LKV_SCORE_STATE)
                s = state[x];
            else if (kind == LKV_SCORE_GROUP_MEAN)
                s = lkv_group_mean(rows, state, cap, r, i, rows_per_group);
            else if (kind == LKV_SCORE_RECENCY)
                s = (float)i;
            else if (kind == LKV_SCORE_POOL_AVG || kind == LKV_SCORE_POOL_MAX)
                s = lkv_pooled(state + base, lo, hi, i, pool_kernel, kind == LKV_SCORE_POOL_AVG);
            else
                s = (float)((double)state[x] + lkv_gumbel_noise(seed, row, pos[x]));
            scores[x] = s;
        }
    }
}

LKV_KERNEL(lkv_score_prior)(const int *rows, const int *prior_kept, float *scores, int cap,
                            int n_rows, int prior_k)
{
    int stride = (int)(gridDim.x * blockDim.x);
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        unsigned long long base = (unsigned long long)rows[r] * (unsigned long long)cap;
        for (int j = (int)(blockIdx.x * blockDim.x + threadIdx.x); j < prior_k; j += stride)
            scores[base + (unsigned long long)prior_kept[base + (unsigned long long)j]] = INFINITY;
    }
}
