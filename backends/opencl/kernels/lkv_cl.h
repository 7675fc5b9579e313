// What every OpenCL C kernel of lazykv shares. The host prepends this text to
// one kernel file (backends/opencl/kernels/<source>.cl) and builds the pair at run
// time as OpenCL C 1.2, once per pipeline of backends/bind/bind_pipes.h
// (the same list, defines and launch contract as the Vulkan shaders in
// backends/vulkan/shaders/, which these kernels mirror line for line where they can).
//
// The contract with the host (backends/opencl/cl_dispatch.c):
//   - The kernel is named lkv_<source file> (attend_logits.cl defines
//     `LKV_KERNEL lkv_attend_logits(...)`): the prefix keeps names such as
//     select clear of OpenCL's built-in functions.
//   - Parameters: first every binding in the pipeline's binding order, each
//     as LKV_BIND(type, name): a global buffer and the byte offset of the
//     binding's window in it; open it with LKV_OPEN(type, name). Then every
//     push-constant field of the Vulkan shader, in order, as a 4-byte
//     scalar (uint, int or float).
//   - Work-groups are one-dimensional, LKV_WG work-items (a power of two,
//     -DLKV_WG=...); the host launches a grid of gx * gy * gz of them, as
//     vkCmdDispatch would.
//   - Variants come from the same defines as the shaders: LKV_F16 (K and V
//     stored as binary16, read through vload_half: no cl_khr_fp16 needed),
//     LKV_BF16 (K and V stored as bfloat16, read as ushort shifted into the
//     upper half of a float), LKV_VEC (16-byte units), LKV_HALVES, LKV_F64
//     (scores in double, only built where the device has cl_khr_fp64).
//   - Only local memory and barriers: no subgroups, so no width is assumed.
#ifndef LKV_CL_H
#define LKV_CL_H

#ifndef LKV_WG
#error "build with -DLKV_WG=<work-group size>"
#endif

#define LKV_KERNEL __kernel __attribute__((reqd_work_group_size(LKV_WG, 1, 1))) void
#define LKV_BIND(type, name) __global type *name##_bind_, ulong name##_bind_off_
#define LKV_OPEN(type, name) \
    __global type *name = (__global type *)((__global uchar *)name##_bind_ + name##_bind_off_)

#ifdef LKV_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// K/V storage: indices count elements (halves for the 2-byte types) from
// the start of the bound window; LOAD_KV4 and LOAD_KV8 take the index of a
// 4- or 8-element unit and need only element alignment. vload_half converts
// exactly, subnormals included; bf16 is the upper half of an f32, so
// shifting it into place widens it exactly too (as the CPU does).
#if defined(LKV_F16)
#define LKV_KV16
#define KV_T half
#define LOAD_KV(arr, idx) vload_half((idx), (arr))
#define LOAD_KV4(arr, idx4) vload_half4((idx4), (arr))
#define LOAD_KV8(arr, idx8) vload_half8((idx8), (arr))
#elif defined(LKV_BF16)
#define LKV_KV16
#define KV_T ushort
#define LOAD_KV(arr, idx) as_float((uint)(arr)[idx] << 16)
#define LOAD_KV4(arr, idx4) as_float4(convert_uint4(vload4((idx4), (arr))) << 16)
#define LOAD_KV8(arr, idx8) as_float8(convert_uint8(vload8((idx8), (arr))) << 16)
#else
#define KV_T float
#define LOAD_KV(arr, idx) ((arr)[idx])
#define LOAD_KV4(arr, idx4) vload4((idx4), (arr))
#endif

// Where an engine's slot is (core/backend.h, lkv_engine_slots): the first
// word of slot j of a row whose slots count from word w, dense (block_size
// 0) or through row tab of the block table (move_kept.cl, qk_probs.cl).
static uint lkv_engine_slot(__global const uint *table, uint w, uint tab, uint j,
                            uint slot_stride, uint block_stride, uint block_size, uint max_blocks)
{
    if (block_size == 0u)
        return w + j * slot_stride;
    uint b = table[tab * max_blocks + j / block_size];
    return w + b * block_stride + (j % block_size) * slot_stride;
}

// At most this many query heads share one pass over a K or V row (as
// backends/vulkan/shaders/kv_storage.glsl).
#define QBLOCK 8u

// Per-slot metadata windows, as backends/vulkan/shaders/meta_rows.glsl: the kernel takes
// push fields named cap, meta_skew and row_base.
#define META_INDEX(row, slot) (meta_skew + ((row) - row_base) * cap + (slot))

// Hole filling (LKV_HOLES, as backends/vulkan/shaders/holes.glsl): slot i of
// a cache row keeps its K/V at place phys[row][i] of the row, the cache's
// hole map (core/backend.h), which a kernel that reads or writes K/V takes
// as its last binding (HOLES_BIND, opened by HOLES_OPEN). attend's kernels
// also take the map window's skew as their last push field (HOLES_PUSH) and
// find a place with KV_PLACE (row counted from the window's first, as
// theirs are); store's map shares the metadata windows' META_INDEX.
// Without LKV_HOLES every slot is at its own place. A place's K/V row lies
// KV_ROW(row) + place rows into the K/V window: every kernel that reads or
// writes K/V under LKV_HOLES takes the K/V row stride as a push field,
// kv_cap (attend's in HOLES_PUSH after the map's skew, store's and
// redundancy's as KV_CAP_PUSH, their last): the capacity, or 0 in a paged
// cache, whose map holds places of one pool bound whole.
#ifdef LKV_HOLES
#define HOLES_BIND , LKV_BIND(const uint, phys)
#define HOLES_OPEN LKV_OPEN(const uint, phys)
#define HOLES_PUSH , uint phys_skew, uint kv_cap
#define KV_CAP_PUSH , uint kv_cap
#define KV_PLACE(row, i) phys[phys_skew + (row) * cap + (i)]
#define KV_ROW(row) ((row) * kv_cap)
#else
#define HOLES_BIND
#define HOLES_OPEN
#define HOLES_PUSH
#define KV_CAP_PUSH
#define KV_PLACE(row, i) (i)
#define KV_ROW(row) ((row) * cap)
#endif

// Tree reduction of red[j][*] (QBLOCK rows of LKV_WG, a power of two) into
// red[j][0], by max or by sum: attend's split passes. Every work-item of the
// group must call it.
static void lkv_reduce_qblock(__local float *red, uint tid, int take_max)
{
    for (uint s = LKV_WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s)
            for (uint j = 0u; j < QBLOCK; j++) {
                float a = red[j * LKV_WG + tid], b = red[j * LKV_WG + tid + s];
                red[j * LKV_WG + tid] = take_max ? fmax(a, b) : a + b;
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// attend's group list (backends/bind/bind_attend.c writes it; the same
// columns as backends/vulkan/shaders/attend_list.glsl, which says what each
// holds): ATT_LIST words per listed group.
#define ATT_LIST 8u
#define ATT_ROW 0u
#define ATT_N 1u
#define ATT_SPLIT 2u
#define ATT_SPLITS 3u
#define ATT_LOGITS 4u
#define ATT_PARTS 5u
#define ATT_Q 6u
#define ATT_T 7u

// One slot's observe update from its probability p, shared by observe.cl
// and attend_probs.cl (which fuses the observe into the pass that computes
// p), so the two ways leave the same bits: integer updates and one f32 add
// or assignment, as on the CPU. x is the slot's index in the state
// windows, t the row's step; last and mri are lazy's state_a and state_b.
static void lkv_observe_slot(uint kind, float p, uint x, int t, float alpha, __global int *last,
                             __global int *mri, __global float *state)
{
    if (kind == LKV_OBSERVE_RECURRENCE) {
        if (p >= alpha) {
            int gap = t - last[x];
            if (gap > mri[x])
                mri[x] = gap;
            last[x] = t;
        }
    } else if (kind == LKV_OBSERVE_ACCUMULATE) {
        state[x] = state[x] + p;
    } else {
        state[x] = p;
    }
}

// attend's split passes, step 1: each of the jn query heads' largest logit
// over slots s0 .. s1 into m[], the same in every work-item.
static void lkv_split_max(__global const float *logits, uint qh0, uint n, uint s0, uint s1,
                          uint jn, __local float *red, uint tid, float *m)
{
    for (uint j = 0u; j < QBLOCK; j++)
        m[j] = as_float(0xff800000u); // -inf
    for (uint i = s0 + tid; i < s1; i += LKV_WG)
        for (uint j = 0u; j < jn; j++)
            m[j] = fmax(m[j], logits[(qh0 + j) * n + i]);
    for (uint j = 0u; j < QBLOCK; j++)
        red[j * LKV_WG + tid] = m[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    lkv_reduce_qblock(red, tid, 1);
    for (uint j = 0u; j < QBLOCK; j++)
        m[j] = red[j * LKV_WG];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// attend's split passes, step 2, for one chunk of slots: slot i's weight
// exp(logit - max) for each of the jn query heads into weight[j][tid],
// summed into l[]. A split whose logits are all -inf weighs nothing (the
// CPU's 0), not exp(-inf - -inf) = NaN.
static void lkv_split_weights(__global const float *logits, uint qh0, uint n, uint i, uint s1,
                              uint jn, const float *m, __local float *weight, uint tid, float *l)
{
    for (uint j = 0u; j < QBLOCK; j++) {
        bool live = i < s1 && j < jn && m[j] != as_float(0xff800000u);
        float w = live ? exp(logits[(qh0 + j) * n + i] - m[j]) : 0.0f;
        weight[j * LKV_WG + tid] = w;
        l[j] += w;
    }
}

// compact: the first of a row's count kept slots that moves (kept[j] != j);
// kept[j] - j never decreases, so a binary search finds it.
static uint lkv_first_moved(__global const uint *kept, uint base, uint count)
{
    uint lo = 0u, hi = count;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (kept[base + mid] == mid)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}


// The work-group's max (take_max) or sum of v, returned to every work-item:
// a tree over `red` (LKV_WG floats of local memory; LKV_WG is a power of
// two). Call it from uniform control flow: PoCL also miscompiles barriers
// in an if/else of a kernel's row loop, so keep such calls out of branches.
static float lkv_group_reduce(float v, int take_max, __local float *red)
{
    uint t = (uint)get_local_id(0);
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint half_ = LKV_WG / 2u; half_ > 0u; half_ /= 2u) {
        if (t < half_)
            red[t] = take_max ? fmax(red[t], red[t + half_]) : red[t] + red[t + half_];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float out_ = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); // red is rewritten by the next call
    return out_;
}

#endif // LKV_CL_H
