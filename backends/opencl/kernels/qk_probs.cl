// qk_probs: mirrors backends/vulkan/shaders/qk_probs.comp. An engine's
// attention probabilities from its queries, its K in place and its
// log-sum-exp: per slot the dot product over d ascending in REAL, times the
// scale, exp of its distance to the lse, clamped to 1, rounded once. REAL is
// double in the f64 variants (OpenCL's double exp: the oracle's value but
// at a rounding boundary) and float otherwise.
// Launch: x = work-groups over the longest row, y = the rows.
// list: (q_row, lse_at, len, base, tab_row, out_row) per row; base and the
// strides in words.

// The oracle rounds every step; a fused multiply-add would not.
#pragma OPENCL FP_CONTRACT OFF

#ifdef LKV_F64
#define REAL double
#else
#define REAL float
#endif

#ifdef LKV_KV16
#define PER_WORD 2u
#else
#define PER_WORD 1u
#endif

LKV_KERNEL lkv_qk_probs(LKV_BIND(uint, list), LKV_BIND(uint, table), LKV_BIND(float, q),
                        LKV_BIND(float, lse), LKV_BIND(KV_T, k), LKV_BIND(float, probs), uint n,
                        uint dim, uint stride, float scale, uint slot_stride, uint block_stride,
                        uint block_size, uint max_blocks)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, table);
    LKV_OPEN(float, q);
    LKV_OPEN(float, lse);
    LKV_OPEN(KV_T, k);
    LKV_OPEN(float, probs);
    uint step = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_group_id(1); i < n; i += (uint)get_num_groups(1)) {
        uint x = list[6u * i] * dim, len = list[6u * i + 2u];
        REAL l = (REAL)lse[list[6u * i + 1u]];
        uint out0 = list[6u * i + 5u] * stride;
        for (uint j = (uint)get_global_id(0); j < len; j += step) {
            uint at = lkv_engine_slot(table, list[6u * i + 3u], list[6u * i + 4u], j,
                                      slot_stride, block_stride, block_size, max_blocks) *
                      PER_WORD;
            REAL dot = (REAL)0;
            for (uint d = 0u; d < dim; d++)
                dot += (REAL)q[x + d] * (REAL)LOAD_KV(k, at + d);
            REAL e = exp(dot * (REAL)scale - l);
            probs[out0 + j] = e > (REAL)1 ? 1.0f : (float)e;
        }
    }
}
