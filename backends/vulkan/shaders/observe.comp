#version 450
#extension GL_GOOGLE_include_directive : require
// observe: per listed row and valid slot, the policy state update from this
// step's probability (observe_slot.glsl): integer updates and one f32 add
// or assignment, as on the CPU, so the results are bit-identical to the
// oracle.
// Launch: x = slot blocks, y = listed rows. list: (row, n, t) per row: t
// its own step, as a batch of sequences at different steps needs (the push
// constant t is unused).
#include "meta_rows.glsl"
#include "observe_slot.glsl" // the update, shared with attend_probs.comp

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
// bindings 2, 3, 4: the state (observe_slot.glsl)

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[3u * r], n = list[3u * r + 1u];
    int t = int(list[3u * r + 2u]); // the row's own step (rows of a batch may differ)
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint x = META_INDEX(row, i);
        observe_slot(pc.kind, probs[x], x, t, pc.alpha);
    }
}
