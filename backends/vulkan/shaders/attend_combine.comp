#version 450
// attend, pass 3 of 4: per query head, merge the split partials into
// out = sum_s o_s exp(m_s - M) / L and the log-sum-exp M + log L, where
// M = max_s m_s and L = sum_s l_s exp(m_s - M).
// Launch: x = query heads of the chunk (a workgroup each), invocations over
// dimensions. Partials and lse are chunk-relative, out is the group's.
// With no valid slot, out is 0 and lse is -inf, as on the CPU; with valid
// slots whose every logit is -inf, out is NaN, as the CPU's exp(-inf - -inf).

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint n_splits;
    uint dim;
    uint qh_first;
    uint out_base; // this group's first out element
    uint has_out;
} pc;

layout(std430, binding = 0) readonly buffer Partials { float part[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };
layout(std430, binding = 2) writeonly buffer Lse { float lse[]; };

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint rel = gl_WorkGroupID.x, qh = pc.qh_first + rel;
    uint stride = pc.dim + 2u;
    uint base = rel * pc.n_splits * stride;
    float big = uintBitsToFloat(0xff800000u);
    for (uint s = 0u; s < pc.n_splits; s++)
        big = max(big, part[base + s * stride]);
    float total = 0.0;
    bool none = big == uintBitsToFloat(0xff800000u); // no split saw a finite logit
    for (uint s = 0u; s < pc.n_splits && !none; s++)
        total += part[base + s * stride + 1u] * exp(part[base + s * stride] - big);
    if (pc.has_out != 0u)
        for (uint e = tid; e < pc.dim; e += WG) {
            float o = 0.0;
            for (uint s = 0u; s < pc.n_splits && !none; s++)
                o += part[base + s * stride + 2u + e] * exp(part[base + s * stride] - big);
            // No split at all is no valid slot: 0, as on the CPU. Splits
            // whose every logit is -inf are the CPU's exp(-inf - -inf): NaN.
            outv[pc.out_base + qh * pc.dim + e] = total > 0.0 ? o / total
                                                : pc.n_splits == 0u ? 0.0
                                                : uintBitsToFloat(0x7fc00000u);
        }
    if (tid == 0u)
        lse[rel] = big + log(total);
}
