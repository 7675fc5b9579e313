#version 450
#extension GL_GOOGLE_include_directive : require
// observe: per listed row and valid slot, the policy state update from this
// step's probability. Integer updates and one f32 add or assignment, as on
// the CPU, so the results are bit-identical to the oracle.
// Launch: x = slot blocks, y = listed rows. list: (row, n, t) per row: t
// its own step, as a batch of sequences at different steps needs (the push
// constant t is unused).
#include "meta_rows.glsl"
#include "op_kinds.glsl" // generated from core/op_kinds.h

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint kind; // lkv_observe_kind
    int t;
    float alpha;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Probs { float probs[]; };
layout(std430, binding = 2) buffer StateA { int last[]; };
layout(std430, binding = 3) buffer StateB { int mri[]; };
layout(std430, binding = 4) buffer StateF { float state[]; };

void slot(uint row, uint i, int t)
{
    uint x = META_INDEX(row, i);
    float p = probs[x];
    if (pc.kind == LKV_OBSERVE_RECURRENCE) {
        if (p >= pc.alpha) {
            int gap = t - last[x];
            if (gap > mri[x])
                mri[x] = gap;
            last[x] = t;
        }
    } else if (pc.kind == LKV_OBSERVE_ACCUMULATE) {
        state[x] = state[x] + p;
    } else {
        state[x] = p;
    }
}

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[3u * r], n = list[3u * r + 1u];
    int t = int(list[3u * r + 2u]); // the row's own step (rows of a batch may differ)
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
        slot(row, i, t);
}
