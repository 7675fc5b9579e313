#version 450
#extension GL_GOOGLE_include_directive : require
// compact, per-slot metadata: pos, state_a, state_b and state_f of the kept
// slots move to the front in place, by the same read-wait-write rounds as
// compact_kv.comp. Launch: x = listed rows. list: (row, k) pairs.
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 2) coherent buffer Pos { uint pos[]; };
layout(std430, binding = 3) coherent buffer StateA { uint sa[]; };
layout(std430, binding = 4) coherent buffer StateB { uint sb[]; };
layout(std430, binding = 5) coherent buffer StateF { uint sf[]; };

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint r = gl_WorkGroupID.x;
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint base = META_INDEX(row, 0u);
    for (uint c = 0u; c < count; c += WG) {
        uint j = c + tid;
        uvec4 val = uvec4(0u);
        if (j < count) {
            uint src = base + kept[base + j];
            val = uvec4(pos[src], sa[src], sb[src], sf[src]);
        }
        memoryBarrierBuffer();
        barrier();
        if (j < count) {
            pos[base + j] = val.x;
            sa[base + j] = val.y;
            sb[base + j] = val.z;
            sf[base + j] = val.w;
        }
        memoryBarrierBuffer();
        barrier();
    }
}
