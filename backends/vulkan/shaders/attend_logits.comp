#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 1 of 4: logits[qh][i] = scale * q[qh] . K[i] for a block of
// up to QBLOCK query heads that share cache head ch. One invocation per slot
// reads its K row once for the whole block.
// Launch: x = slot blocks, y = cache heads of the chunk, z = query-head blocks.
// The LKV_VEC variant loads K and q 16 bytes at a time (the host picks it when
// head_dim and the row start allow), which cuts load instructions 4-8x.
// Differs from the CPU oracle: products summed in f32 in dimension order
// (the oracle sums in double).
#include "kv_storage.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;        // valid slots
    uint cap;      // slots per cache row
    uint dim;      // head_dim
    uint per;      // query heads per cache head
    uint ch_first; // first cache head of this chunk (row 0 of the K window)
    uint kv_skew;  // elements before that row's slot 0 in the window
    uint q_base;   // this group's first q element
    float scale;
} pc;

#ifdef LKV_VEC
#ifdef LKV_KV16
layout(std430, binding = 0) readonly buffer Keys { uvec4 k[]; };
#define VEC 8u
#else
layout(std430, binding = 0) readonly buffer Keys { vec4 k[]; };
#define VEC 4u
#endif
layout(std430, binding = 1) readonly buffer Queries { vec4 q[]; };
#else
layout(std430, binding = 0) readonly buffer Keys { KV_T k[]; };
layout(std430, binding = 1) readonly buffer Queries { float q[]; };
#endif
layout(std430, binding = 2) writeonly buffer Logits { float logits[]; };

// Logits are stored per chunk: [cache head of the chunk][per][n].
void logits_of_slot(uint i, uint chr, uint j0, uint jn, uint qbase)
{
    uint kbase = pc.kv_skew + (chr * pc.cap + i) * pc.dim;
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
        logits[(chr * pc.per + j0 + j) * pc.n + i] = acc[j] * pc.scale;
}

void main()
{
    uint chr = gl_WorkGroupID.y, ch = pc.ch_first + chr;
    uint j0 = gl_WorkGroupID.z * QBLOCK;
    uint jn = min(QBLOCK, pc.per - j0);
    uint qbase = pc.q_base + (ch * pc.per + j0) * pc.dim;
    // Grid-stride, so a cache longer than the device's group-count limit
    // needs no second dispatch.
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
        logits_of_slot(i, chr, j0, jn, qbase);
}

