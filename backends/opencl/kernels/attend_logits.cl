// attend, pass 1 of 4 (mirrors backends/vulkan/shaders/attend_logits.comp): logits[qh][i] =
// scale * q[qh] . K[i] for a block of up to QBLOCK query heads that share
// cache head ch. One work-item per slot reads its K row once for the whole
// block.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk,
// z = query-head blocks. list: per group (ATT_* of lkv_cl.h) its first row in
// the window, valid slots, logits base and q base.
// The LKV_VEC variant loads K and q 16 bytes at a time (the host picks it when
// head_dim and the row start allow). vload4 / vload_half8 / vload8 (bf16
// as ushort) need only element alignment, so nothing here depends on how the host aligns a window.
// LKV_HOLES reads slot i's K at its place in the hole map (lkv_cl.h).
// Differs from the CPU oracle: products summed in f32 in dimension order
// (the oracle sums in double). Differs from the shader: f16 is read through
// vload_half, which keeps subnormals where Vulkan may flush them.

// Logits are stored per group (logits points at its first): [cache head of
// the chunk][per][n]; row is the slot's cache row in the window.
static void logits_of_slot(__global const KV_T *k, __global const float *q, __global float *logits,
                           uint i, uint place, uint row, uint chr, uint j0, uint jn, uint qbase,
                           uint n, uint kv_row, uint dim, uint per, uint kv_skew, float scale)
{
    uint kbase = kv_skew + (kv_row + place) * dim;
    float acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++)
        acc[j] = 0.0f;
#ifdef LKV_VEC
#ifdef LKV_KV16
    for (uint e = 0u; e < dim; e += 8u) {
        float8 w = LOAD_KV8(k, (kbase + e) / 8u);
        for (uint j = 0u; j < jn; j++) {
            uint qi = (qbase + j * dim + e) / 4u;
            acc[j] += dot(vload4(qi, q), w.lo) + dot(vload4(qi + 1u, q), w.hi);
        }
    }
#else
    for (uint e = 0u; e < dim; e += 4u) {
        float4 key = vload4((kbase + e) / 4u, k);
        for (uint j = 0u; j < jn; j++)
            acc[j] += dot(vload4((qbase + j * dim + e) / 4u, q), key);
    }
#endif
#else
    for (uint e = 0u; e < dim; e++) {
        float key = LOAD_KV(k, kbase + e);
        for (uint j = 0u; j < jn; j++)
            acc[j] += q[qbase + j * dim + e] * key;
    }
#endif
    for (uint j = 0u; j < jn; j++)
        logits[(chr * per + j0 + j) * n + i] = acc[j] * scale;
}

LKV_KERNEL lkv_attend_logits(LKV_BIND(const uint, list), LKV_BIND(const KV_T, k),
                             LKV_BIND(const float, query), LKV_BIND(float, logits) HOLES_BIND,
                             uint cap, uint dim, uint per, uint nch, uint ch_first, uint kv_skew,
                             float scale HOLES_PUSH)
{
    HOLES_OPEN;
    LKV_OPEN(const uint, list);
    LKV_OPEN(const KV_T, k);
    LKV_OPEN(const float, query);
    LKV_OPEN(float, logits);
    uint g = (uint)get_group_id(1) / nch, chr = (uint)get_group_id(1) % nch, ch = ch_first + chr;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    __global float *glogits = logits + list[ATT_LIST * g + ATT_LOGITS];
    uint j0 = get_group_id(2) * QBLOCK;
    uint jn = min(QBLOCK, per - j0);
    uint qbase = list[ATT_LIST * g + ATT_Q] + (ch * per + j0) * dim;
    // Grid-stride, so a cache longer than the grid the host launched needs no
    // second dispatch.
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_group_id(0) * LKV_WG + (uint)get_local_id(0); i < n; i += stride)
        logits_of_slot(k, query, glogits, i, KV_PLACE(row, i), row, chr, j0, jn, qbase, n,
                       KV_ROW(row), dim, per, kv_skew, scale);
}
