// attend, pass 2 of 4, for head_dim a multiple of 4 and at most 4 * LKV_WG
// with rows starting on a 4-element boundary (mirrors
// backends/vulkan/shaders/attend_split_vec.comp; the host checks, attend_split.cl covers the
// rest). Same partials as attend_split.cl, but each work-item owns 4
// consecutive dimensions (one 16-byte f32 or one 8-byte f16 or bf16 load
// per slot) and the group's work-items are split into lanes that take
// alternate slots, so V loads, weight loads and loop overhead drop about 4x.
// Lanes are summed in local memory at the end.
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks.
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3), sums in lane-then-slot order.
// Differs from the shader: f16 is read through vload_half4, which keeps
// subnormals; max is fmax (passes over NaN); a head_dim of 0 takes no lane
// instead of dividing by zero (a CPU device would trap).

static float4 load4(__global const KV_T *v, uint idx4)
{
    return LOAD_KV4(v, idx4);
}

LKV_KERNEL lkv_attend_split_vec(LKV_BIND(const uint, list), LKV_BIND(const KV_T, v),
                                LKV_BIND(const float, logits_all), LKV_BIND(float, part) HOLES_BIND,
                                uint cap, uint dim, uint per, uint nch, uint kv_skew,
                                uint dblocks /* unused: one block covers every dimension */
                                HOLES_PUSH)
{
    HOLES_OPEN;
    LKV_OPEN(const uint, list);
    LKV_OPEN(const KV_T, v);
    LKV_OPEN(const float, logits_all);
    LKV_OPEN(float, part);
    __local float weight[QBLOCK * LKV_WG];
    __local float red[QBLOCK * LKV_WG];
    __local float4 lanes_sum[LKV_WG];
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
    uint j0 = (uint)get_group_id(2) * QBLOCK, jn = min(QBLOCK, per - j0);
    uint qh0 = chr * per + j0; // chunk-relative query head
    uint s0 = split * split_len, s1 = min(n, s0 + split_len);
    uint d4 = dim / 4u;                              // 4-element units per row
    uint lanes = d4 ? (uint)LKV_WG / d4 : 0u;        // slots taken side by side
    uint lane = d4 ? tid / d4 : 0u, u = d4 ? tid % d4 : 0u;
    bool working = lane < lanes;

    float m[QBLOCK];
    lkv_split_max(logits, qh0, n, s0, s1, jn, red, tid, m);

    float l[QBLOCK];
    float4 acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0f;
        acc[j] = (float4)(0.0f);
    }
    uint row4 = (kv_skew + KV_ROW(row) * dim) / 4u;
    for (uint c = s0; c < s1; c += LKV_WG) {
        lkv_split_weights(logits, qh0, n, c + tid, s1, jn, m, weight, tid, l);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cn = min((uint)LKV_WG, s1 - c);
        if (working)
            for (uint t = lane; t < cn; t += lanes) {
                float4 val = load4(v, row4 + KV_PLACE(row, c + t) * d4 + u);
                for (uint j = 0u; j < jn; j++)
                    acc[j] += weight[j * LKV_WG + t] * val;
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint j = 0u; j < QBLOCK; j++)
        red[j * LKV_WG + tid] = l[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    lkv_reduce_qblock(red, tid, 0);

    uint stride = dim + 2u;
    for (uint j = 0u; j < jn; j++) {
        lanes_sum[tid] = working ? acc[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint base = ((qh0 + j) * n_splits + split) * stride;
        if (tid < d4) {
            float4 sum = (float4)(0.0f);
            for (uint ln = 0u; ln < lanes; ln++)
                sum += lanes_sum[ln * d4 + tid];
            gpart[base + 2u + 4u * tid] = sum.x;
            gpart[base + 3u + 4u * tid] = sum.y;
            gpart[base + 4u + 4u * tid] = sum.z;
            gpart[base + 5u + 4u * tid] = sum.w;
        }
        if (tid == 0u) {
            gpart[base] = m[j];
            gpart[base + 1u] = red[j * LKV_WG];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
