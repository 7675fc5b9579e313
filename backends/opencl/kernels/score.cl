// score: mirrors backends/vulkan/shaders/score.comp. The eviction priority of every valid
// slot of each listed row, higher kept first; protected slots score +inf.
// Follows backends/cpu/cpu_score.c formula by formula and in the same order.
// A previous select's kept slots are raised to +inf by score_prior.cl
// afterwards. Launch: x = slot blocks, y = listed rows. list: (row, n, t) per row: t its own step, as a
// batch of sequences at different steps needs (the push constant t unused).
// The kinds' names come from core/op_kinds.h, written above lkv_cl.h.
//
// REAL is double in score_f64 (LKV_F64) and float in score_f32. Where the
// shader brings its own double exp and log (real_math.glsl: GLSL has none),
// this uses OpenCL's built-in ones, which are within about an ulp of the
// exact value on the usual libraries, so scores rounded once to f32 match
// the oracle (glibc, double) bit for bit but in vanishingly rare rounding-
// boundary cases. score_f32 matches it to a few ulp.

// The oracle rounds every step; a fused multiply-add would not.
#pragma OPENCL FP_CONTRACT OFF

#ifdef LKV_F64
#define REAL double
#define LIT(x) (x)
#else
#define REAL float
#define LIT(x) (x##f)
#endif
// Written as a literal of REAL's own precision: 1e-5 is not exact in either.
#define MRI_EPS LIT(1e-5)

// spec/policies.md section 1; an overflowing exp makes its term 0.
static REAL lazy_score(int m, int delta)
{
    REAL h2 = m == 0 ? LIT(0.0) : LIT(2.0) / (LIT(1.0) + exp((REAL)m - LIT(1.0)));
    REAL h1 = LIT(2.0) / (LIT(1.0) + exp(LIT(1.0) + (REAL)delta / ((REAL)m + MRI_EPS)));
    return h1 + h2;
}

// Philox4x32-10, first word, as base/philox.h.
static uint philox(uint c0, uint c1, uint k0, uint k1)
{
    uint c2 = 0u, c3 = 0u;
    for (int r = 0; r < 10; r++) {
        uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        uint n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

// Standard Gumbel noise from the top 24 bits, as lkv_gumbel.
static REAL gumbel(uint row, int position, uint seed_lo, uint seed_hi)
{
    uint bits = philox(row, (uint)position, seed_lo, seed_hi);
    REAL u = ((REAL)(bits >> 8u) + LIT(0.5)) * (LIT(1.0) / LIT(16777216.0));
    return -log(-log(u));
}

static float pooled(__global const float *state, uint row, int lo, int hi, int i, bool avg,
                    int pool_kernel, uint cap, uint meta_skew, uint row_base)
{
    int half_k = pool_kernel / 2;
    REAL sum = LIT(0.0);
    float best = as_float(0xff800000u);
    for (int j = i - half_k; j <= i + half_k; j++) {
        if (j < lo || j >= hi)
            continue; // padding: 0 for the average (counted), absent for the max
        float f = state[META_INDEX(row, (uint)j)];
        sum += (REAL)f;
        if (f > best) // a NaN never wins, as on the CPU
            best = f;
    }
    return avg ? (float)(sum / (REAL)pool_kernel) : best;
}

static float group_mean(__global const uint *list, __global const float *state, uint r, uint i,
                        uint rows_per_group, uint cap, uint meta_skew, uint row_base)
{
    uint first = r - r % rows_per_group;
    REAL sum = LIT(0.0);
    for (uint g = 0u; g < rows_per_group; g++)
        sum += (REAL)state[META_INDEX(list[3u * (first + g)], i)];
    return (float)(sum / (REAL)rows_per_group);
}

LKV_KERNEL lkv_score(LKV_BIND(uint, list), LKV_BIND(int, pos), LKV_BIND(int, last),
                 LKV_BIND(int, mri), LKV_BIND(float, state), LKV_BIND(float, scores),
                 uint cap, uint meta_skew, uint row_base,
                 uint kind, // lkv_score_kind
                 int t, int protect_head, int protect_tail, int pool_kernel,
                 uint rows_per_group, uint seed_lo, uint seed_hi)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(int, pos);
    LKV_OPEN(int, last);
    LKV_OPEN(int, mri);
    LKV_OPEN(float, state);
    LKV_OPEN(float, scores);
    uint r = (uint)get_group_id(1);
    uint row = list[3u * r], n = list[3u * r + 1u];
    t = (int)list[3u * r + 2u]; // the row's own step (rows of a batch may differ)
    int lo = protect_head, hi = (int)n - protect_tail;
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_global_id(0); i < n; i += stride) {
        uint x = META_INDEX(row, i);
        int ii = (int)i;
        float s;
        if (ii < lo || ii >= hi)
            s = as_float(0x7f800000u);
        else if (kind == LKV_SCORE_RECURRENCE)
            s = (float)lazy_score(mri[x], t - last[x]);
        else if (kind == LKV_SCORE_STATE)
            s = state[x];
        else if (kind == LKV_SCORE_GROUP_MEAN)
            s = group_mean(list, state, r, i, rows_per_group, cap, meta_skew, row_base);
        else if (kind == LKV_SCORE_RECENCY)
            s = (float)i;
        else if (kind == LKV_SCORE_POOL_AVG || kind == LKV_SCORE_POOL_MAX)
            s = pooled(state, row, lo, hi, ii, kind == LKV_SCORE_POOL_AVG, pool_kernel, cap,
                       meta_skew, row_base);
        else // LKV_SCORE_GUMBEL_NOISE
            s = (float)((REAL)state[x] + gumbel(row, pos[x], seed_lo, seed_hi));
        scores[x] = s;
    }
}
