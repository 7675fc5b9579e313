// attend, pass 1 of 4 (mirrors backends/vulkan/shaders/attend_logits.comp): logits[qh][i] =
// scale * q[qh] . K[i] for a block of up to QBLOCK query heads that share
// cache head ch. Each K row is read once for the whole block.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk,
// z = query-head blocks. list: per group (ATT_* of lkv_cl.h) its first row in
// the window, valid slots, logits base and q base.
// A team of G consecutive work-items (the row's chunks rounded up to a power
// of two, at most LKV_WG) reads one K row together: lane sl reads chunks sl,
// sl + G, ... so consecutive work-items read consecutive 16-byte chunks and a
// work-group reads consecutive rows end to end. A chunk is 16 bytes in the
// LKV_VEC variant (a float4, or a uint4 of eight f16 / bf16, which the host
// picks when head_dim and the row start are multiples of the chunk, so that
// every chunk is 16-byte aligned: lkv_bind_kv_window aligns a window to 16
// bytes), one element otherwise. Each team takes KU slots a round (KU rows
// apart by the teams of the group) and issues their loads before using any,
// so KU loads are in flight per work-item. The lanes' partial dot products
// are summed across the team in local memory, RS slots at a time (no
// sub-groups: lkv_cl.h assumes no width).
// A work-group takes a contiguous span of slots, so it reads K in order
// (what a device on the CPU wants; a GPU does not mind).
// LKV_HOLES reads slot i's K at its place in the hole map (lkv_cl.h).
// Differs from the CPU oracle: products in f32 (the oracle sums in double);
// each lane sums its own chunks in dimension order (within a chunk through
// dot(), whose order the device picks), then the team's lane sums are added
// in lane order (lane 0's, then lane 1's, ...: so chunks 0, G, 2G, ...
// come first, not dimension order); the sum is scaled in f32. Differs from
// the shader: f16 is widened by vload_half, which keeps subnormals where
// Vulkan may flush them.

#define KU 4u // slots a team has in flight
#define RS 2u // slots summed per pass (local memory: about RS * QBLOCK floats per item)

#if defined(LKV_VEC) && defined(LKV_KV16)
#define CHUNK 8u
typedef uint4 raw_t;
typedef float8 kx_t;
#define FETCH(k, e) (*(__global const uint4 *)((__global const uchar *)(k) + 2u * (e)))
#define QLOAD(q, e) vload8(0, (q) + (e))
#define DOT(a, b) (dot((a).lo, (b).lo) + dot((a).hi, (b).hi))
static float8 widen(uint4 r)
{
#ifdef LKV_F16
    return vload_half8(0, (const __private half *)&r);
#else
    uint8 w = (uint8)(r.x << 16, r.x & 0xffff0000u, r.y << 16, r.y & 0xffff0000u,
                      r.z << 16, r.z & 0xffff0000u, r.w << 16, r.w & 0xffff0000u);
    return as_float8(w);
#endif
}
#elif defined(LKV_VEC)
#define CHUNK 4u
typedef float4 raw_t;
typedef float4 kx_t;
#define FETCH(k, e) (*(__global const float4 *)((k) + (e)))
#define QLOAD(q, e) vload4(0, (q) + (e))
#define DOT(a, b) dot((a), (b))
#define widen(r) (r)
#else
#define CHUNK 1u
#if defined(LKV_KV16)
typedef ushort raw_t;
#define FETCH(k, e) (((__global const ushort *)(k))[e])
#else
typedef float raw_t;
#define FETCH(k, e) ((k)[e])
#endif
typedef float kx_t;
#define QLOAD(q, e) ((q)[e])
#define DOT(a, b) ((a) * (b))
static float widen(raw_t r)
{
#if defined(LKV_F16)
    return vload_half(0, (const __private half *)&r);
#elif defined(LKV_BF16)
    return as_float((uint)r << 16);
#else
    return r;
#endif
}
#endif

// Sums RS slots' partial dot products (a[r][j], r < RS, j < jn; zero from
// lanes past the row) over each team of G lanes and writes the logits of
// the slots below n: slot i0 + r * step + team. The lanes' values go to
// local memory, then each work-item adds up one team's G values of a
// (slot, head) in lane order, so two barriers a call whatever G is. Rows of
// red are padded by one float, so that work-items summing different heads
// read different banks. Every work-item of the group must call it.
#define RED_ROW (LKV_WG + 1u)
static void sum_and_store(float a[RS][QBLOCK], __local float *red, __global float *logits,
                          uint i0, uint step, uint G, uint jn, uint n, uint lbase, float scale)
{
    uint tid = (uint)get_local_id(0);
    for (uint r = 0u; r < RS; r++)
        for (uint j = 0u; j < QBLOCK; j++)
            if (j < jn)
                red[(r * QBLOCK + j) * RED_ROW + tid] = a[r][j];
    barrier(CLK_LOCAL_MEM_FENCE);
    // Output o: head o / (RS * step), slot i0 + o % (RS * step), so that
    // consecutive work-items store consecutive logits of a head.
    uint slots = RS * step;
    for (uint o = tid; o < slots * jn; o += LKV_WG) {
        uint j = o / slots, x = o % slots, r = x / step, team = x % step, i = i0 + x;
        __local const float *p = red + (r * QBLOCK + j) * RED_ROW + team * G;
        float sum = p[0];
        for (uint k = 1u; k < G; k++)
            sum += p[k];
        if (i < n)
            logits[lbase + j * n + i] = sum * scale;
    }
    barrier(CLK_LOCAL_MEM_FENCE); // red is rewritten by the next call
}

// Logits are stored per group (logits points at its first): [cache head of
// the chunk][per][n]; row is the slot's cache row in the window.
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
    __local float red[RS * QBLOCK * RED_ROW];
    uint g = (uint)get_group_id(1) / nch, chr = (uint)get_group_id(1) % nch, ch = ch_first + chr;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    __global float *glogits = logits + list[ATT_LIST * g + ATT_LOGITS];
    uint j0 = get_group_id(2) * QBLOCK;
    uint jn = min(QBLOCK, per - j0);
    uint lbase = (chr * per + j0) * n;
    __global const float *qh = query + list[ATT_LIST * g + ATT_Q] + (ch * per + j0) * dim;
    uint chunks = dim / CHUNK; // the host picks LKV_VEC only where CHUNK divides dim
    uint G = 1u;
    while (G < chunks && G < (uint)LKV_WG)
        G <<= 1u;
    uint tid = (uint)get_local_id(0), sl = tid & (G - 1u), team = tid / G, step = LKV_WG / G;
    bool lane_live = sl < chunks;
    uint c_first = lane_live ? sl : 0u; // lanes past the row read chunk 0, add nothing
    uint kbase = kv_skew + KV_ROW(row) * dim;

    // The lane's first chunk of q, for every head of the block, stays in
    // registers; rows of more chunks than the group has work-items read the
    // rest from memory.
    kx_t qreg[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++)
        qreg[j] = j < jn ? QLOAD(qh, j * dim + c_first * CHUNK) : (kx_t)(0.0f);

    // A contiguous span of slots per work-group, whole rounds of KU * step.
    uint round = KU * step, groups = (uint)get_num_groups(0);
    uint span = (n + groups - 1u) / groups;
    span = (span + round - 1u) / round * round;
    uint start = (uint)get_group_id(0) * span, end = min(n, start + span);
    // Uniform over the work-group: every work-item reaches each barrier.
    for (uint i0 = start; i0 < end; i0 += round) {
        // Places first, then every load of the round, then their use.
        uint at[KU];
        for (uint u = 0u; u < KU; u++) {
            uint i = min(i0 + u * step + team, n - 1u); // past n: a valid row, unused
            at[u] = kbase + KV_PLACE(row, i) * dim;
        }
        raw_t kc[KU];
        for (uint u = 0u; u < KU; u++)
            kc[u] = FETCH(k, at[u] + c_first * CHUNK);
        float acc[KU][QBLOCK];
        for (uint u = 0u; u < KU; u++) {
            kx_t kx = widen(kc[u]);
            for (uint j = 0u; j < QBLOCK; j++)
                acc[u][j] = j < jn ? DOT(qreg[j], kx) : 0.0f;
        }
        for (uint c = sl + G; c < chunks; c += G) {
            for (uint u = 0u; u < KU; u++)
                kc[u] = FETCH(k, at[u] + c * CHUNK);
            for (uint j = 0u; j < jn; j++) {
                kx_t qx = QLOAD(qh, j * dim + c * CHUNK);
                for (uint u = 0u; u < KU; u++)
                    acc[u][j] += DOT(qx, widen(kc[u]));
            }
        }
        // A lane past the row multiplied q's zeros by chunk 0, which may
        // hold inf: it adds 0, not NaN.
        for (uint u = 0u; u < KU; u++)
            for (uint j = 0u; j < QBLOCK; j++)
                acc[u][j] = lane_live ? acc[u][j] : 0.0f;
        for (uint u = 0u; u < KU; u += RS)
            sum_and_store(acc + u, red, glogits, i0 + u * step, step, G, jn, n, lbase, scale);
    }
}
