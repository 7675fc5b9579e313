// attend, pass 4 of 4 (mirrors backends/vulkan/shaders/attend_probs.comp): per slot, the
// probability each query head gave it, exp(logit - lse), combined over the
// query heads that share the cache head (max, or mean), written to probs
// (keep_probs) and, with an observe, applied to the row's policy state at
// its group's step (ATT_T) by the observe op's own update (lkv_observe_slot
// of lkv_cl.h), so the fused observe leaves the bits attend with probs and
// then observe would. Runs when either is wanted; without keep_probs the
// probabilities never reach memory.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk.
// Differs from the CPU oracle: exp(logit - lse) in f32 instead of
// exp(logit - max) / sum in double, and the mean sums in f32.
// The probs window and the state windows span the same rows (probs_skew);
// a binding not wanted (keep_probs, observe 0) is a stand-in never touched.

LKV_KERNEL lkv_attend_probs(LKV_BIND(const uint, list), LKV_BIND(float, probs),
                            LKV_BIND(int, last), LKV_BIND(int, mri), LKV_BIND(float, state),
                            LKV_BIND(const float, logits), LKV_BIND(const float, lse), uint cap,
                            uint per, uint nch, uint probs_skew, uint reduce_max, uint keep_probs,
                            uint observe, uint kind, float alpha)
{
    LKV_OPEN(const uint, list);
    LKV_OPEN(float, probs);
    LKV_OPEN(int, last);
    LKV_OPEN(int, mri);
    LKV_OPEN(float, state);
    LKV_OPEN(const float, logits);
    LKV_OPEN(const float, lse);
    uint g = (uint)get_group_id(1) / nch, chr = (uint)get_group_id(1) % nch;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint lbase = list[ATT_LIST * g + ATT_LOGITS], qbase = g * nch * per;
    int t = (int)list[ATT_LIST * g + ATT_T];
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
        float p = reduce_max != 0u ? acc : acc / (float)per;
        uint x = probs_skew + row * cap + i;
        if (keep_probs != 0u)
            probs[x] = p;
        if (observe != 0u)
            lkv_observe_slot(kind, p, x, t, alpha, last, mri, state);
    }
}
