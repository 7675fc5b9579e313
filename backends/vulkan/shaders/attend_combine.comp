#version 450
// attend, pass 3 of 4: per query head, merge the split partials into
// out = sum_s o_s exp(m_s - M) / L and the log-sum-exp M + log L, where
// M = max_s m_s and L = sum_s l_s exp(m_s - M).
// Launch: x = listed groups x query heads of the chunk (a workgroup each),
// invocations over dimensions. Partials are the group's (from its list
// entry), lse is [listed group][query head of the chunk], out is the call's.
// With no valid slot, out is 0 and lse is -inf, as on the CPU; with valid
// slots whose every logit is -inf, out is NaN, as the CPU's exp(-inf - -inf).

#extension GL_GOOGLE_include_directive : require
#include "attend_list.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint dim;
    uint nqh;      // query heads of the chunk
    uint qh_first; // the chunk's first query head of each group
    uint has_out;
} pc;

layout(std430, binding = 1) readonly buffer Partials { float part[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };
layout(std430, binding = 3) writeonly buffer Lse { float lse[]; };

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint g = gl_WorkGroupID.x / pc.nqh, rel = gl_WorkGroupID.x % pc.nqh, qh = pc.qh_first + rel;
    uint n_splits = list[ATT_LIST * g + ATT_SPLITS], out_base = list[ATT_LIST * g + ATT_Q];
    uint stride = pc.dim + 2u;
    uint base = list[ATT_LIST * g + ATT_PARTS] + rel * n_splits * stride;
    float big = uintBitsToFloat(0xff800000u);
    for (uint s = 0u; s < n_splits; s++)
        big = max(big, part[base + s * stride]);
    float total = 0.0;
    bool none = big == uintBitsToFloat(0xff800000u); // no split saw a finite logit
    for (uint s = 0u; s < n_splits && !none; s++)
        total += part[base + s * stride + 1u] * exp(part[base + s * stride] - big);
    if (pc.has_out != 0u)
        for (uint e = tid; e < pc.dim; e += WG) {
            float o = 0.0;
            for (uint s = 0u; s < n_splits && !none; s++)
                o += part[base + s * stride + 2u + e] * exp(part[base + s * stride] - big);
            // No split at all is no valid slot: 0, as on the CPU. Splits
            // whose every logit is -inf are the CPU's exp(-inf - -inf): NaN.
            outv[out_base + qh * pc.dim + e] = total > 0.0 ? o / total
                                                : n_splits == 0u ? 0.0
                                                : uintBitsToFloat(0x7fc00000u);
        }
    if (tid == 0u)
        lse[gl_WorkGroupID.x] = big + log(total);
}
