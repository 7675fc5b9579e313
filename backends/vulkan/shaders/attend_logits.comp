#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 1 of 4: logits[qh][i] = scale * q[qh] . K[i] for a block of
// up to QBLOCK query heads that share cache head ch. One invocation per slot
// reads its K row once for the whole block.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk,
// z = query-head blocks. list: per group (attend_list.glsl) its first row in
// the window, valid slots, logits base and q base; every group of a dispatch
// shares the chunk's cache heads.
// The LKV_VEC variant loads K and q 16 bytes at a time (the host picks it when
// head_dim and the row start allow), which cuts load instructions 4-8x.
// Differs from the CPU oracle: products summed in f32 in dimension order
// (the oracle sums in double).
#include "kv_storage.glsl"
#include "attend_list.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;      // slots per cache row
    uint dim;      // head_dim
    uint per;      // query heads per cache head
    uint nch;      // cache heads of the chunk
    uint ch_first; // the chunk's first cache head of each group
    uint kv_skew;  // elements before the window's first row in the binding
    float scale;
#ifdef LKV_HOLES
    uint phys_skew; // the same in the hole map's window
    uint kv_cap;    // K/V row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

#define HOLES_BINDING 4
#include "holes.glsl"

#ifdef LKV_VEC
#ifdef LKV_KV16
layout(std430, binding = 1) readonly buffer Keys { uvec4 k[]; };
#define VEC 8u
#else
layout(std430, binding = 1) readonly buffer Keys { vec4 k[]; };
#define VEC 4u
#endif
layout(std430, binding = 2) readonly buffer Queries { vec4 q[]; };
#else
layout(std430, binding = 1) readonly buffer Keys { KV_T k[]; };
layout(std430, binding = 2) readonly buffer Queries { float q[]; };
#endif
layout(std430, binding = 3) writeonly buffer Logits { float logits[]; };

// Logits are stored per group from lbase: [cache head of the chunk][per][n].
void logits_of_slot(uint i, uint row, uint chr, uint j0, uint jn, uint qbase, uint n, uint lbase)
{
    uint kbase = pc.kv_skew + (KV_ROW(row) + KV_PLACE(row, i)) * pc.dim;
    float acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++)
        acc[j] = 0.0;
#ifdef LKV_VEC
    for (uint e = 0u; e < pc.dim; e += VEC) {
#ifdef LKV_KV16
        uvec4 w = k[(kbase + e) / VEC];
        vec4 lo = vec4(unpack_kv2(w.x), unpack_kv2(w.y));
        vec4 hi = vec4(unpack_kv2(w.z), unpack_kv2(w.w));
        for (uint j = 0u; j < jn; j++) {
            uint qi = (qbase + j * pc.dim + e) / 4u;
            acc[j] += dot(q[qi], lo) + dot(q[qi + 1u], hi);
        }
#else
        vec4 key = k[(kbase + e) / VEC];
        for (uint j = 0u; j < jn; j++)
            acc[j] += dot(q[(qbase + j * pc.dim + e) / 4u], key);
#endif
    }
#else
    for (uint e = 0u; e < pc.dim; e++) {
        float key = LOAD_KV(k, kbase + e);
        for (uint j = 0u; j < jn; j++)
            acc[j] += q[qbase + j * pc.dim + e] * key;
    }
#endif
    for (uint j = 0u; j < jn; j++)
        logits[lbase + (chr * pc.per + j0 + j) * n + i] = acc[j] * pc.scale;
}

void main()
{
    uint g = gl_WorkGroupID.y / pc.nch, chr = gl_WorkGroupID.y % pc.nch, ch = pc.ch_first + chr;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint j0 = gl_WorkGroupID.z * QBLOCK;
    uint jn = min(QBLOCK, pc.per - j0);
    uint qbase = list[ATT_LIST * g + ATT_Q] + (ch * pc.per + j0) * pc.dim;
    // Grid-stride, so a cache longer than the device's group-count limit
    // needs no second dispatch.
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
        logits_of_slot(i, row, chr, j0, jn, qbase, n, list[ATT_LIST * g + ATT_LOGITS]);
}

