#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 2 of 4: flash-decoding partials. A workgroup takes one split
// (slots [split * split_len, ...)) of one cache head, a block of up to QBLOCK
// query heads and a block of dimensions (one per invocation), and writes per
// query head m = max logit, l = sum exp(logit - m) and o[e] = sum exp(logit -
// m) V[i][e]. V is read once per cache head for the whole block: adjacent
// invocations read adjacent elements of a row, and each issues the loads of
// INFLIGHT slots before it uses any.
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks *
// dimension blocks. Logits and partials are per listed group; partials are
// [query heads of the chunk][n_splits][dim + 2] (m, l, o...).
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3) instead of the global one, l summed in tree
// order, o[e] in slot order.
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
    uint dblocks;
#ifdef LKV_HOLES
    uint phys_skew; // elements before the window's first row in the hole map's binding
    uint kv_cap;    // K/V row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

#define HOLES_BINDING 4
#include "holes.glsl"

layout(std430, binding = 1) readonly buffer Values { KV_T v[]; };
layout(std430, binding = 2) readonly buffer Logits { float logits[]; };
layout(std430, binding = 3) writeonly buffer Partials { float part[]; };

#define INFLIGHT 4u // slots whose V loads an invocation issues before using any

shared float weight[QBLOCK][WG];
shared float red[QBLOCK][WG];

// Tree reduction of red[j][*] into red[j][0]; WG is a power of two.
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
    uint qb = gl_WorkGroupID.z / pc.dblocks, db = gl_WorkGroupID.z % pc.dblocks;
    uint j0 = qb * QBLOCK, jn = min(QBLOCK, pc.per - j0);
    uint qh0 = chr * pc.per + j0; // chunk-relative query head
    uint s0 = split * split_len, s1 = min(n, s0 + split_len);

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

    float l[QBLOCK], acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0;
        acc[j] = 0.0;
    }
    uint e = db * WG + tid;
    uint vbase = pc.kv_skew + KV_ROW(row) * pc.dim + e; // element e of the row's place 0
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
        if (e < pc.dim)
            for (uint t = 0u; t < cn; t += INFLIGHT) {
                float val[INFLIGHT];
                for (uint r = 0u; r < INFLIGHT; r++)
                    val[r] = t + r < cn ? LOAD_KV(v, vbase + KV_PLACE(row, c + t + r) * pc.dim) : 0.0;
                for (uint r = 0u; r < INFLIGHT; r++) {
                    if (t + r >= cn)
                        break;
                    for (uint j = 0u; j < jn; j++)
                        acc[j] += weight[j][t + r] * val[r];
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
        uint base = pbase + ((qh0 + j) * n_splits + split) * stride;
        if (e < pc.dim)
            part[base + 2u + e] = acc[j];
        if (db == 0u && tid == 0u) {
            part[base] = m[j];
            part[base + 1u] = red[j][0];
        }
    }
}
