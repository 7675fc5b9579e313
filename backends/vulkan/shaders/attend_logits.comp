#version 450
#extension GL_GOOGLE_include_directive : require
// attend, pass 1 of 4: logits[qh][i] = scale * q[qh] . K[i] for a block of
// up to QBLOCK query heads that share cache head ch, each K row read once
// for the whole block.
// A K row is read by a lane group: LANES consecutive invocations (a power
// of two: the row's units rounded up, at most MAX_LANES and the workgroup)
// where a unit is 16 bytes in the LKV_VEC variant (the host picks it when
// head_dim and the row start allow) and one element otherwise; lane l
// reads units l, l + LANES, ..., so a load instruction of the workgroup
// reads consecutive bytes of consecutive rows. Each lane keeps q at its
// first unit in registers, takes SLOTS slots per pass and issues their
// loads before it uses any, so SLOTS loads are in flight per invocation;
// the lanes' partial dot products are summed in shared memory, a round per
// RED_HEADS query heads, one invocation per lane group and head summing
// its lanes' vec4 of SLOTS slots.
// A workgroup takes max(WG, SLOTS * groups) consecutive slots (the host
// sizes the grid as for one slot per invocation), then loops grid-stride.
// Launch: x = slot blocks, y = listed groups x cache heads of the chunk,
// z = query-head blocks. list: per group (attend_list.glsl) its first row in
// the window, valid slots, logits base and q base; every group of a dispatch
// shares the chunk's cache heads.
// Differs from the CPU oracle: products summed in f32 (the oracle sums in
// double), per unit in dimension order, a lane's units in order (lane l:
// units l, l + LANES, ...), then the lanes in order.
#include "kv_storage.glsl"
#include "attend_list.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;      // slots per cache row
    uint dim;      // head_dim
    uint per;      // query heads per cache head
    uint nch;      // cache heads of the chunk
    uint ch_first; // the chunk's first cache head of each group
    uint kv_skew;  // elements before the window's first row in the binding
    float scale;
#ifdef LKV_HOLES
    uint phys_skew; // the same in the hole map's window
    uint kv_cap;    // K/V row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

#define HOLES_BINDING 4
#include "holes.glsl"

// VEC: elements of one unit; UNIT_T: one unit as loaded.
#ifdef LKV_VEC
#ifdef LKV_KV16
layout(std430, binding = 1) readonly buffer Keys { uvec4 k[]; };
#define VEC 8u
#define UNIT_T uvec4
#define UNIT_LOAD(idx) (k[idx])
#define UNIT_ZERO uvec4(0u)
#else
layout(std430, binding = 1) readonly buffer Keys { vec4 k[]; };
#define VEC 4u
#define UNIT_T vec4
#define UNIT_LOAD(idx) (k[idx])
#define UNIT_ZERO vec4(0.0)
#endif
layout(std430, binding = 2) readonly buffer Queries { vec4 q[]; };
#else
layout(std430, binding = 1) readonly buffer Keys { KV_T k[]; };
layout(std430, binding = 2) readonly buffer Queries { float q[]; };
#define VEC 1u
#define UNIT_T float
#define UNIT_LOAD(idx) LOAD_KV(k, idx)
#define UNIT_ZERO 0.0
#endif
layout(std430, binding = 3) writeonly buffer Logits { float logits[]; };

#define SLOTS 4u      // slots a lane takes per pass: its loads in flight (a vec4 of red)
#define MAX_LANES 32u // lanes of one row at most
#define RED_HEADS 4u  // query heads of one reduction round
// red[invocation][head of the round]: its sums for the SLOTS slots. A row
// of 5 vec4 keeps the writes (a row each) and the sums (a column each) off
// each other's shared-memory banks; 80 bytes per invocation, the budget
// the host sizes workgroups by (backends/bind/bind_settings.c).
#define RED_ROW 5u

shared vec4 red[WG][RED_ROW];

// Q_T: q at one unit; unit_dot: its dot product with a loaded unit.
#if defined(LKV_VEC) && defined(LKV_KV16)
#define Q_T mat2x4
#define Q_ZERO mat2x4(0.0)
Q_T load_q(uint qbase, uint j, uint u)
{
    uint qi = (qbase + j * pc.dim) / 4u + 2u * u;
    return mat2x4(q[qi], q[qi + 1u]);
}
float unit_dot(UNIT_T w, Q_T qv)
{
    vec4 lo = vec4(unpack_kv2(w.x), unpack_kv2(w.y));
    vec4 hi = vec4(unpack_kv2(w.z), unpack_kv2(w.w));
    return dot(qv[0], lo) + dot(qv[1], hi);
}
#elif defined(LKV_VEC)
#define Q_T vec4
#define Q_ZERO vec4(0.0)
Q_T load_q(uint qbase, uint j, uint u)
{
    return q[(qbase + j * pc.dim) / 4u + u];
}
float unit_dot(UNIT_T w, Q_T qv)
{
    return dot(qv, w);
}
#else
#define Q_T float
#define Q_ZERO 0.0
Q_T load_q(uint qbase, uint j, uint u)
{
    return q[qbase + j * pc.dim + u];
}
float unit_dot(UNIT_T w, Q_T qv)
{
    return qv * w;
}
#endif

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint g = gl_WorkGroupID.y / pc.nch, chr = gl_WorkGroupID.y % pc.nch, ch = pc.ch_first + chr;
    uint n = list[ATT_LIST * g + ATT_N], row = list[ATT_LIST * g + ATT_ROW] + chr;
    uint j0 = gl_WorkGroupID.z * QBLOCK;
    uint jn = min(QBLOCK, pc.per - j0);
    uint qbase = list[ATT_LIST * g + ATT_Q] + (ch * pc.per + j0) * pc.dim;
    uint lbase = list[ATT_LIST * g + ATT_LOGITS] + (chr * pc.per + j0) * n;

    uint units = pc.dim / VEC; // the host picks LKV_VEC only for whole units
    uint shift = units <= 1u ? 0u : uint(findMSB(units - 1u) + 1); // log2 of the lanes
    shift = min(shift, uint(findMSB(min(MAX_LANES, WG))));
    uint lanes = 1u << shift;
    uint groups = WG >> shift;      // rows read side by side
    uint lane = tid & (lanes - 1u), grp = tid >> shift;
    uint pass_len = groups * SLOTS; // slots of one pass
    uint block = max(WG, pass_len); // slots of one grid step, whole passes

    // q at the lane's first unit, kept for every slot (a row of more units
    // than lanes reads the rest as it goes).
    Q_T qc[QBLOCK];
    for (uint j = 0u; j < QBLOCK; j++)
        qc[j] = j < jn && lane < units ? load_q(qbase, j, lane) : Q_ZERO;

    // Every bound below is the workgroup's alike, so every invocation meets
    // every barrier.
    for (uint b0 = gl_WorkGroupID.x * block; b0 < n; b0 += gl_NumWorkGroups.x * block)
        for (uint p = b0; p < min(b0 + block, n); p += pass_len) {
            // This lane group's slots p + s * groups + grp: their rows' first
            // units (a slot past n loads nothing and is never written).
            uint base[SLOTS];
            bool live[SLOTS];
            for (uint s = 0u; s < SLOTS; s++) {
                uint i = p + s * groups + grp;
                live[s] = i < n && lane < units;
                base[s] = live[s] ? (pc.kv_skew + (KV_ROW(row) + KV_PLACE(row, i)) * pc.dim) / VEC
                                  : 0u;
            }
            float acc[SLOTS][QBLOCK];
            UNIT_T w[SLOTS];
            for (uint s = 0u; s < SLOTS; s++)
                w[s] = live[s] ? UNIT_LOAD(base[s] + lane) : UNIT_ZERO;
            for (uint j = 0u; j < QBLOCK; j++)
                for (uint s = 0u; s < SLOTS; s++)
                    acc[s][j] = unit_dot(w[s], qc[j]);
            for (uint u = lane + lanes; u < units; u += lanes) {
                for (uint s = 0u; s < SLOTS; s++)
                    w[s] = live[s] ? UNIT_LOAD(base[s] + u) : UNIT_ZERO;
                for (uint j = 0u; j < QBLOCK; j++)
                    if (j < jn) {
                        Q_T qv = load_q(qbase, j, u);
                        for (uint s = 0u; s < SLOTS; s++)
                            acc[s][j] += unit_dot(w[s], qv);
                    }
            }

            // A round per RED_HEADS query heads: each invocation hands over
            // its sums, one vec4 (its SLOTS slots) per head; an invocation per
            // lane group and head sums the group's lanes.
            for (uint jr = 0u; jr < jn; jr += RED_HEADS) {
                for (uint j = 0u; j < QBLOCK; j++)
                    if (j >= jr && j < jr + RED_HEADS)
                        red[tid][j - jr] = vec4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
                barrier();
                for (uint o = tid; o < groups * RED_HEADS; o += WG) {
                    uint og = o / RED_HEADS, j = jr + o % RED_HEADS;
                    if (j < jn) {
                        vec4 sum = vec4(0.0);
                        for (uint l = 0u; l < lanes; l++)
                            sum += red[og * lanes + l][j - jr];
                        for (uint s = 0u; s < SLOTS; s++) {
                            uint i = p + s * groups + og;
                            if (i < n)
                                logits[lbase + j * n + i] = sum[s] * pc.scale;
                        }
                    }
                }
                barrier();
            }
        }
}
