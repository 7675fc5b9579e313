#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 2 of 4, for rows of whole 16-byte units (head_dim a multiple
// of UNIT, rows starting on a UNIT-element boundary) and head_dim at most
// UNIT * WG (the host checks; attend_split.comp covers the rest). Same
// partials as attend_split.comp, but each invocation owns one unit of UNIT
// consecutive dimensions (8 for f16 and bf16, 4 for f32: one 16-byte load
// per slot) and the workgroup's invocations are split into lanes that take
// alternate slots, so V loads, weight loads and loop overhead drop 4-8x. A
// lane issues the loads of INFLIGHT slots before it accumulates any, so that
// many 16-byte loads are in flight per invocation.
// Lanes are summed in shared memory at the end (the weights' room).
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks.
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3), sums in lane-then-slot order (lane l: slots
// l, l + lanes, ... of the split, in order; then the lanes in order).
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

// UNIT: elements of one 16-byte load; VAL_T: one as loaded.
#ifdef LKV_KV16
layout(std430, binding = 1) readonly buffer Values { uvec4 v[]; };
#define UNIT 8u
#define VAL_T uvec4
#define VAL_ZERO uvec4(0u)
#else
layout(std430, binding = 1) readonly buffer Values { vec4 v[]; };
#define UNIT 4u
#define VAL_T vec4
#define VAL_ZERO vec4(0.0)
#endif
#define INFLIGHT 4u // slots whose V loads a lane issues before using any
layout(std430, binding = 2) readonly buffer Logits { float logits[]; };
layout(std430, binding = 3) writeonly buffer Partials { float part[]; };

// weight also holds the lanes' sums at the end: UNIT <= QBLOCK values each.
shared float weight[QBLOCK][WG];
shared float red[QBLOCK][WG];

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
    uint du = pc.dim / UNIT; // units per row
    uint lanes = WG / du;    // slots taken side by side
    uint lane = tid / du, u = tid % du;
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
    vec4 acc[QBLOCK]; // the unit's first 4 dimensions
#ifdef LKV_KV16
    vec4 acc_hi[QBLOCK]; // its last 4
#endif
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0;
        acc[j] = vec4(0.0);
#ifdef LKV_KV16
        acc_hi[j] = vec4(0.0);
#endif
    }
    uint rowu = (pc.kv_skew + KV_ROW(row) * pc.dim) / UNIT;
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
            for (uint t = lane; t < cn; t += INFLIGHT * lanes) {
                VAL_T val[INFLIGHT];
                for (uint r = 0u; r < INFLIGHT; r++) {
                    uint tr = t + r * lanes;
                    val[r] = tr < cn ? v[rowu + KV_PLACE(row, c + tr) * du + u] : VAL_ZERO;
                }
                for (uint r = 0u; r < INFLIGHT; r++) {
                    uint tr = t + r * lanes;
                    if (tr >= cn)
                        break;
#ifdef LKV_KV16
                    vec4 lo = vec4(unpack_kv2(val[r].x), unpack_kv2(val[r].y));
                    vec4 hi = vec4(unpack_kv2(val[r].z), unpack_kv2(val[r].w));
                    for (uint j = 0u; j < jn; j++) {
                        acc[j] += weight[j][tr] * lo;
                        acc_hi[j] += weight[j][tr] * hi;
                    }
#else
                    for (uint j = 0u; j < jn; j++)
                        acc[j] += weight[j][tr] * val[r];
#endif
                }
            }
        barrier();
    }
    for (uint j = 0u; j < QBLOCK; j++)
        red[j][tid] = l[j];
    barrier();
    reduce(false);

    uint stride = pc.dim + 2u;
    for (uint j = 0u; j < jn; j++) {
        for (uint x = 0u; x < 4u; x++) {
            weight[x][tid] = working ? acc[j][x] : 0.0;
#ifdef LKV_KV16
            weight[4u + x][tid] = working ? acc_hi[j][x] : 0.0;
#endif
        }
        barrier();
        uint base = pbase + ((qh0 + j) * n_splits + split) * stride;
        if (tid < du)
            for (uint x = 0u; x < UNIT; x++) {
                float sum = 0.0;
                for (uint ln = 0u; ln < lanes; ln++)
                    sum += weight[x][ln * du + tid];
                part[base + 2u + UNIT * tid + x] = sum;
            }
        if (tid == 0u) {
            part[base] = m[j];
            part[base + 1u] = red[j][0];
        }
        barrier();
    }
}
