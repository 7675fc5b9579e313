#version 450
#extension GL_GOOGLE_include_directive : require
// score, second step: the slots a previous select kept (prior_kept, the
// first prior_k entries of each row) score +inf. A separate dispatch because
// a slot's own invocation in score.comp cannot tell whether it is listed.
// Launch: x = blocks of prior_k, y = listed rows. list: (row, n, t) per row, as score's.
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint prior_k;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { int kept[]; };
layout(std430, binding = 2) buffer Scores { float scores[]; };

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[3u * r];
    for (uint j = gl_GlobalInvocationID.x; j < pc.prior_k; j += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
        scores[META_INDEX(row, uint(kept[META_INDEX(row, j)]))] = uintBitsToFloat(0x7f800000u);
}
