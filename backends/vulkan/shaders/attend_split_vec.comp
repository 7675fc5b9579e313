#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 2 of 4, for head_dim a multiple of 4 and at most 4 * WG with
// rows starting on a 4-element boundary (the host checks; attend_split.comp
// covers the rest). Same partials as attend_split.comp, but each invocation
// owns 4 consecutive dimensions (one 16-byte f32 load or one 8-byte f16 or
// bf16 load per slot) and the workgroup's invocations are split into lanes
// that take alternate slots, so V loads, weight loads and loop overhead drop
// about 4x.
// Lanes are summed in shared memory at the end.
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks.
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3), sums in lane-then-slot order.
#include "kv_storage.glsl"
#include "attend_list.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint dim;
    uint per;
    uint nch; // cache heads of the chunk
    uint kv_skew;
    uint dblocks; // unused here: one block covers every dimension
#ifdef LKV_HOLES
    uint phys_skew; // elements before the window's first row in the hole map's binding
    uint kv_cap;    // K/V row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

#define HOLES_BINDING 4
#include "holes.glsl"

#ifdef LKV_KV16
layout(std430, binding = 1) readonly buffer Values { uvec2 v[]; };
#else
layout(std430, binding = 1) readonly buffer Values { vec4 v[]; };
#endif
layout(std430, binding = 2) readonly buffer Logits { float logits[]; };
layout(std430, binding = 3) writeonly buffer Partials { float part[]; };

shared float weight[QBLOCK][WG];
shared float red[QBLOCK][WG];
shared vec4 lanes_sum[WG];

vec4 load4(uint idx4)
{
#ifdef LKV_KV16
    uvec2 w = v[idx4];
    return vec4(unpack_kv2(w.x), unpack_kv2(w.y));
#else
    return v[idx4];
#endif
}

void reduce(bool take_max)
{
    uint tid = gl_LocalInvocationID.x;
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s)
            for (uint j = 0u; j < QBLOCK; j++)
                red[j][tid] = take_max ? max(red[j][tid], red[j][tid + s])
                                       : red[j][tid] + red[j][tid + s];
        barrier();
    }
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint split = gl_WorkGroupID.x, g = gl_WorkGroupID.y / pc.nch, chr = gl_WorkGroupID.y % pc.nch;
    uint n = list[ATT_LIST * g + ATT_N], n_splits = list[ATT_LIST * g + ATT_SPLITS];
    // The grid has the most splits of a listed group; a group with fewer
    // leaves the rest (the whole workgroup alike, before any barrier).
    if (split >= n_splits)
        return;
    uint row = list[ATT_LIST * g + ATT_ROW] + chr, split_len = list[ATT_LIST * g + ATT_SPLIT];
    uint lbase = list[ATT_LIST * g + ATT_LOGITS], pbase = list[ATT_LIST * g + ATT_PARTS];
    uint j0 = gl_WorkGroupID.z * QBLOCK, jn = min(QBLOCK, pc.per - j0);
    uint qh0 = chr * pc.per + j0; // chunk-relative query head
    uint s0 = split * split_len, s1 = min(n, s0 + split_len);
    uint d4 = pc.dim / 4u;           // 4-element units per row
    uint lanes = WG / d4;            // slots taken side by side
    uint lane = tid / d4, u = tid % d4;
    bool working = lane < lanes;

    float m[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++)
        m[j] = uintBitsToFloat(0xff800000u);
    for (uint i = s0 + tid; i < s1; i += WG)
        for (uint j = 0u; j < jn; j++)
            m[j] = max(m[j], logits[lbase + (qh0 + j) * n + i]);
    for (uint j = 0u; j < QBLOCK; j++)
        red[j][tid] = m[j];
    barrier();
    reduce(true);
    for (uint j = 0u; j < QBLOCK; j++)
        m[j] = red[j][0];
    barrier();

    float l[QBLOCK];
    vec4 acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0;
        acc[j] = vec4(0.0);
    }
    uint row4 = (pc.kv_skew + KV_ROW(row) * pc.dim) / 4u;
    for (uint c = s0; c < s1; c += WG) {
        uint i = c + tid;
        for (uint j = 0u; j < QBLOCK; j++) {
            // A split whose logits are all -inf contributes nothing (the CPU's
            // 0), not exp(-inf - -inf) = NaN.
            bool live = i < s1 && j < jn && m[j] != uintBitsToFloat(0xff800000u);
            float w = live ? exp(logits[lbase + (qh0 + j) * n + i] - m[j]) : 0.0;
            weight[j][tid] = w;
            l[j] += w;
        }
        barrier();
        uint cn = min(WG, s1 - c);
        if (working)
            for (uint t = lane; t < cn; t += lanes) {
                vec4 val = load4(row4 + KV_PLACE(row, c + t) * d4 + u);
                for (uint j = 0u; j < jn; j++)
                    acc[j] += weight[j][t] * val;
            }
        barrier();
    }
    for (uint j = 0u; j < QBLOCK; j++)
        red[j][tid] = l[j];
    barrier();
    reduce(false);

    uint stride = pc.dim + 2u;
    for (uint j = 0u; j < jn; j++) {
        lanes_sum[tid] = working ? acc[j] : vec4(0.0);
        barrier();
        uint base = pbase + ((qh0 + j) * n_splits + split) * stride;
        if (tid < d4) {
            vec4 sum = vec4(0.0);
            for (uint ln = 0u; ln < lanes; ln++)
                sum += lanes_sum[ln * d4 + tid];
            for (uint x = 0u; x < 4u; x++)
                part[base + 2u + 4u * tid + x] = sum[x];
        }
        if (tid == 0u) {
            part[base] = m[j];
            part[base + 1u] = red[j][0];
        }
        barrier();
    }
}
