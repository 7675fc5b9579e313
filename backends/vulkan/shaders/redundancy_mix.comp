#version 450
#extension GL_GOOGLE_include_directive : require
// redundancy (rkv), the last pass (redundancy.comp makes the column means):
// per listed row (a work-group), the softmax of the means in work, mixed
// into the scores before the protected tail: lambda * scale * score -
// (1 - lambda) * R. f32; the oracle (backends/ref/ref_redundancy.c) is in
// double. Launch: x = 1, y = the run's rows. list: (row, n) per row.
layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint n_rows;
    int protect_tail;
    float lambda;
    float scale;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Work { float work[]; };
layout(std430, binding = 2) buffer Scores { float scores[]; };

shared float red[WG];

#include "group_reduce.glsl"

void main()
{
    uint t = gl_LocalInvocationID.x;
    for (uint r = gl_WorkGroupID.y; r < pc.n_rows; r += gl_NumWorkGroups.y) {
        uint n = list[2u * r + 1u], base = pc.meta_skew + (list[2u * r] - pc.row_base) * pc.cap;
        float m = -uintBitsToFloat(0x7f800000u), z = 0.0;
        for (uint j = t; j < n; j += WG)
            m = max(m, work[base + j]);
        m = group_reduce(m, true);
        for (uint j = t; j < n; j += WG)
            z += exp(work[base + j] - m);
        z = group_reduce(z, false);
        for (uint j = t; int(j) < int(n) - pc.protect_tail; j += WG)
            scores[base + j] = pc.lambda * pc.scale * scores[base + j] -
                               (1.0 - pc.lambda) * (exp(work[base + j] - m) / z);
    }
}
