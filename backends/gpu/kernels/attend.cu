// attend (backends/cpu/cpu_attend.c): per group g (cache rows row0[g] ..
// row0[g] + heads - 1, each with n = group_n[g] valid slots) and query head
// qh (cache head qh / per):
//   out[g][qh]  = softmax(scale * q[g][qh] . K) . V
//   probs[row]  = each slot's probability, combined over the `per` query heads
//                 of the row's cache head by max or mean.
// Flash-decoding in one launch, or two (backends/gpu/gpu_attend.c plans them):
//
//   lkv_attend_split_{f32,f16,bf16}[_vec]_g{1,2,4,8}  grid x = the splits of every
//       group of the launch (a split is `split_len` consecutive slots of one
//       group), y = cache heads * query-head blocks; block LKV_ATT_BLOCK. A
//       block takes one split of one cache row and a block of up to QB (1,
//       2, 4 or 8, the kernel's _g suffix) query heads, so each K and V row
//       is read once for all of them:
//       pass over K: a sub-group of s lanes (the row's chunks rounded up to a
//         power of two, at most a warp) per slot, lane i reading chunks i,
//         i + s, ... of the row, so a warp reads consecutive rows end to end;
//         the dot products are summed across the sub-group by a shuffle
//         reduce-scatter and stored as logits;
//       pass over V: thread = (lane, column); a column is one chunk of the
//         row and lanes take alternate slots; per query head the partial
//         m = max logit, l = sum exp(logit - m), o[e] = sum exp(logit - m)
//         V[e], summed over lanes by shuffles, then over warps in shared
//         memory.
//       A chunk is 16 bytes (float4, or uint4 = 8 halves or 8 bf16) in the
//       _vec variants, which the host picks when head_dim is a multiple of 4
//       (f32) or 8 (f16, bf16); one element in the others. Any head_dim up to
//       LKV_ATT_DIM_MAX (lkv_kernel_abi.h, 1024).
//       The logits of a split of at most LKV_ATT_TILE / QB slots stay in
//       shared memory between the passes (longer splits: global memory).
//       Launched cooperatively (flags LKV_ATT_F_COOP: every block resident,
//       which the host asks for when the grid is one wave), the split blocks
//       of a unit wait for each other (lkv_grid_wait on its count in
//       `done`) and share the combine (lkv_att_combine); with
//       LKV_ATT_F_PROBS each then writes its own slots' probabilities from
//       the weights its tile still holds, or the logits it wrote
//       (lkv_att_fused_probs): one launch.
//       Otherwise the last split block of a (group, cache head, query-head
//       block) to finish (a count per such unit in `done`, atomically
//       raised after a fence) merges the partials of its heads into out and
//       the log-sum-exp (lkv_att_combine). Either way the count is back at 0
//       when the launch ends. Every group has a split, an empty group one
//       with no slots.
//   lkv_attend_probs  (when the split blocks did not write them) grid x =
//       slot blocks (grid-stride), y = cache heads, z = groups; block
//       LKV_ATT_BLOCK. exp(logit - lse) combined over the group.
// Wherever a probability is computed, obs_kind >= 0 (an lkv_observe_kind;
// -1: none) also applies the observe op's update of that slot at the
// group's step obs_t[g] (lkv_att_sink), and probs may be null: the
// probabilities then never reach global memory.
// In a cache that fills holes (core/backend.h's phys) the split kernels
// read slot i's K and V rows at place phys[row][i] of the row (of the pool
// when paged: kv_cap, the K/V row stride in slots, is then 0) instead of at
// i; everything else (logits, probabilities, partials) stays in slot order.
// phys is null otherwise.
// Nothing assumes a warp width: sub-groups, shuffle masks and the warp count
// come from lkv_warp() (32 or 64), and every lane of a warp reaches every
// shuffle.
//
// Where the arithmetic differs from the CPU oracle (double, two passes per
// query head, exp(logit - max) / sum):
//  - K/V loads: none; f16 and bf16 widen to f32 exactly, as they do there;
//  - logits: f32 products; each lane sums its own chunks in dimension order,
//    then the lanes' sums are added in a tree (reduce-scatter, then
//    butterfly); the product is scaled in f32;
//  - softmax: f32, exponentials against the split's maximum, rescaled by
//    exp(m_split - M) in the combine; sums per thread in slot order, then
//    across lanes and warps in tree order;
//  - probabilities: exp(logit - lse) in f32 rather than a division by the
//    sum (in the split blocks: exp(logit - m) exp(m - lse), m the split's
//    maximum), and the mean is an f32 sum divided by per;
//  - the cooperative combine sums each output over the splits in P
//    interleaved shares, then the shares in order.
//
// Scratch layouts (the host sizes them): for group g of a launch, with
// q_heads = heads * per, logits at slot_off[g] * q_heads: [q_heads][n];
// partials at split_off[g] * q_heads * (dim + 2): [q_heads][splits of g]
// [m, l, o[0..dim)]; lse [groups][q_heads]. slot_off and split_off are
// prefix sums over the launch's groups (one entry more than groups). Offsets
// are 64-bit wherever rows * capacity * head_dim can pass 2^32.
#include "lkv_gpu.h"
#include "observe_slot.h"

// LKV_ATT_QBLOCK, LKV_ATT_COLS, the chunk widths and LKV_ATT_TILE are in
// lkv_kernel_abi.h: the host plans launches by them.
#define LKV_ATT_WARPS (LKV_BLOCK_MAX / 32)   // most warps in a block (warp 32)
// K or V rows a thread has in flight in each pass: every 16-byte chunk
// kernel keeps 4 loads in flight (the kernel report checks it in the SASS
// and the gfx90a ISA: scripts/kernel_report.py); the element kernels, whose
// loads are 2 or 4 bytes, 2. A round's loads are all issued before any is
// widened or used (lkv_att_chunk), or the compiler consumes each load at
// the next instruction and the next load waits for it.
#define LKV_ATT_INFLIGHT(vec) ((vec) > 1 ? 4 : 2)
// Blocks of at least this many query heads read q from shared memory in
// the pass over K (lkv_att_logits), fewer keep it in registers.
#define LKV_ATT_QSHARED 4

typedef unsigned long long lkv_att_u64;

// A stored bf16 element. f16 is stored as plain unsigned short; bf16 has its
// own type so the loads below pick the bf16 widening by overload, and the
// kernels share every other line.
struct lkv_att_bf16 {
    unsigned short bits;
};

// Smallest power of two >= x, at most cap (cap a power of two).
LKV_DEV int lkv_att_pow2(int x, int cap)
{
    int p = 1;
    while (p < x && p < cap)
        p <<= 1;
    return p;
}

// Exact widening of one stored 16-bit K/V element, picked by its type.
LKV_DEV float lkv_att_widen(unsigned short h)
{
    return lkv_half_to_float(h);
}

LKV_DEV float lkv_att_widen(lkv_att_bf16 b)
{
    return lkv_bf16_to_float(b.bits);
}

// Loads of one chunk of q (f32 whatever K/V's storage) into floats.
LKV_DEV void lkv_att_load(const float *p, float (&x)[1])
{
    x[0] = *p;
}

LKV_DEV void lkv_att_load(const float *p, float (&x)[4])
{
    float4 f = *reinterpret_cast<const float4 *>(p);
    x[0] = f.x;
    x[1] = f.y;
    x[2] = f.z;
    x[3] = f.w;
}

LKV_DEV void lkv_att_load(const float *p, float (&x)[8])
{
    float4 a = *reinterpret_cast<const float4 *>(p);
    float4 b = *reinterpret_cast<const float4 *>(p + 4);
    x[0] = a.x;
    x[1] = a.y;
    x[2] = a.z;
    x[3] = a.w;
    x[4] = b.x;
    x[5] = b.y;
    x[6] = b.z;
    x[7] = b.w;
}

// Two 16-bit K/V elements of one 32-bit word. GPUs are little-endian: the
// element 2i sits in the low 16 bits of word i.
template <typename KV16>
LKV_DEV void lkv_att_unpack2(unsigned w, float *x)
{
    x[0] = lkv_att_widen(KV16{(unsigned short)(w & 0xffffu)});
    x[1] = lkv_att_widen(KV16{(unsigned short)(w >> 16)});
}

// One chunk of a K/V row as stored (KV: float, unsigned short for f16,
// lkv_att_bf16), fetched whole and widened later: lkv_att_fetch only loads,
// so a thread issues the loads of all its slots of a round before the
// first lkv_att_widen_chunk, and they are in flight together. One element
// (VEC 1), a float4 (f32, VEC 4) or a uint4 of eight 16-bit values.
template <typename KV, int VEC> struct lkv_att_chunk {
    KV raw;
};

template <> struct lkv_att_chunk<float, LKV_ATT_F32_VEC> {
    float4 raw;
};

template <typename KV> struct lkv_att_chunk<KV, LKV_ATT_KV16_VEC> {
    uint4 raw;
};

template <typename KV> LKV_DEV void lkv_att_fetch(lkv_att_chunk<KV, 1> &c, const KV *p)
{
    c.raw = *p;
}

LKV_DEV void lkv_att_fetch(lkv_att_chunk<float, LKV_ATT_F32_VEC> &c, const float *p)
{
    c.raw = *reinterpret_cast<const float4 *>(p);
}

template <typename KV>
LKV_DEV void lkv_att_fetch(lkv_att_chunk<KV, LKV_ATT_KV16_VEC> &c, const KV *p)
{
    c.raw = *reinterpret_cast<const uint4 *>(p);
}

LKV_DEV void lkv_att_widen_chunk(const lkv_att_chunk<float, 1> &c, float (&x)[1])
{
    x[0] = c.raw;
}

template <typename KV16>
LKV_DEV void lkv_att_widen_chunk(const lkv_att_chunk<KV16, 1> &c, float (&x)[1])
{
    x[0] = lkv_att_widen(c.raw);
}

LKV_DEV void lkv_att_widen_chunk(const lkv_att_chunk<float, LKV_ATT_F32_VEC> &c,
                                 float (&x)[LKV_ATT_F32_VEC])
{
    x[0] = c.raw.x;
    x[1] = c.raw.y;
    x[2] = c.raw.z;
    x[3] = c.raw.w;
}

template <typename KV16>
LKV_DEV void lkv_att_widen_chunk(const lkv_att_chunk<KV16, LKV_ATT_KV16_VEC> &c,
                                 float (&x)[LKV_ATT_KV16_VEC])
{
    lkv_att_unpack2<KV16>(c.raw.x, x);
    lkv_att_unpack2<KV16>(c.raw.y, x + 2);
    lkv_att_unpack2<KV16>(c.raw.z, x + 4);
    lkv_att_unpack2<KV16>(c.raw.w, x + 6);
}

// Reduces v[0..NV) over the whole block, max or sum; every thread gets the
// result. Warps reduce by butterfly, then warp results are combined in warp
// order through `red`. Every thread of the block must call it.
template <int NV>
LKV_DEV void lkv_att_block_reduce(float (&v)[NV], bool take_max, float (*red)[LKV_ATT_WARPS])
{
    int w = lkv_warp();
    for (int mask = w / 2; mask > 0; mask >>= 1)
        for (int j = 0; j < NV; j++) {
            float o = lkv_shfl_xor(v[j], mask);
            v[j] = take_max ? fmaxf(v[j], o) : v[j] + o;
        }
    int warp = (int)threadIdx.x / w, warps = (int)blockDim.x / w;
    if ((int)threadIdx.x % w == 0)
        for (int j = 0; j < NV; j++)
            red[j][warp] = v[j];
    __syncthreads();
    for (int j = 0; j < NV; j++) {
        float r = red[j][0];
        for (int k = 1; k < warps; k++)
            r = take_max ? fmaxf(r, red[j][k]) : r + red[j][k];
        v[j] = r;
    }
    __syncthreads(); // red may be reused at once
}

// One round of the reduce-scatter below: values [0, 2h) become [0, h), the
// half this lane keeps (upper when its `mask` bit is set) plus the partner's
// copy of the same half. Indices stay compile-time constants. A block of QB
// heads never halves more than QB values, so the rounds it cannot need are
// empty (the specialisation below) rather than code indexing past acc.
template <int QB, int H, bool NEEDED = (QB >= 2 * H)> struct lkv_att_halver {
    LKV_DEV void run(float (&acc)[QB], int mask, bool upper)
    {
        for (int x = 0; x < H; x++) {
            // Values first: `upper ? acc[x] : acc[x + H]` is an lvalue in C++, a
            // select between two addresses that puts acc in local memory.
            float lo = acc[x], hi = acc[x + H];
            float send = upper ? lo : hi;
            float keep = upper ? hi : lo;
            acc[x] = keep + lkv_shfl_xor(send, mask);
        }
    }
};

template <int QB, int H> struct lkv_att_halver<QB, H, false> {
    LKV_DEV void run(float (&)[QB], int, bool) {}
};

// Sums the first `count` (1, 2, 4 or 8) values of acc over the s lanes of a
// sub-group (s a power of two, the sub-groups aligned in the warp). Halving
// the values each round costs count - 1 shuffles instead of count per round;
// afterwards this lane holds the sums of values [*first, *first + *held) in
// acc[0..*held), and lanes differing only in the bits of *dup hold the same
// ones. count and s must be uniform over the warp.
template <int QB>
LKV_DEV void lkv_att_reduce_scatter(float (&acc)[QB], int count, int s, int sl,
                                    int *first, int *held, int *dup)
{
    int h = count, f = 0, mask = s >> 1;
    if (QB >= 8 && h == 8 && mask > 0) {
        bool up = (sl & mask) != 0;
        lkv_att_halver<QB, 4>::run(acc, mask, up);
        f += up ? 4 : 0;
        h = 4;
        mask >>= 1;
    }
    if (QB >= 4 && h == 4 && mask > 0) {
        bool up = (sl & mask) != 0;
        lkv_att_halver<QB, 2>::run(acc, mask, up);
        f += up ? 2 : 0;
        h = 2;
        mask >>= 1;
    }
    if (QB >= 2 && h == 2 && mask > 0) {
        bool up = (sl & mask) != 0;
        lkv_att_halver<QB, 1>::run(acc, mask, up);
        f += up ? 1 : 0;
        h = 1;
        mask >>= 1;
    }
    *dup = mask > 0 ? 2 * mask - 1 : 0;
    for (; mask > 0; mask >>= 1)
        acc[0] += lkv_shfl_xor(acc[0], mask);
    *first = f;
    *held = h;
}

// Moves head x + 1's values to x (see the end of lkv_att_split).
template <int QB, int E>
LKV_DEV void lkv_att_shift(float (&acc)[QB][E], float (&m)[QB],
                           float (&l)[QB])
{
    for (int x = 0; x + 1 < QB; x++) {
        for (int e = 0; e < E; e++)
            acc[x][e] = acc[x + 1][e];
        m[x] = m[x + 1];
        l[x] = l[x + 1];
    }
}

// Where a block's split lies: the group (last g with split_off[g] <= x; an
// empty group has no split, so this skips it) and the split within it.
LKV_DEV int lkv_att_find_group(const int *split_off, int n_groups, int x)
{
    int lo = 0, hi = n_groups - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (split_off[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// The lane's chunk of q for each head of the block (zeros past jn or the row).
template <int QB, int VEC>
LKV_DEV void lkv_att_load_q(const float *qh, int dim, int jn, int sl, int nch,
                            float (&qreg)[QB][VEC])
{
    for (int j = 0; j < QB; j++) {
        if (j < jn && sl < nch)
            lkv_att_load(qh + (lkv_att_u64)j * dim + sl * VEC, qreg[j]);
        else
            for (int e = 0; e < VEC; e++)
                qreg[j][e] = 0.0f;
    }
}

// Where slot i's K/V row lies in its cache row: place prow[i] in a cache
// that fills holes (core/backend.h's phys), slot i itself otherwise.
LKV_DEV lkv_att_u64 lkv_att_place(const int *prow, int i)
{
    return (lkv_att_u64)(prow ? prow[i] : i);
}

// The places of KU slots (i0 + u * step) in their row: slots past s1 take
// slot s0's (always in the split), so that every load of a round can be
// issued unconditionally. All are read before any K/V load is issued: on
// AMD a wait for one hole-map read is a wait for every load before it.
// prow: the row's hole map, or null.
template <int KU>
LKV_DEV void lkv_att_places(const int *prow, int i0, int step, int s0, int s1,
                            unsigned (&at)[KU])
{
    for (int u = 0; u < KU; u++) {
        int i = i0 + u * step;
        at[u] = (unsigned)lkv_att_place(prow, i < s1 ? i : s0);
    }
}

// Where chunk c of the row at place `at` lies (chunk 0 for chunks past the
// row, which read something and add zeros).
LKV_DEV lkv_att_u64 lkv_att_chunk_at(unsigned at, int c, int nch, int dim, int vec)
{
    return (lkv_att_u64)at * dim + (c < nch ? c * vec : 0);
}

// The per-slot end of the pass over K: acc holds this lane's part of slot
// i's dot products with each head's q; sums them over the sub-group (see
// lkv_att_reduce_scatter), stores the logits of the heads this lane holds
// in the tile (head h's at tl[h * T + i - c0]) and, where glg is not null,
// at glg[h * n + i] for the probabilities, and folds them into its maxima
// mloc.
template <int QB>
LKV_DEV void lkv_att_emit(float (&acc)[QB], int i, int c0, int c1, int count, int s, int sl,
                          int jn, float scale, float *tl, int T, float *glg, int n, int *first,
                          int *held, float (&mloc)[QB])
{
    int dup;
    lkv_att_reduce_scatter<QB>(acc, count, s, sl, first, held, &dup);
    if (i < c1 && (sl & dup) == 0)
        for (int x = 0; x < QB; x++)
            if (x < *held && *first + x < jn) {
                float logit = acc[x] * scale;
                tl[(lkv_att_u64)(*first + x) * T + (i - c0)] = logit;
                if (glg)
                    glg[(lkv_att_u64)(*first + x) * n + i] = logit;
                mloc[x] = fmaxf(mloc[x], logit);
            }
}

// Pass over K: logits of the tile's slots [c0, c1) for query heads j0 ..
// j0 + jn - 1, stored to tl[j * T + i - c0] (and glg[j * n + i] where glg
// is not null); returns each head's maximum over the tile in m (every
// thread), whose barriers also publish the tile to the block.
// A sub-group of s lanes takes one slot: lane sl reads chunks sl, sl + s, ...
// of the row, so a warp reads consecutive rows end to end. Each sub-group
// takes KU slots a round and issues their loads together, so KU are in
// flight. Rows of at most one chunk a lane keep the lane's q chunk in
// registers and finish each slot as soon as it is widened (a slot's
// partial dot products are the only ones live); longer rows (more chunks
// than a warp has lanes) read q from memory and sum every chunk of the
// round's KU slots before finishing them.
template <int QB, typename KV, int VEC>
LKV_DEV void lkv_att_logits(const KV *krow, const int *prow, const float *qh, const float *qs,
                            const volatile int *qz, float *tl, int T, float *glg, int n, int c0,
                            int c1, int dim, int jn, float scale, float (&m)[QB],
                            float (*red)[LKV_ATT_WARPS])
{
    int tid = (int)threadIdx.x, bs = (int)blockDim.x;
    int nch = dim / VEC;
    int s = lkv_att_pow2(nch, lkv_warp());
    int sl = tid % s, step = bs / s;
    // jn <= QB: the count is at most QB, so the halvings QB cannot need
    // fold away with the array entries they would touch
    int count = jn <= 1 || QB == 1 ? 1 : jn <= 2 || QB == 2 ? 2 : jn <= 4 || QB == 4 ? 4 : 8;
    const int KU = LKV_ATT_INFLIGHT(VEC);
    float mloc[QB];
    for (int x = 0; x < QB; x++)
        mloc[x] = -INFINITY;
    int first = 0, held = 0;
    // The loop bounds are uniform over the block, so every lane reaches the
    // shuffles; lanes past c1 or the row add zeros.
    if (nch <= s && (QB < LKV_ATT_QSHARED || qs)) {
        // q: up to 2 heads' chunks in registers for the pass; 4 or 8 heads'
        // would take QB * VEC of them, so those are read from the block's
        // copy in shared memory (lanes of a sub-group read consecutive
        // chunks, every sub-group the same ones). That copy's offset is
        // read anew each round (qz, 0, through a volatile read): loads of a
        // fixed address would be hoisted out of the loop, back into
        // registers.
        const int QR = QB < LKV_ATT_QSHARED ? QB : 1;
        float qreg[QR][VEC];
        if (QB < LKV_ATT_QSHARED)
            lkv_att_load_q<QR, VEC>(qh, dim, jn, sl, nch, qreg);
        for (int base = c0 + tid / s; base - tid / s < c1; base += KU * step) {
            int qo = (sl < nch ? sl : 0) * VEC + *qz;
            unsigned at[KU];
            lkv_att_places<KU>(prow, base, step, c0, c1, at);
            lkv_att_chunk<KV, VEC> kc[KU];
            for (int u = 0; u < KU; u++)
                lkv_att_fetch(kc[u], krow + lkv_att_chunk_at(at[u], sl, nch, dim, VEC));
            for (int u = 0; u < KU; u++) {
                int i = base + u * step;
                float kx[VEC], acc[QB];
                lkv_att_widen_chunk(kc[u], kx);
                for (int j = 0; j < QB; j++) {
                    float qx[VEC];
                    if (QB >= LKV_ATT_QSHARED)
                        lkv_att_load(qs + j * dim + qo, qx);
                    else
                        for (int e = 0; e < VEC; e++)
                            qx[e] = qreg[j % QR][e];
                    acc[j] = 0.0f;
                    for (int e = 0; e < VEC; e++)
                        acc[j] += qx[e] * kx[e];
                    acc[j] = i < c1 && sl < nch ? acc[j] : 0.0f;
                }
                lkv_att_emit<QB>(acc, i, c0, c1, count, s, sl, jn, scale, tl, T, glg, n, &first,
                                 &held, mloc);
            }
        }
    } else {
        for (int base = c0 + tid / s; base - tid / s < c1; base += KU * step) {
            unsigned at[KU];
            lkv_att_places<KU>(prow, base, step, c0, c1, at);
            float acc[KU][QB];
            for (int u = 0; u < KU; u++)
                for (int j = 0; j < QB; j++)
                    acc[u][j] = 0.0f;
            for (int c = sl; c < nch; c += s) {
                lkv_att_chunk<KV, VEC> kc[KU];
                for (int u = 0; u < KU; u++)
                    lkv_att_fetch(kc[u], krow + lkv_att_chunk_at(at[u], c, nch, dim, VEC));
                float kx[KU][VEC];
                for (int u = 0; u < KU; u++)
                    lkv_att_widen_chunk(kc[u], kx[u]);
                for (int j = 0; j < QB; j++)
                    if (j < jn) {
                        float qx[VEC];
                        lkv_att_load(qh + (lkv_att_u64)j * dim + c * VEC, qx);
                        for (int u = 0; u < KU; u++)
                            for (int e = 0; e < VEC; e++)
                                acc[u][j] += qx[e] * kx[u][e];
                    }
            }
            for (int u = 0; u < KU; u++)
                lkv_att_emit<QB>(acc[u], base + u * step, c0, c1, count, s, sl, jn, scale, tl, T,
                                 glg, n, &first, &held, mloc);
        }
    }
    // The lane's maxima are of heads first + x; spread them back by head.
    for (int j = 0; j < QB; j++) {
        m[j] = -INFINITY;
        for (int x = 0; x < QB; x++)
            if (x < held && first + x == j)
                m[j] = mloc[x];
    }
    lkv_att_block_reduce(m, true, red);
}

// Pass over V, U slots of a tile at once (c + t, c + t + lanes, ...; all
// in the tile, which starts at slot c): acc[j] += the slot's weight for
// head j (w[j * T + t + ...]) times the thread's columns of its V row. The
// U slots' loads are issued before the first is widened, so they are in
// flight together; columns past the row read the row's first chunk, so
// that no load is conditional.
// prow: the row's hole map, or null.
template <int QB, int U, typename KV, int VEC, int R>
LKV_DEV void lkv_att_accumulate(const KV *vrow, const int *prow, int c, int dim, int t,
                                int lanes, int col, int p, int cols, int nch, const float *w,
                                int T, float (&acc)[QB][VEC * R])
{
    unsigned at[U];
    lkv_att_places<U>(prow, c + t, lanes, c, c + t + U * lanes, at);
    lkv_att_chunk<KV, VEC> vc[U][R];
    for (int u = 0; u < U; u++)
        for (int r = 0; r < R; r++)
            lkv_att_fetch(vc[u][r], vrow + lkv_att_chunk_at(at[u], r < cols ? col + r * p : nch,
                                                            nch, dim, VEC));
    // Every product is added, even those of columns past the row (their
    // sums are never written: lkv_att_write_partials) and of heads past jn
    // (weight 0): a load whose use is conditional is one the compiler
    // moves under the condition, out of the others' flight.
    for (int u = 0; u < U; u++)
        for (int r = 0; r < R; r++) {
            float vx[VEC];
            lkv_att_widen_chunk(vc[u][r], vx);
            for (int j = 0; j < QB; j++) {
                float wt = w[j * T + t + u * lanes];
                for (int e = 0; e < VEC; e++)
                    acc[j][r * VEC + e] += wt * vx[e];
            }
        }
}

// The weights of the tile of tn slots from slot c0, between the passes:
// exp(logit - m[j]) into tl[j * T + i - c0] (in place where the logits are
// the tile's own, src == tl; else from the logits in global memory, src[j
// * n + i]), their sum added to this thread's l[j]. Rows of heads past jn
// are set to 0. A split whose logits are all -inf adds nothing: where
// another split of the group has a finite logit, the CPU's exp(-inf - max)
// is 0 too; where none has, the combine writes the CPU's NaN itself. Never
// exp(-inf - -inf) here. The weights are the block's after a barrier.
template <int QB>
LKV_DEV void lkv_att_weights(float *tl, int T, const float *src, int n, int c0, int tn, int jn,
                             const float (&m)[QB], float (&l)[QB])
{
    int tid = (int)threadIdx.x, bs = (int)blockDim.x;
    bool own = src == tl;
    for (int i = tid; i < tn; i += bs)
        for (int j = 0; j < QB; j++) { // heads innermost: unrolled, m and l stay registers
            float wt = 0.0f;
            if (j < jn && m[j] != -INFINITY)
                wt = expf((own ? tl[j * T + i] : src[(lkv_att_u64)j * n + c0 + i]) - m[j]);
            tl[j * T + i] = wt;
            l[j] += wt;
        }
}

// Pass over V of a tile of tn slots from slot c, whose weights are w:
// thread = (lane, column); a column is VEC consecutive elements (plus
// columns col + p, ... on the scalar path), and lanes take alternate slots.
// Adds this thread's share of o[j] = sum weight V to acc (summed over the
// block by lkv_att_write_partials).
template <int QB, typename KV, int VEC, int R>
LKV_DEV void lkv_att_values(const KV *vrow, const int *prow, const float *w, int T, int c,
                            int tn, int dim, float (&acc)[QB][VEC * R])
{
    int tid = (int)threadIdx.x, bs = (int)blockDim.x;
    int nch = dim / VEC;
    int p = lkv_att_pow2(nch, bs);
    int cols = (nch + p - 1) / p; // <= R (the host checks head_dim)
    int lanes = bs / p, lane = tid / p, col = tid % p;
    const int U = LKV_ATT_INFLIGHT(VEC);
    int t = lane;
    for (; t + (U - 1) * lanes < tn; t += U * lanes)
        lkv_att_accumulate<QB, U, KV, VEC, R>(vrow, prow, c, dim, t, lanes, col, p, cols, nch, w,
                                              T, acc);
    for (; t < tn; t += lanes)
        lkv_att_accumulate<QB, 1, KV, VEC, R>(vrow, prow, c, dim, t, lanes, col, p, cols, nch, w,
                                              T, acc);
}

// Sums acc over the lanes of each column and writes head j's partials m, l,
// o[0..dim) at element (pbase + j * nsp) * (dim + 2) of part. Every thread
// of the block must call it; m, l and acc are used up (shifted down head by
// head).
template <int QB, int VEC, int R>
LKV_DEV void lkv_att_write_partials(float *part, lkv_att_u64 pbase, int nsp, int dim, int jn,
                                    float (&acc)[QB][VEC * R],
                                    float (&m)[QB], float (&l)[QB],
                                    float *gather)
{
    int tid = (int)threadIdx.x, bs = (int)blockDim.x, w = lkv_warp();
    int nch = dim / VEC;
    int p = lkv_att_pow2(nch, bs);
    int cols = (nch + p - 1) / p, col = tid % p;
    // By butterfly within a warp (lanes of a column are p apart), then the
    // warps' copies through shared memory.
    for (int mask = p; mask < w; mask <<= 1)
        for (int j = 0; j < QB; j++)
            if (j < jn)
                for (int e = 0; e < VEC * R; e++)
                    acc[j][e] += lkv_shfl_xor(acc[j][e], mask);
    int span = p > w ? p : w;           // threads per independent copy
    int copies = bs / span, copy = tid / span;
    bool rep = tid % span < p;          // holds its copy's sums
    int stride = copies * p;            // gather: [element][copy][column]
    // Head j is always at index 0 (shifted down after each), so the arrays
    // stay in registers: the loop holds barriers and is not unrolled, and an
    // index that varies at run time would put them in local memory.
    for (int j = 0; j < jn; j++) {
        if (rep)
            for (int e = 0; e < VEC * R; e++)
                gather[e * stride + copy * p + col] = acc[0][e];
        __syncthreads();
        float *out = part + (pbase + (lkv_att_u64)j * nsp) * (lkv_att_u64)(dim + 2);
        if (tid < p)
            for (int r = 0; r < cols; r++)
                for (int e = 0; e < VEC; e++) {
                    int cc = tid + r * p;
                    float sum = 0.0f;
                    for (int cp = 0; cp < copies; cp++)
                        sum += gather[(r * VEC + e) * stride + cp * p + tid];
                    if (cc < nch)
                        out[2 + cc * VEC + e] = sum;
                }
        if (tid == 0) {
            out[0] = m[0];
            out[1] = l[0];
        }
        lkv_att_shift<QB>(acc, m, l);
        __syncthreads();
    }
}

// The quiet NaN the CPU's exp(-inf - -inf) gives.
LKV_DEV float lkv_att_nan(void)
{
    return __uint_as_float(0x7fc00000u);
}

// Per head j < jn of the block (query head qh0 + j of group g): M = max_s
// m_s and L = sum_s l_s exp(m_s - M) over the group's nsp splits, into
// big[j] and total[j] of every thread. Partials read volatile (other blocks
// wrote them in this launch).
template <int QB>
LKV_DEV void lkv_att_totals(const float *part, lkv_att_u64 pbase0, int nsp, int dim, int jn,
                            float (&big)[QB], float (&total)[QB], float (*red)[LKV_ATT_WARPS])
{
    int tid = (int)threadIdx.x, bs = (int)blockDim.x;
    lkv_att_u64 stride = (lkv_att_u64)dim + 2;
    const volatile float *pp = part + pbase0 * stride;
    for (int j = 0; j < QB; j++) {
        big[j] = -INFINITY;
        total[j] = 0.0f;
    }
    for (int s = tid; s < nsp; s += bs)
        for (int j = 0; j < QB; j++)
            if (j < jn)
                big[j] = fmaxf(big[j], pp[((lkv_att_u64)j * nsp + s) * stride]);
    lkv_att_block_reduce(big, true, red);
    for (int s = tid; s < nsp; s += bs)
        for (int j = 0; j < QB; j++)
            if (j < jn) {
                const volatile float *ps = pp + ((lkv_att_u64)j * nsp + s) * stride;
                float sc = big[j] == -INFINITY ? 0.0f : expf(ps[0] - big[j]);
                total[j] += ps[1] * sc;
            }
    lkv_att_block_reduce(total, false, red);
}

// The combine of the group's splits for the block's jn heads: M = max_s
// m_s, L = sum_s l_s exp(m_s - M), out = sum_s o_s exp(m_s - M) / L and lse
// = M + log L. This block writes the elements x = x0, x0 + dx, ... of the
// heads' outputs [jn][dim] (all of them, x0 = 0 and dx = 1, in the last
// split block to finish; a share, x0 = its split and dx = the splits, in
// each split block of a cooperative launch) and, where x0 = 0, the
// log-sum-exps. Two cases as the CPU has them: with no valid slot (n = 0:
// one empty split, m = -inf, l = 0) out is 0 (its empty sum); with slots
// but no logit above -inf (M = -inf: every logit -inf or NaN) out is the
// NaN of its exp(-inf - -inf). lse is -inf in both, so the probabilities
// of such a group are NaN, as on the CPU. `out` is written only when
// has_out. The whole block calls it, after every split's partials are
// written; they are read volatile (other blocks wrote them in this launch,
// and a cached copy in this multiprocessor's L1 would be stale). hm, hl: QB
// floats of shared memory, the heads' M and L for the caller; sums:
// blockDim floats of shared memory.
template <int QB>
LKV_DEV void lkv_att_combine(const float *part, float *out, float *lse, lkv_att_u64 pbase0,
                             lkv_att_u64 o0, int nsp, int x0, int dx, int dim, int jn, int n,
                             int has_out, float *hm, float *hl, float (*red)[LKV_ATT_WARPS],
                             float *sums)
{
    float big[QB], total[QB];
    lkv_att_totals<QB>(part, pbase0, nsp, dim, jn, big, total, red);
    int tid = (int)threadIdx.x, bs = (int)blockDim.x;
    if (tid == 0)
        for (int j = 0; j < QB; j++) {
            hm[j] = big[j];
            hl[j] = total[j];
            if (x0 == 0 && j < jn)
                lse[o0 / (lkv_att_u64)dim + j] = big[j] + logf(total[j]);
        }
    __syncthreads();
    lkv_att_u64 stride = (lkv_att_u64)dim + 2;
    const volatile float *pp = part + pbase0 * stride;
    // This block's E elements x = x0 + k * dx, each summed over the splits
    // by P threads (a P-th of the splits each, then through `sums`), so
    // the sums over splits run in parallel, not one split after another.
    int E = has_out && x0 < jn * dim ? (jn * dim - x0 + dx - 1) / dx : 0;
    int P = E > 0 && E < bs ? bs / E : 1, per_round = bs / P;
    for (int k0 = 0; k0 < E; k0 += per_round) {
        int k = k0 + tid % per_round, share = tid / per_round;
        int x = x0 + k * dx, j = x / dim, e = x % dim;
        float acc = 0.0f;
        if (k < E && share < P && hm[j] != -INFINITY)
            for (int s = share; s < nsp; s += P) {
                const volatile float *ps = pp + ((lkv_att_u64)j * nsp + s) * stride;
                acc += ps[2 + e] * expf(ps[0] - hm[j]);
            }
        sums[tid] = acc;
        __syncthreads();
        if (tid < per_round && k < E) {
            float total = 0.0f;
            for (int q = 0; q < P; q++)
                total += sums[q * per_round + tid];
            out[o0 + x] = hm[j] == -INFINITY ? (n > 0 ? lkv_att_nan() : 0.0f) : total / hl[j];
        }
        __syncthreads();
    }
}

// Where a cache row's probabilities go: to probs (null: not kept) and,
// where kind is an lkv_observe_kind rather than -1, into the row's policy
// state at its group's step (observe_slot.h: the observe op's own update,
// so a fused observe leaves the bits the separate launch would).
struct lkv_att_sink {
    float *probs;
    lkv_att_u64 row; // the row's slot 0 in the [rows][cap] arrays
    int kind, t;
    float alpha;
    int *last, *mri;
    float *state;
};

LKV_DEV lkv_att_sink lkv_att_sink_of(float *probs, int kind, const int *group_t, int g,
                                     float alpha, int *last, int *mri, float *state,
                                     lkv_att_u64 row, int cap)
{
    lkv_att_sink s;
    s.probs = probs;
    s.row = row * (lkv_att_u64)cap;
    s.kind = kind;
    s.t = kind >= 0 ? group_t[g] : 0;
    s.alpha = alpha;
    s.last = last;
    s.mri = mri;
    s.state = state;
    return s;
}

LKV_DEV void lkv_att_put(const lkv_att_sink &s, int i, float p)
{
    lkv_att_u64 x = s.row + (lkv_att_u64)i;
    if (s.probs)
        s.probs[x] = p;
    if (s.kind >= 0)
        lkv_observe_slot(s.kind, p, x, s.t, s.alpha, s.last, s.mri, s.state);
}

// The probabilities of this block's split in a cooperative launch,
// combined over the cache head's per = jn query heads (all in this block)
// by max or mean, as lkv_attend_probs does, put where `sink` says. From the weights its one tile
// still holds where the split fit it (w[j * T + i - s0] = exp(logit -
// m_j), m_j this split's maximum): p = w factor[j] with factor[j] =
// exp(m_j - lse_j), two roundings more than exp(logit - lse); else from the
// logits it wrote to global memory (lg[j * n + i]): p = exp(logit - lse[j]),
// as that kernel computes it. With lse = -inf (no finite logit in the
// group) every probability is NaN, as on the CPU.
LKV_DEV void lkv_att_fused_probs(const float *w, int T, const float *lg, int n,
                                 const lkv_att_sink &sink, int s0, int s1, int jn, int reduce_max,
                                 const float *factor, const float *lse)
{
    for (int i = s0 + (int)threadIdx.x; i < s1; i += (int)blockDim.x) {
        float acc = reduce_max ? -INFINITY : 0.0f;
        for (int j = 0; j < jn; j++) {
            float p = w ? w[j * T + i - s0] * factor[j]
                        : expf(lg[(lkv_att_u64)j * n + i] - lse[j]);
            acc = reduce_max ? fmaxf(acc, p) : acc + p;
        }
        lkv_att_put(sink, i, reduce_max ? acc : acc / (float)jn);
    }
}

// A split block's shared memory, declared by the kernel itself
// (LKV_ATT_SPLIT_KERNEL): a function template's own __shared__ variables
// are not placed in the emulator's shared section by g++ (they would keep
// their values from block to block and across a parked block's wait).
template <int QB, int VEC, int R> struct lkv_att_shared {
    float tile[LKV_ATT_TILE];             // a tile's logits, then its weights, [QB][T]
    float red[QB][LKV_ATT_WARPS];         // block reductions
    float gather[LKV_BLOCK_MAX * VEC * R]; // q of 4 or 8 heads; the partials' and combine's sums
    float heads_m[QB], heads_l[QB];       // the combine's M and L per head
    unsigned int last;                    // this block combines (not cooperative)
    int zero;                             // see lkv_att_logits' use of qs
};

// The body of lkv_attend_split_*: VEC elements per chunk (16 bytes on the
// vector path, 1 otherwise), R chunk columns per thread at most in the pass
// over V (1 on the vector path, LKV_ATT_COLS on the scalar one: head_dim <=
// LKV_ATT_COLS * block). flags: LKV_ATT_F_* (lkv_kernel_abi.h).
template <int QB, typename KV, int VEC, int R>
LKV_DEV void lkv_att_split(lkv_att_shared<QB, VEC, R> &sh, const KV *k, const KV *v,
                           const int *phys, const float *q, float *logits, float *part,
                           float *out, float *lse, float *probs, unsigned int *done,
                           const int *row0, const int *group_n, const int *slot_off,
                           const int *split_off, int n_groups, int cap, int kv_cap, int dim,
                           int heads, int per, int split_len, float scale, int flags,
                           int obs_kind, const int *obs_t, float alpha, int *obs_last,
                           int *obs_mri, float *obs_state)
{
    float *tile = sh.tile, *gather = sh.gather, *heads_m = sh.heads_m, *heads_l = sh.heads_l;
    float (*red)[LKV_ATT_WARPS] = sh.red;
    unsigned int &last = sh.last;
    int &zero = sh.zero;
    const int T = LKV_ATT_TILE / QB;

    int qblocks = (per + QB - 1) / QB;
    int ch = (int)blockIdx.y / qblocks, j0 = ((int)blockIdx.y % qblocks) * QB;
    int jn = per - j0 < QB ? per - j0 : QB;
    int g = lkv_att_find_group(split_off, n_groups, (int)blockIdx.x);
    int n = group_n[g], sp = (int)blockIdx.x - split_off[g];
    int nsp = split_off[g + 1] - split_off[g];
    int s0 = sp * split_len, s1 = n - s0 < split_len ? n : s0 + split_len;
    int q_heads = heads * per, qh0 = ch * per + j0; // first query head of the block, in g
    int has_out = (flags & LKV_ATT_F_OUT) != 0;
    // 64-bit offsets: rows * capacity * head_dim passes 2^32 on large caches.
    lkv_att_u64 row = (lkv_att_u64)(row0[g] + ch);
    const KV *krow = k + row * (lkv_att_u64)kv_cap * (lkv_att_u64)dim;
    const KV *vrow = v + row * (lkv_att_u64)kv_cap * (lkv_att_u64)dim;
    const int *prow = phys ? phys + row * (lkv_att_u64)cap : nullptr;
    const float *qh = q + ((lkv_att_u64)g * q_heads + qh0) * (lkv_att_u64)dim;

    // The pass over K stores the split's logits in the tile when they fit
    // (T slots: every split of a plan at the lengths where splits are
    // short; global memory sees them then only for the probs launch), else
    // in global memory; the pass over V then takes the weights a tile at a
    // time. Not an online softmax: its sums would be live in registers
    // through the pass over K, and the 16-byte kernels then spill at 2
    // blocks a multiprocessor (ptxas).
    bool on_chip = s1 - s0 <= T;
    float *lg = logits + (lkv_att_u64)slot_off[g] * q_heads + (lkv_att_u64)qh0 * n;
    // q of four or eight heads in shared memory (gather is free until the
    // partials are written)
    const float *qs = nullptr;
    if (QB >= LKV_ATT_QSHARED && QB * dim <= LKV_BLOCK_MAX * VEC * R) {
        for (int x = (int)threadIdx.x; x < QB * dim; x += (int)blockDim.x)
            gather[x] = x < jn * dim ? qh[x] : 0.0f;
        qs = gather;
    }
    if (threadIdx.x == 0)
        zero = 0;
    __syncthreads();
    float m[QB];
    if (on_chip)
        lkv_att_logits<QB, KV, VEC>(krow, prow, qh, qs, &zero, tile, T,
                                    (flags & LKV_ATT_F_LOGITS) ? lg : nullptr, n, s0, s1, dim, jn,
                                    scale, m, red);
    else
        lkv_att_logits<QB, KV, VEC>(krow, prow, qh, qs, &zero, lg + s0, n, nullptr, n, s0, s1,
                                    dim, jn, scale, m, red); // head h's slot i at lg[h * n + i]
    float acc[QB][VEC * R], l[QB];
    for (int j = 0; j < QB; j++) {
        l[j] = 0.0f;
        for (int e = 0; e < VEC * R; e++)
            acc[j][e] = 0.0f;
    }
    for (int c0 = s0; c0 < s1; c0 += T) {
        int tn = s1 - c0 < T ? s1 - c0 : T;
        lkv_att_weights<QB>(tile, T, on_chip ? tile : lg, n, c0, tn, jn, m, l);
        __syncthreads();
        lkv_att_values<QB, KV, VEC, R>(vrow, prow, tile, T, c0, tn, dim, acc);
        __syncthreads(); // the next tile's weights overwrite these
    }
    lkv_att_block_reduce(l, false, red);
    lkv_att_u64 pbase0 = (lkv_att_u64)split_off[g] * q_heads + (lkv_att_u64)qh0 * nsp;
    lkv_att_write_partials<QB, VEC, R>(part, pbase0 + sp, nsp, dim, jn, acc, m, l, gather);
    lkv_att_u64 o0 = ((lkv_att_u64)g * q_heads + qh0) * (lkv_att_u64)dim; // out, lse: [g][qh]
    unsigned int *count = done + (lkv_att_u64)g * gridDim.y + blockIdx.y;
    lkv_threadfence();
    __syncthreads();
    if (flags & LKV_ATT_F_COOP) {
        // Every block is resident: each waits for the group's partials and
        // takes its share of the combine, then (LKV_ATT_F_PROBS) writes its
        // own slots' probabilities. The count goes up once more as a block
        // leaves; the last to leave puts it back to 0 for the next launch,
        // when no block waits on it any more.
        if (threadIdx.x == 0)
            atomicAdd(count, 1u);
        lkv_grid_wait(count, (unsigned int)nsp);
        lkv_att_combine<QB>(part, out, lse, pbase0, o0, nsp, sp, nsp, dim, jn, n, has_out,
                            heads_m, heads_l, red, gather);
        if (flags & LKV_ATT_F_PROBS) {
            // heads_l[j] becomes lse_j, heads_m[j] the factor exp(m_j -
            // lse_j), m_j this split's own maximum
            __syncthreads();
            if (threadIdx.x == 0)
                for (int j = 0; j < jn; j++) {
                    const volatile float *own =
                        part + (pbase0 + (lkv_att_u64)j * nsp + sp) * ((lkv_att_u64)dim + 2);
                    heads_l[j] = heads_m[j] + logf(heads_l[j]);
                    heads_m[j] = expf(own[0] - heads_l[j]);
                }
            __syncthreads();
            lkv_att_sink sink = lkv_att_sink_of(probs, obs_kind, obs_t, g, alpha, obs_last,
                                                obs_mri, obs_state, row, cap);
            lkv_att_fused_probs(on_chip ? tile : nullptr, T, lg, n, sink, s0, s1, jn,
                                (flags & LKV_ATT_F_MAX) != 0, heads_m, heads_l);
        }
        __syncthreads();
        if (threadIdx.x == 0 && atomicAdd(count, 1u) == 2u * (unsigned int)nsp - 1u)
            *count = 0u;
        return;
    }
    // The last of the group's split blocks for these heads to finish
    // combines their splits: no launch of its own, and the combine starts
    // as soon as its inputs are there. The fence puts this block's
    // partials before its count; the count's reset leaves `done` at 0 for
    // the next launch.
    if (threadIdx.x == 0)
        last = atomicAdd(count, 1u) == (unsigned int)nsp - 1u;
    __syncthreads();
    if (!last)
        return;
    lkv_threadfence();
    lkv_att_combine<QB>(part, out, lse, pbase0, o0, nsp, 0, 1, dim, jn, n, has_out, heads_m,
                        heads_l, red, gather);
    if (threadIdx.x == 0)
        *count = 0u;
}

// The split kernels: one per stored type (float; unsigned short for f16;
// lkv_att_bf16), chunk width (one element, or 16 bytes: _vec) and query
// heads per block (_g1, _g2, _g4, _g8: the host takes the smallest that
// holds a cache head's group, so 4:1 GQA keeps registers for 4 heads, not
// 8). Every one fits 128 registers without spilling on sm_90, so two
// blocks share a multiprocessor (blocks of 4 and 8 heads read q from shared
// memory); the kernel report (scripts/kernel-report.sh) checks it and the
// loads in flight.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
// sm_80's ptxas spills the 16-bit kernels at 8 heads at 128 registers (or
// keeps 3 loads in flight in the 16-byte ones): one block there (the
// kernel report gates 2 blocks on sm_90 only)
#define LKV_ATT_RESIDENT(QB, KV) ((QB) == 8 && sizeof(KV) == 2 ? 1 : 2)
#else
#define LKV_ATT_RESIDENT(QB, KV) 2
#endif
#define LKV_ATT_SPLIT_KERNEL(name, QB, KV, VEC, R)                                             \
    LKV_KERNEL_RESIDENT(name, LKV_ATT_RESIDENT(QB, KV))                                        \
    (const KV *k, const KV *v, const int *phys, const float *q, float *logits, float *part,    \
     float *out, float *lse, float *probs, unsigned int *done, const int *row0,                \
     const int *group_n, const int *slot_off, const int *split_off, int n_groups, int cap,     \
     int kv_cap, int dim, int heads, int per, int split_len, float scale, int flags,           \
     int obs_kind, const int *obs_t, float alpha, int *last, int *mri, float *state)           \
    {                                                                                          \
        __shared__ lkv_att_shared<QB, VEC, R> sh;                                              \
        lkv_att_split<QB, KV, VEC, R>(sh, k, v, phys, q, logits, part, out, lse, probs, done,  \
                                      row0, group_n, slot_off, split_off, n_groups, cap,       \
                                      kv_cap, dim, heads, per, split_len, scale, flags,        \
                                      obs_kind, obs_t, alpha, last, mri, state);               \
    }

LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_g1, 1, float, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_g2, 2, float, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_g4, 4, float, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_g8, 8, float, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_vec_g1, 1, float, LKV_ATT_F32_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_vec_g2, 2, float, LKV_ATT_F32_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_vec_g4, 4, float, LKV_ATT_F32_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f32_vec_g8, 8, float, LKV_ATT_F32_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_g1, 1, unsigned short, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_g2, 2, unsigned short, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_g4, 4, unsigned short, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_g8, 8, unsigned short, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_vec_g1, 1, unsigned short, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_vec_g2, 2, unsigned short, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_vec_g4, 4, unsigned short, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_f16_vec_g8, 8, unsigned short, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_g1, 1, lkv_att_bf16, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_g2, 2, lkv_att_bf16, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_g4, 4, lkv_att_bf16, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_g8, 8, lkv_att_bf16, 1, LKV_ATT_COLS)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_vec_g1, 1, lkv_att_bf16, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_vec_g2, 2, lkv_att_bf16, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_vec_g4, 4, lkv_att_bf16, LKV_ATT_KV16_VEC, 1)
LKV_ATT_SPLIT_KERNEL(lkv_attend_split_bf16_vec_g8, 8, lkv_att_bf16, LKV_ATT_KV16_VEC, 1)

// Per slot of each listed row: exp(logit - lse) of the row's `per` query
// heads, combined by max (reduce_max) or mean, put where lkv_att_sink says
// (probs null: not kept; obs_kind >= 0: observed). The max starts from
// -inf and skips NaN (fmaxf), as the CPU's fmax does: NaN only from every
// head gives -inf there, NaN in the mean.
LKV_KERNEL(lkv_attend_probs)(const float *logits, const float *lse, float *probs, const int *row0,
                             const int *group_n, const int *slot_off, int cap, int heads, int per,
                             int reduce_max, int obs_kind, const int *obs_t, float alpha,
                             int *last, int *mri, float *state)
{
    int g = (int)blockIdx.z, ch = (int)blockIdx.y, n = group_n[g];
    int q_heads = heads * per;
    const float *lg = logits + (lkv_att_u64)slot_off[g] * q_heads + (lkv_att_u64)ch * per * n;
    const float *ls = lse + (lkv_att_u64)g * q_heads + (lkv_att_u64)ch * per;
    lkv_att_sink sink = lkv_att_sink_of(probs, obs_kind, obs_t, g, alpha, last, mri, state,
                                        (lkv_att_u64)(row0[g] + ch), cap);
    int stride = (int)(gridDim.x * blockDim.x);
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
        float acc = reduce_max ? -INFINITY : 0.0f;
        for (int j = 0; j < per; j++) {
            float p = expf(lg[(lkv_att_u64)j * n + i] - ls[j]);
            acc = reduce_max ? fmaxf(acc, p) : acc + p;
        }
        lkv_att_put(sink, i, reduce_max ? acc : acc / (float)per);
    }
}
