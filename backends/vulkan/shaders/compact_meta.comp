#version 450
#extension GL_GOOGLE_include_directive : require
// compact, per-slot metadata: pos, state_a, state_b and state_f of the kept
// slots move to the front in place, in the same gather-then-write rounds as
// compact_kv.comp (see there why this is safe), from the first slot that
// moves. Launch: x = blocks of the round's slots, y = listed rows.
// list: (row, k) pairs; scratch: [listed row][round slot][4].
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint phase; // 0 gather, 1 write
    uint round_first;
    uint round_slots;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 2) buffer Pos { uint pos[]; };
layout(std430, binding = 3) buffer StateA { uint sa[]; };
layout(std430, binding = 4) buffer StateB { uint sb[]; };
layout(std430, binding = 5) buffer StateF { uint sf[]; };
layout(std430, binding = 6) buffer Scratch { uvec4 scratch[]; };

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint base = META_INDEX(row, 0u);
    uint lo = 0u, hi = count;
    while (lo < hi) { // kept[j] - j never decreases
        uint mid = (lo + hi) / 2u;
        if (kept[base + mid] == mid)
            lo = mid + 1u;
        else
            hi = mid;
    }
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint end = count > pc.round_first ? min(pc.round_slots, count - pc.round_first) : 0u;
    for (uint i = gl_GlobalInvocationID.x; i < end; i += stride) {
        uint j = pc.round_first + i;
        if (j < lo || j >= count)
            continue;
        uint s = r * pc.round_slots + i;
        if (pc.phase == 0u) {
            uint src = base + kept[base + j];
            scratch[s] = uvec4(pos[src], sa[src], sb[src], sf[src]);
        } else {
            uvec4 val = scratch[s];
            pos[base + j] = val.x;
            sa[base + j] = val.y;
            sb[base + j] = val.z;
            sf[base + j] = val.w;
        }
    }
}
