#version 450
// attend, pass 4 of 4: per slot, the probability each query head gave it,
// exp(logit - lse), combined over the query heads that share the cache head
// (max, or mean), written to probs (keep_probs) and, with an observe,
// applied to the row's policy state at its group's step (ATT_T) by the
// observe op's own update (observe_slot.glsl), so the fused observe leaves
// the bits attend with probs and then observe would. Runs when either is
// wanted; without keep_probs the probabilities never reach memory.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk.
// Differs from the CPU oracle: exp(logit - lse) in f32 instead of
// exp(logit - max) / sum in double, and the mean sums in f32.
#extension GL_GOOGLE_include_directive : require
#include "attend_list.glsl"
#include "observe_slot.glsl" // bindings 2, 3, 4: the state

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint per;
    uint nch;        // cache heads of the chunk
    uint probs_skew; // elements before the window's first row in the probs and state bindings
    uint reduce_max;
    uint keep_probs; // 0: probs is a stand-in, never written
    uint observe;    // 0: the state bindings are stand-ins, never touched
    uint kind;       // lkv_observe_kind
    float alpha;
} pc;

// The probs window and the state windows span the same rows (the same skew).
layout(std430, binding = 1) writeonly buffer Probs { float probs[]; };
layout(std430, binding = 5) readonly buffer Logits { float logits[]; };
layout(std430, binding = 6) readonly buffer Lse { float lse[]; };

void main()
{
    uint g = gl_WorkGroupID.y / pc.nch, chr = gl_WorkGroupID.y % pc.nch;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint lbase = list[ATT_LIST * g + ATT_LOGITS], qbase = g * pc.nch * pc.per;
    int t = int(list[ATT_LIST * g + ATT_T]);
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        // max starts at -inf and passes over NaN, as the CPU's fmax does: a
        // query head whose every logit is -inf has lse -inf and p NaN here.
        float acc = pc.reduce_max != 0u ? uintBitsToFloat(0xff800000u) : 0.0;
        for (uint j = 0u; j < pc.per; j++) {
            uint qh = chr * pc.per + j; // chunk-relative
            float p = exp(logits[lbase + qh * n + i] - lse[qbase + qh]);
            if (pc.reduce_max == 0u)
                acc += p;
            else if (!isnan(p))
                acc = max(acc, p);
        }
        float p = pc.reduce_max != 0u ? acc : acc / float(pc.per);
        uint x = pc.probs_skew + row * pc.cap + i;
        if (pc.keep_probs != 0u)
            probs[x] = p;
        if (pc.observe != 0u)
            observe_slot(pc.kind, p, x, t, pc.alpha);
    }
}
