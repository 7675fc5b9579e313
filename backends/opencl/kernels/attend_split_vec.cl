// attend, pass 2 of 4, for head_dim at most 4 * LKV_WG and rows of whole
// 16-byte units starting on a 16-byte boundary (mirrors
// backends/vulkan/shaders/attend_split_vec.comp; the host checks, in
// backends/bind/bind_attend.c, and attend_split.cl covers the rest; this
// kernel also takes f16 / bf16 rows of whole 8-byte units, W = 4 below).
// Same partials as attend_split.cl, but each work-item owns a unit of W
// consecutive dimensions, one 16-byte load per slot: W = 4 for f32 (a
// float4); W = 8 for f16 and bf16 (a uint4) where head_dim and the row
// start are multiples of 8, so that every unit is 16-byte aligned
// (lkv_bind_kv_window aligns a window to 16 bytes), else W = 4 (an 8-byte
// uint2). The group's work-items are split into lanes that take alternate
// slots, VU slots a round whose loads are all issued before any is used, so
// VU V loads are in flight per work-item. Lanes are summed in local memory
// at the end.
// Launch: x = splits (the most of a listed group), y = listed groups x cache
// heads of the chunk, z = query-head blocks.
// Differs from the CPU oracle: f32, exponentials against the split's own
// maximum (rescaled in pass 3), sums per lane in slot order, then over the
// lanes in lane order.
// Differs from the shader: f16 is widened by vload_half, which keeps
// subnormals; max is fmax (passes over NaN); a head_dim of 0 takes no lane
// instead of dividing by zero (a CPU device would trap).

#define VU 4u // V rows a lane has in flight

#ifdef LKV_KV16
typedef float8 unit_t; // W is 8 or 4 (the upper half unused)
#define UNIT_FLOATS 8u

static float8 widen8(uint4 r)
{
#ifdef LKV_F16
    return vload_half8(0, (const __private half *)&r);
#else
    return as_float8((uint8)(r.x << 16, r.x & 0xffff0000u, r.y << 16, r.y & 0xffff0000u,
                             r.z << 16, r.z & 0xffff0000u, r.w << 16, r.w & 0xffff0000u));
#endif
}

static float4 widen4(uint2 r)
{
#ifdef LKV_F16
    return vload_half4(0, (const __private half *)&r);
#else
    return as_float4((uint4)(r.x << 16, r.x & 0xffff0000u, r.y << 16, r.y & 0xffff0000u));
#endif
}

// VU units of V (element offsets at[], multiples of w), loaded before any
// is widened; w is uniform over the work-group. One path of selects, not
// an if/else on w: PoCL (libpocl.so.2.10) returned NaN sums for w = 8 from
// the if/else.
static void load_units(__global const KV_T *v, const uint *at, uint w, unit_t *out, uint count)
{
    __global const uchar *b = (__global const uchar *)v;
    uint4 raw[VU];
    for (uint u = 0u; u < count; u++)
        raw[u] = w == 8u ? *(__global const uint4 *)(b + 2u * at[u])
                         : (uint4)(*(__global const uint2 *)(b + 2u * at[u]), 0u, 0u);
    for (uint u = 0u; u < count; u++)
        out[u] = w == 8u ? widen8(raw[u]) : (float8)(widen4(raw[u].xy), (float4)(0.0f));
}
#define UNIT_W(dim, skew) ((dim) % 8u == 0u && (skew) % 8u == 0u ? 8u : 4u)
#else
typedef float4 unit_t;
#define UNIT_FLOATS 4u

static void load_units(__global const KV_T *v, const uint *at, uint w, unit_t *out, uint count)
{
    (void)w;
    float4 raw[VU];
    for (uint u = 0u; u < count; u++)
        raw[u] = *(__global const float4 *)(v + at[u]);
    for (uint u = 0u; u < count; u++)
        out[u] = raw[u];
}
#define UNIT_W(dim, skew) 4u
#endif

// count (VU or 1) slots c + t, c + t + lanes, ... of the chunk whose weights
// are weight[j * LKV_WG + ...]: acc[j] += weight * V unit, in slot order.
static void accumulate(__global const KV_T *v, uint rbase, uint row, uint c, uint t, uint lanes,
                       uint w, uint unit, uint dim, uint jn, __local const float *weight,
                       unit_t *acc, uint count
#ifdef LKV_HOLES
                       , __global const uint *phys, uint phys_skew, uint cap
#endif
                       )
{
    uint at[VU];
    for (uint u = 0u; u < count; u++)
        at[u] = rbase + KV_PLACE(row, c + t + u * lanes) * dim + unit * w;
    unit_t val[VU];
    load_units(v, at, w, val, count);
    for (uint u = 0u; u < count; u++)
        for (uint j = 0u; j < jn; j++)
            acc[j] += weight[j * LKV_WG + t + u * lanes] * val[u];
}

#ifdef LKV_HOLES
#define HOLES_ARGS , phys, phys_skew, cap
#else
#define HOLES_ARGS
#endif

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
    // weights of a chunk's slots; after the slots, the lanes' sums (one unit
    // per work-item: QBLOCK floats are at least one unit)
    __local unit_t weight_mem[QBLOCK * LKV_WG / UNIT_FLOATS];
    __local float *weight = (__local float *)weight_mem;
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
    uint j0 = (uint)get_group_id(2) * QBLOCK, jn = min(QBLOCK, per - j0);
    uint qh0 = chr * per + j0; // chunk-relative query head
    uint s0 = split * split_len, s1 = min(n, s0 + split_len);
    uint w = UNIT_W(dim, kv_skew);                   // dimensions per unit
    uint du = dim / w;                               // units per row
    uint lanes = du ? (uint)LKV_WG / du : 0u;        // slots taken side by side
    uint lane = du ? tid / du : 0u, unit = du ? tid % du : 0u;
    bool working = lane < lanes;

    float m[QBLOCK];
    lkv_split_max(logits, qh0, n, s0, s1, jn, red, tid, m);

    float l[QBLOCK];
    unit_t acc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++) {
        l[j] = 0.0f;
        acc[j] = (unit_t)(0.0f);
    }
    uint rbase = kv_skew + KV_ROW(row) * dim;
    for (uint c = s0; c < s1; c += LKV_WG) {
        lkv_split_weights(logits, qh0, n, c + tid, s1, jn, m, weight, tid, l);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cn = min((uint)LKV_WG, s1 - c);
        if (working) {
            uint t = lane;
            for (; t + (VU - 1u) * lanes < cn; t += VU * lanes)
                accumulate(v, rbase, row, c, t, lanes, w, unit, dim, jn, weight, acc,
                           VU HOLES_ARGS);
            for (; t < cn; t += lanes)
                accumulate(v, rbase, row, c, t, lanes, w, unit, dim, jn, weight, acc,
                           1u HOLES_ARGS);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint j = 0u; j < QBLOCK; j++)
        red[j * LKV_WG + tid] = l[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    lkv_reduce_qblock(red, tid, 0);

    __local unit_t *lanes_sum = weight_mem;
    uint stride = dim + 2u;
    for (uint j = 0u; j < jn; j++) {
        lanes_sum[tid] = working ? acc[j] : (unit_t)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint base = ((qh0 + j) * n_splits + split) * stride;
        if (tid < du) {
            unit_t sum = (unit_t)(0.0f);
            for (uint ln = 0u; ln < lanes; ln++)
                sum += lanes_sum[ln * du + tid];
            float s[UNIT_FLOATS];
#ifdef LKV_KV16
            vstore8(sum, 0, s);
#else
            vstore4(sum, 0, s);
#endif
            for (uint e = 0u; e < w; e++)
                gpart[base + 2u + w * tid + e] = s[e];
        }
        if (tid == 0u) {
            gpart[base] = m[j];
            gpart[base + 1u] = red[j * LKV_WG];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
