#version 450
#extension GL_GOOGLE_include_directive : require
// score: the eviction priority of every valid slot of each listed row,
// higher kept first; protected slots score +inf. Mirrors
// backends/cpu/cpu_score.c formula by formula and in the same order; the
// f64 variant matches it bit for bit (see real_math.glsl), the f32 variant
// to a few ulp. A previous select's kept slots are raised to +inf by
// score_prior.comp afterwards. Launch: x = slot blocks, y = listed rows.
// list: (row, n, t) per row: t its own step, as a
// batch of sequences at different steps needs (the push constant t unused).
#include "meta_rows.glsl"
#include "real_math.glsl"
#include "op_kinds.glsl" // generated from core/op_kinds.h

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint kind; // lkv_score_kind
    int t;
    int protect_head;
    int protect_tail;
    int pool_kernel;
    uint rows_per_group;
    uint seed_lo;
    uint seed_hi;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer StateA { int last[]; };
layout(std430, binding = 3) readonly buffer StateB { int mri[]; };
layout(std430, binding = 4) readonly buffer StateF { float state[]; };
layout(std430, binding = 5) writeonly buffer Scores { float scores[]; };

// spec/policies.md section 1; an overflowing exp makes its term 0.
REAL lazy_score(int m, int delta)
{
    REAL h2 = m == 0 ? REAL(0.0) : REAL(2.0) / (REAL(1.0) + exp_r(REAL(m) - REAL(1.0)));
    REAL h1 = REAL(2.0) / (REAL(1.0) + exp_r(REAL(1.0) + REAL(delta) / (REAL(m) + MRI_EPS)));
    return h1 + h2;
}

// Philox4x32-10, first word, as base/philox.h.
uint philox(uint c0, uint c1, uint k0, uint k1)
{
    uint c2 = 0u, c3 = 0u;
    for (int r = 0; r < 10; r++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c0, hi0, lo0);
        umulExtended(0xCD9E8D57u, c2, hi1, lo1);
        uint n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

REAL gumbel(uint row, int position)
{
    uint bits = philox(row, uint(position), pc.seed_lo, pc.seed_hi);
    REAL u = (REAL(bits >> 8u) + REAL(0.5)) * (REAL(1.0) / REAL(16777216.0));
    return -log_r(-log_r(u));
}

float pooled(uint row, int lo, int hi, int i, bool avg)
{
    int half_k = pc.pool_kernel / 2;
    REAL sum = REAL(0.0);
    float best = uintBitsToFloat(0xff800000u);
    for (int j = i - half_k; j <= i + half_k; j++) {
        if (j < lo || j >= hi)
            continue; // padding: 0 for the average (counted), absent for the max
        float f = state[META_INDEX(row, uint(j))];
        sum += REAL(f);
        if (f > best) // a NaN never wins, as on the CPU (GLSL max leaves NaN undefined)
            best = f;
    }
    return avg ? float(sum / REAL(pc.pool_kernel)) : best;
}

float group_mean(uint r, uint i)
{
    uint first = r - r % pc.rows_per_group;
    REAL sum = REAL(0.0);
    for (uint g = 0u; g < pc.rows_per_group; g++)
        sum += REAL(state[META_INDEX(list[3u * (first + g)], i)]);
    return float(sum / REAL(pc.rows_per_group));
}

void slot(uint r, uint row, uint n, uint i, int t)
{
    uint x = META_INDEX(row, i);
    int lo = pc.protect_head, hi = int(n) - pc.protect_tail, ii = int(i);
    float s;
    if (ii < lo || ii >= hi) {
        s = uintBitsToFloat(0x7f800000u);
    } else if (pc.kind == LKV_SCORE_RECURRENCE) {
        s = float(lazy_score(mri[x], t - last[x]));
    } else if (pc.kind == LKV_SCORE_STATE) {
        s = state[x];
    } else if (pc.kind == LKV_SCORE_GROUP_MEAN) {
        s = group_mean(r, i);
    } else if (pc.kind == LKV_SCORE_RECENCY) {
        s = float(i);
    } else if (pc.kind == LKV_SCORE_POOL_AVG || pc.kind == LKV_SCORE_POOL_MAX) {
        s = pooled(row, lo, hi, ii, pc.kind == LKV_SCORE_POOL_AVG);
    } else { // LKV_SCORE_GUMBEL_NOISE
        s = float(REAL(state[x]) + gumbel(row, pos[x]));
    }
    scores[x] = s;
}

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[3u * r], n = list[3u * r + 1u];
    int t = int(list[3u * r + 2u]); // the row's own step (rows of a batch may differ)
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
        slot(r, row, n, i, t);
}
