// attend, pass 3 of 4 (mirrors backends/vulkan/shaders/attend_combine.comp): per query head,
// merge the split partials into out = sum_s o_s exp(m_s - M) / L and the
// log-sum-exp M + log L, where M = max_s m_s and L = sum_s l_s exp(m_s - M).
// Launch: x = listed groups x query heads of the chunk (a work-group each),
// work-items over dimensions. Partials are the group's (from its list
// entry), lse is [listed group][query head of the chunk], out is the call's.
// With no valid slot, out is 0 and lse is -inf, as on the CPU; with valid
// slots whose every logit is -inf, out is NaN, as the CPU's exp(-inf - -inf).
// Differs from the shader: max is fmax (passes over NaN, what GLSL max does
// on the usual drivers, where it is left undefined).
// Without an output the host binds lse as a stand-in for outv; has_out is 0
// then and outv is never written, so the aliasing is harmless.

LKV_KERNEL lkv_attend_combine(LKV_BIND(const uint, list), LKV_BIND(const float, part),
                              LKV_BIND(float, outv), LKV_BIND(float, lse), uint dim, uint nqh,
                              uint qh_first, uint has_out)
{
    LKV_OPEN(const uint, list);
    LKV_OPEN(const float, part);
    LKV_OPEN(float, outv);
    LKV_OPEN(float, lse);
    uint tid = get_local_id(0);
    uint x = get_group_id(0), g = x / nqh, rel = x % nqh, qh = qh_first + rel;
    uint n_splits = list[ATT_LIST * g + ATT_SPLITS], out_base = list[ATT_LIST * g + ATT_Q];
    uint stride = dim + 2u;
    uint base = list[ATT_LIST * g + ATT_PARTS] + rel * n_splits * stride;
    float big = as_float(0xff800000u);
    for (uint s = 0u; s < n_splits; s++)
        big = fmax(big, part[base + s * stride]);
    float total = 0.0f;
    bool none = big == as_float(0xff800000u); // no split saw a finite logit
    for (uint s = 0u; s < n_splits && !none; s++)
        total += part[base + s * stride + 1u] * exp(part[base + s * stride] - big);
    if (has_out != 0u)
        for (uint e = tid; e < dim; e += LKV_WG) {
            float o = 0.0f;
            for (uint s = 0u; s < n_splits && !none; s++)
                o += part[base + s * stride + 2u + e] * exp(part[base + s * stride] - big);
            // No split at all is no valid slot: 0, as on the CPU. Splits
            // whose every logit is -inf are the CPU's exp(-inf - -inf): NaN.
            outv[out_base + qh * dim + e] = total > 0.0f ? o / total
                                          : n_splits == 0u ? 0.0f
                                          : as_float(0x7fc00000u);
        }
    if (tid == 0u)
        lse[x] = big + log(total);
}
