#version 450
#extension GL_GOOGLE_include_directive : require
// redundancy (rkv): the keys' cosine redundancy of each listed row (the
// oracle: backends/ref/ref_redundancy.c, in double). Two dispatches, `pass`
// in the push constants, then redundancy_mix.comp:
//   0. a work-group per slot j: its similarities to the row's other slots,
//      split across the group, summed (= column j's sum, S being
//      symmetric) into work, and j's spared slot r(j) (the largest i with
//      S > threshold, else 0) into match;
//   1. a work-group per slot j: column j less the rows that spared j, over
//      n, into work.
// Split this way so no invocation loops more than (n / WG) x head_dim
// times: lavapipe's compiler caps the loop iterations of one invocation
// (about 65536), and one invocation per slot over the whole row passed it
// from a few hundred slots. f32 throughout; |k_i| is summed beside each
// dot product (no norm array). The CUDA/HIP kernel does the same sums with
// a block per row (backends/gpu/kernels/redundancy.cu).
// Launch: x = slots of the longest row, y = the run's rows. list: (row, n)
// per row, rows counted from row_base; work, match (and the hole map under
// LKV_HOLES) are [rows][cap] windows sharing meta_skew, K one of kv_skew
// elements.
#include "kv_storage.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint dim;
    uint kv_skew;
    uint meta_skew;
    uint row_base;
    uint n_rows;
    float threshold;
    uint pass;
#ifdef LKV_HOLES
    uint kv_cap;    // K row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Keys { KV_T k[]; };
layout(std430, binding = 2) buffer Work { float work[]; };
layout(std430, binding = 3) buffer Match { uint match_of[]; };
#ifdef LKV_HOLES
layout(std430, binding = 4) readonly buffer HoleMap { uint phys[]; };
#endif

shared float red[WG];

uint meta_at(uint row, uint j)
{
    return pc.meta_skew + (row - pc.row_base) * pc.cap + j;
}

// Where slot j's K row starts, in elements of the K window.
uint key_at(uint row, uint j)
{
#ifdef LKV_HOLES
    uint place = phys[meta_at(row, j)], stride = pc.kv_cap;
#else
    uint place = j, stride = pc.cap;
#endif
    return pc.kv_skew + ((row - pc.row_base) * stride + place) * pc.dim;
}

float norm_of(uint kj)
{
    float sq = 0.0;
    for (uint d = 0u; d < pc.dim; d++) {
        float a = LOAD_KV(k, kj + d);
        sq += a * a;
    }
    return sqrt(sq) + 1e-8;
}

float similarity(uint ki, uint kj, float norm_j)
{
    float dot_ = 0.0, sq = 0.0;
    for (uint d = 0u; d < pc.dim; d++) {
        float a = LOAD_KV(k, ki + d);
        dot_ += a * LOAD_KV(k, kj + d);
        sq += a * a;
    }
    return dot_ / ((sqrt(sq) + 1e-8) * norm_j);
}

#include "group_reduce.glsl"

// Pass 0 for slot j: the row sum and the spared slot (+1 while reduced, so
// 0 is "none"; slot indices are exact in f32 below 2^24).
void sums_of(uint row, uint n, uint j)
{
    uint kj = key_at(row, j);
    float norm_j = norm_of(kj), sum = 0.0, spared = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < n; i += WG) {
        if (i == j)
            continue;
        float s = similarity(key_at(row, i), kj, norm_j);
        sum += s;
        if (s > pc.threshold)
            spared = float(i + 1u);
    }
    sum = group_reduce(sum, false);
    spared = group_reduce(spared, true);
    if (gl_LocalInvocationID.x == 0u) {
        work[meta_at(row, j)] = sum;
        match_of[meta_at(row, j)] = spared > 0.0 ? uint(spared) - 1u : 0u;
    }
}

// Pass 1 for slot j: less the similarities of the rows that spared it.
void column_of(uint row, uint n, uint j)
{
    uint kj = key_at(row, j);
    float norm_j = 0.0, spared_sum = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < n; i += WG) {
        if (i == j || match_of[meta_at(row, i)] != j)
            continue;
        if (norm_j == 0.0)
            norm_j = norm_of(kj);
        spared_sum += similarity(key_at(row, i), kj, norm_j);
    }
    spared_sum = group_reduce(spared_sum, false);
    if (gl_LocalInvocationID.x == 0u)
        work[meta_at(row, j)] = (work[meta_at(row, j)] - spared_sum) / float(n);
}

void main()
{
    for (uint r = gl_WorkGroupID.y; r < pc.n_rows; r += gl_NumWorkGroups.y) {
        uint row = list[2u * r], n = list[2u * r + 1u];
        for (uint j = gl_WorkGroupID.x; j < n; j += gl_NumWorkGroups.x) {
            if (pc.pass == 0u)
                sums_of(row, n, j);
            else
                column_of(row, n, j);
        }
    }
}
