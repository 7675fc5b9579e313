#version 450
// attend, pass 4 of 4: per slot, the probability each query head gave it,
// exp(logit - lse), combined over the query heads that share the cache head
// (max, or mean). Launch: x = slot blocks, y = listed groups x cache heads
// of the chunk.
// Differs from the CPU oracle: exp(logit - lse) in f32 instead of
// exp(logit - max) / sum in double, and the mean sums in f32.
#extension GL_GOOGLE_include_directive : require
#include "attend_list.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint per;
    uint nch;        // cache heads of the chunk
    uint probs_skew; // elements before the window's first row in the binding
    uint reduce_max;
} pc;

layout(std430, binding = 1) readonly buffer Logits { float logits[]; };
layout(std430, binding = 2) readonly buffer Lse { float lse[]; };
layout(std430, binding = 3) writeonly buffer Probs { float probs[]; };

void main()
{
    uint g = gl_WorkGroupID.y / pc.nch, chr = gl_WorkGroupID.y % pc.nch;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint lbase = list[ATT_LIST * g + ATT_LOGITS], qbase = g * pc.nch * pc.per;
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
        probs[pc.probs_skew + row * pc.cap + i] = pc.reduce_max != 0u ? acc : acc / float(pc.per);
    }
}
