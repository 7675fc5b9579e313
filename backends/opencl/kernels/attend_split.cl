// attend, pass 2 of 4 (mirrors backends/vulkan/shaders/attend_split.comp): flash-decoding
// partials. A work-group takes one split (slots [split * split_len, ...)) of
// one cache head, a block of up to QBLOCK query heads and a block of
// dimensions (one per work-item), and writes per query head m = max logit,
// l = sum exp(logit - m) and o[e] = sum exp(logit - m) V[i][e]. V is read
// once per cache head for the whole block.
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks *
// dimension blocks. Logits and partials are per listed group; partials are
// [query heads of the chunk][n_splits][dim + 2] (m, l, o...).
// LKV_HOLES reads slot i's V at its place in the hole map (lkv_cl.h).
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3) instead of the global one, sums in tree order.
// Differs from the shader: f16 is read through vload_half, which keeps
// subnormals; max is fmax, which passes over NaN (what GLSL max does on the
// usual drivers, where it is left undefined).
// Each work-item reads one element of SU consecutive slots' V rows a round
// (consecutive work-items read consecutive elements), issuing the SU loads
// before using any, so they are in flight together; the sums stay in slot
// order.

#define SU 4u // V rows a work-item has in flight

LKV_KERNEL lkv_attend_split(LKV_BIND(const uint, list), LKV_BIND(const KV_T, v),
                            LKV_BIND(const float, logits_all), LKV_BIND(float, part) HOLES_BIND,
                            uint cap, uint dim, uint per, uint nch, uint kv_skew,
                            uint dblocks HOLES_PUSH)
{
    HOLES_OPEN;
    LKV_OPEN(const uint, list);
    LKV_OPEN(const KV_T, v);
    LKV_OPEN(const float, logits_all);
    LKV_OPEN(float, part);
    __local float weight[QBLOCK * LKV_WG];
    __local float red[QBLOCK * LKV_WG];
    uint tid = get_local_id(0);
    uint split = get_group_id(0), g = (uint)get_group_id(1) / nch, chr = (uint)get_group_id(1) % nch;
    uint n = list[ATT_LIST * g + ATT_N], n_splits = list[ATT_LIST * g + ATT_SPLITS];
    // The grid has the most splits of a listed group; a group with fewer
    // leaves the rest (the whole work-group alike, before any barrier).
    if (split >= n_splits)
        return;
    uint row = list[ATT_LIST * g + ATT_ROW] + chr, split_len = list[ATT_LIST * g + ATT_SPLIT];
    __global const float *logits = logits_all + list[ATT_LIST * g + ATT_LOGITS];
    __global float *gpart = part + list[ATT_LIST * g + ATT_PARTS];
    uint qb = (uint)get_group_id(2) / dblocks, db = (uint)get_group_id(2) % dblocks;
    uint j0 = qb * QBLOCK, jn = min(QBLOCK, per - j0);
    uint qh0 = chr * per + j0; // chunk-relative query head
    uint s0 = split * split_len, s1 = min(n, s0 + split_len);

    float m[QBLOCK];
    lkv_split_max(logits, qh0, n, s0, s1, jn, red, tid, m);

    float l[QBLOCK], acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0f;
        acc[j] = 0.0f;
    }
    uint e = db * LKV_WG + tid;
    uint rbase = kv_skew + KV_ROW(row) * dim + e;
    for (uint c = s0; c < s1; c += LKV_WG) {
        lkv_split_weights(logits, qh0, n, c + tid, s1, jn, m, weight, tid, l);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cn = min((uint)LKV_WG, s1 - c);
        if (e < dim) {
            uint t = 0u;
            // SU slots a round: places, then every load, then their use.
            for (; t + SU <= cn; t += SU) {
                uint at[SU];
                for (uint u = 0u; u < SU; u++)
                    at[u] = rbase + KV_PLACE(row, c + t + u) * dim;
                float val[SU];
                for (uint u = 0u; u < SU; u++)
                    val[u] = LOAD_KV(v, at[u]);
                for (uint u = 0u; u < SU; u++)
                    for (uint j = 0u; j < jn; j++)
                        acc[j] += weight[j * LKV_WG + t + u] * val[u];
            }
            for (; t < cn; t++) {
                float val = LOAD_KV(v, rbase + KV_PLACE(row, c + t) * dim);
                for (uint j = 0u; j < jn; j++)
                    acc[j] += weight[j * LKV_WG + t] * val;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint j = 0u; j < QBLOCK; j++)
        red[j * LKV_WG + tid] = l[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    lkv_reduce_qblock(red, tid, 0);

    uint stride = dim + 2u;
    for (uint j = 0u; j < jn; j++) {
        uint base = ((qh0 + j) * n_splits + split) * stride;
        if (e < dim)
            gpart[base + 2u + e] = acc[j];
        if (db == 0u && tid == 0u) {
            gpart[base] = m[j];
            gpart[base + 1u] = red[j * LKV_WG];
        }
    }
}
