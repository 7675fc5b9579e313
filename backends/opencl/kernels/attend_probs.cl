// attend, pass 4 of 4 (mirrors backends/vulkan/shaders/attend_probs.comp): per slot, the
// probability each query head gave it, exp(logit - lse), combined over the
// query heads that share the cache head (max, or mean).
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk.
// Differs from the CPU oracle: exp(logit - lse) in f32 instead of
// exp(logit - max) / sum in double, and the mean sums in f32.

LKV_KERNEL lkv_attend_probs(LKV_BIND(const uint, list), LKV_BIND(const float, logits),
                            LKV_BIND(const float, lse), LKV_BIND(float, probs), uint cap, uint per,
                            uint nch, uint probs_skew, uint reduce_max)
{
    LKV_OPEN(const uint, list);
    LKV_OPEN(const float, logits);
    LKV_OPEN(const float, lse);
    LKV_OPEN(float, probs);
    uint g = (uint)get_group_id(1) / nch, chr = (uint)get_group_id(1) % nch;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint lbase = list[ATT_LIST * g + ATT_LOGITS], qbase = g * nch * per;
    // Grid-stride, so a cache longer than the launched grid needs no second
    // dispatch.
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_group_id(0) * LKV_WG + (uint)get_local_id(0); i < n; i += stride) {
        // max starts at -inf and passes over NaN, as the CPU's fmax does: a
        // query head whose every logit is -inf has lse -inf and p NaN here.
        float acc = reduce_max != 0u ? as_float(0xff800000u) : 0.0f;
        for (uint j = 0u; j < per; j++) {
            uint qh = chr * per + j; // chunk-relative
            float p = exp(logits[lbase + qh * n + i] - lse[qbase + qh]);
            if (reduce_max == 0u)
                acc += p;
            else if (!isnan(p))
                acc = fmax(acc, p);
        }
        probs[probs_skew + row * cap + i] = reduce_max != 0u ? acc : acc / (float)per;
    }
}
