// select: per listed row keep the k highest of the n valid scores, ties to
// the lower slot, NaN below everything, and write the kept slot indices in
// ascending order to the first k entries of the row in `kept`
// (backends/cpu/cpu_select.c; backends/vulkan/shaders/select.comp is the same algorithm).
// Each score maps to a 32-bit key whose ascending order is the oracle's
// ranking (descending score, -0 equal to +0, every NaN the largest key). A
// radix select, four passes of 8 bits with the histogram in shared memory
// (each pass's digit found by a block scan of the bins), finds the k-th
// smallest key T and how many of the keys equal to T are
// kept; a last pass over the row in slot order keeps every key < T and the
// first `need` keys == T, placing each with a block prefix sum (warp
// shuffles, then the per-warp totals) of the threads' counts, each thread
// holding LKV_SELECT_INFLIGHT consecutive slots. Every pass loads
// LKV_SELECT_INFLIGHT scores a thread before it uses one
// (lkv_select_fetch). The kept set is exactly the oracle's: the keys order
// the slots as its comparison does and equal keys go to the lower slot;
// there is no arithmetic. k >= n keeps every slot; k == 0
// writes nothing. Works at any warp width and any block of whole warps.
// Two kernels: lkv_select_spread, where every row fits its blocks' shared
// memory (LKV_SELECT_CHUNK slots a block) and those blocks fit the device
// at once, reads the scores once and runs the passes over keys in shared
// memory, the blocks of a row exchanging bins and counts through memory
// (gpu_select.c picks it); lkv_select_rows, one block a row, reads the
// row for every pass.
// lkv_select_rows' launch: block LKV_SELECT_BLOCK (any multiple of 64 up
// to LKV_BLOCK_MAX), one block per listed row, x = listed rows
// (grid-stride over n_rows).
#include "lkv_gpu.h"

// Ascending key = descending score; -0 ties +0; every NaN is the last key.
LKV_DEV unsigned int lkv_select_key(float score)
{
    unsigned int b = __float_as_uint(score);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return 0xffffffffu;
    if ((b & 0x7fffffffu) == 0u)
        b = 0u;
    unsigned int ord = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
    return ~ord;
}

// Exclusive prefix sum of v over the block, and the block's total. Every
// thread of the block must call it (it shuffles and synchronises); warp_sum
// holds one entry per warp.
LKV_DEV unsigned int lkv_select_scan(unsigned int v, unsigned int *warp_sum,
                                     unsigned int *out_total)
{
    int w = lkv_warp();
    int lane = (int)threadIdx.x % w, wid = (int)threadIdx.x / w, nw = (int)blockDim.x / w;
    unsigned int x = v;
    for (int off = 1; off < w; off <<= 1) {
        unsigned int y = lkv_shfl(x, lane >= off ? lane - off : lane);
        if (lane >= off)
            x += y;
    }
    if (lane == w - 1)
        warp_sum[wid] = x;
    __syncthreads();
    unsigned int before = x - v, total = 0u;
    for (int i = 0; i < nw; i++) {
        unsigned int s = warp_sum[i];
        before += i < wid ? s : 0u;
        total += s;
    }
    __syncthreads(); // warp_sum is rewritten by the next call
    *out_total = total;
    return before;
}

// The digit where the running count of the 256 bins reaches `need` (the
// keys of lower digits are all kept) into sh[0], and what is left of `need`
// in it into sh[1]: a block scan of the bins, a block at a time, so no
// thread walks them alone. Exactly one bin holds the crossing, as the bins
// count at least `need` keys.
LKV_DEV void lkv_select_digit(const unsigned int *hist, unsigned int need, unsigned int *sh,
                              unsigned int *warp_sum)
{
    unsigned int below = 0u;
    for (unsigned int c = 0u; c < 256u; c += blockDim.x) {
        unsigned int b = c + threadIdx.x, v = b < 256u ? hist[b] : 0u, total;
        unsigned int before = below + lkv_select_scan(v, warp_sum, &total);
        if (b < 256u && before < need && need <= before + v) {
            sh[0] = b;
            sh[1] = need - before;
        }
        below += total;
    }
}

// A pass's end: its digit from the bins (lkv_select_digit) joins the
// prefix, and `need` becomes what is left of it in that digit's bin.
LKV_DEV void lkv_select_narrow(const unsigned int *hist, int shift, unsigned int *sh,
                               unsigned int *warp_sum, unsigned int *prefix, unsigned int *mask,
                               unsigned int *need)
{
    lkv_select_digit(hist, *need, sh, warp_sum);
    __syncthreads();
    *prefix |= sh[0] << shift;
    *mask |= 255u << shift;
    *need = sh[1];
    __syncthreads(); // sh and hist are rewritten by the next pass
}

// The scores of slots c + u * stride (u < LKV_SELECT_INFLIGHT; c < n), all
// loaded before any is used so that they are in flight together: a slot
// past n reads slot c instead (its key is not counted), as a load that
// might not happen is one the compiler waits for alone.
LKV_DEV void lkv_select_fetch(const float *s, unsigned int n, unsigned int c, unsigned int stride,
                              float (&v)[LKV_SELECT_INFLIGHT])
{
    for (int u = 0; u < LKV_SELECT_INFLIGHT; u++) {
        unsigned int i = c + u * stride;
        v[u] = s[i < n ? i : c];
    }
}

// The radix select: the k-th smallest key of the row (into *out_key) and
// how many keys equal to it are kept (the return value).
LKV_DEV unsigned int lkv_select_threshold(const float *s, unsigned int n, unsigned int k,
                                          unsigned int *hist, unsigned int *sh,
                                          unsigned int *warp_sum, unsigned int *out_key)
{
    unsigned int prefix = 0u, mask = 0u, need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (unsigned int b = threadIdx.x; b < 256u; b += blockDim.x)
            hist[b] = 0u;
        __syncthreads();
        for (unsigned int c = threadIdx.x; c < n; c += LKV_SELECT_INFLIGHT * blockDim.x) {
            float v[LKV_SELECT_INFLIGHT];
            lkv_select_fetch(s, n, c, blockDim.x, v);
            for (int u = 0; u < LKV_SELECT_INFLIGHT; u++) {
                unsigned int key = lkv_select_key(v[u]);
                bool in = c + u * blockDim.x < n;
                if (in & ((key & mask) == prefix))
                    atomicAdd(&hist[(key >> shift) & 255u], 1u);
            }
        }
        __syncthreads();
        lkv_select_narrow(hist, shift, sh, warp_sum, &prefix, &mask, &need);
    }
    *out_key = prefix;
    return need;
}

// Keep keys < key_k and the first `need` keys == key_k, in slot order, of
// the m slots of s or keys (slot i is written as slot c0 + i): a tile
// of U x block slots at a time, U consecutive slots a thread (loaded
// together); one block scan of the threads' counts (at most a tile each,
// packed in one word) places them. kept_total and eq_total start at what
// the slots before c0 kept and held equal to key_k; the keys come from the
// scores in global memory (LOCAL false) or from keys[] in shared memory.
template <bool LOCAL>
LKV_DEV void lkv_select_place(const float *s, const unsigned int *keys, unsigned int m,
                              unsigned int c0, unsigned int k, unsigned int key_k,
                              unsigned int need, unsigned int kept_total, unsigned int eq_total,
                              int *out, unsigned int *warp_sum)
{
    const unsigned int U = LKV_SELECT_INFLIGHT;
    for (unsigned int c = 0u; c < m && kept_total < k; c += U * blockDim.x) {
        unsigned int first = c + threadIdx.x * U;
        unsigned int key[LKV_SELECT_INFLIGHT];
        if (LOCAL) {
            for (unsigned int u = 0u; u < U; u++)
                key[u] = first + u < m ? keys[first + u] : 0u;
        } else {
            float v[LKV_SELECT_INFLIGHT];
            lkv_select_fetch(s, m, first < m ? first : c, 1u, v);
            for (unsigned int u = 0u; u < U; u++)
                key[u] = lkv_select_key(v[u]);
        }
        unsigned int less = 0u, eq = 0u;
        for (unsigned int u = 0u; u < U; u++) {
            bool in = first + u < m;
            less += (in & (key[u] < key_k)) ? 1u : 0u;
            eq += (in & (key[u] == key_k)) ? 1u : 0u;
        }
        unsigned int total;
        unsigned int before = lkv_select_scan(less | (eq << 16), warp_sum, &total);
        unsigned int take = need > eq_total ? need - eq_total : 0u;
        unsigned int lb = before & 0xffffu, eb = before >> 16;
        for (unsigned int u = 0u; u < U && first + u < m; u++) {
            if (key[u] < key_k || (key[u] == key_k && eb < take))
                out[kept_total + lb + (eb < take ? eb : take)] = (int)(c0 + first + u);
            lb += key[u] < key_k ? 1u : 0u;
            eb += key[u] == key_k ? 1u : 0u;
        }
        // the same in every thread, so the loop's test is block-uniform
        kept_total += (total & 0xffffu) + ((total >> 16) < take ? (total >> 16) : take);
        eq_total += total >> 16;
    }
}

// Rows whose choice needs no ranking: k == 0 writes nothing, k >= n keeps
// every slot (the blocks of a row each write their share). True when the
// row was one of them.
LKV_DEV bool lkv_select_trivial(unsigned int n, unsigned int k, int *out, unsigned int part,
                                unsigned int parts)
{
    if (k != 0u && k < n)
        return false;
    if (k != 0u)
        for (unsigned int i = part * blockDim.x + threadIdx.x; i < n; i += parts * blockDim.x)
            out[i] = (int)i;
    return true;
}

LKV_KERNEL(lkv_select_rows)(const int *rows, const int *row_n, const int *row_k,
                            const float *scores, int *kept, int cap, int n_rows)
{
    __shared__ unsigned int hist[256];
    __shared__ unsigned int sh[2];
    __shared__ unsigned int warp_sum[LKV_BLOCK_MAX / 32];
    for (int r = (int)blockIdx.x; r < n_rows; r += (int)gridDim.x) {
        unsigned long long base = (unsigned long long)rows[r] * (unsigned long long)cap;
        unsigned int n = (unsigned int)row_n[r], k = (unsigned int)row_k[r];
        const float *s = scores + base;
        int *out = kept + base;
        if (lkv_select_trivial(n, k, out, 0u, 1u))
            continue;
        unsigned int key_k;
        unsigned int need = lkv_select_threshold(s, n, k, hist, sh, warp_sum, &key_k);
        lkv_select_place<false>(s, nullptr, n, 0u, k, key_k, need, 0u, 0u, out, warp_sum);
    }
}

// A spread select block's arrival at a row's meeting point, once its
// writes to the row's words are fenced: returns when the row's count
// reaches `target` (every block of the row arrived as often), with what
// they wrote before arriving visible. Every thread calls it.
LKV_DEV void lkv_select_meet(unsigned int *count, unsigned int target)
{
    lkv_threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(count, 1u);
    lkv_grid_wait(count, target);
}

// The spread select: gridDim.x blocks share each listed row (blockIdx.y),
// each holding its chunk of at most LKV_SELECT_CHUNK slots as keys in
// shared memory, so the scores are read from memory once rather than five
// times, by gridDim.x times the blocks. The same radix select as
// lkv_select_rows, but each pass counts the block's own keys and, with
// more than one block a row, adds its bins to the row's histogram in
// `sync` and waits for the row's other blocks (lkv_grid_wait: launched
// cooperatively then) before it finds the digit from the whole row's
// bins. Then each block counts its keys below and equal to the threshold,
// the row's blocks exchange those counts the same way, and each places its
// own kept slots after those of the blocks before it. The kept set and
// order are lkv_select_rows' (the same keys, ties to the lower slot).
// sync: per listed row LKV_SELECT_SYNC_WORDS(gridDim.x) words, zero before
// the launch; the last block of a row to leave zeroes them again.
// Launch: block LKV_SELECT_BLOCK, x = blocks a row (the longest row's
// slots / LKV_SELECT_CHUNK, rounded up; cooperative when above 1),
// y = listed rows.
LKV_KERNEL_RESIDENT(lkv_select_spread, 4)(const int *rows, const int *row_n,
                                          const int *row_k, const float *scores, int *kept,
                                          unsigned int *sync, int cap)
{
    __shared__ unsigned int keys[LKV_SELECT_CHUNK];
    __shared__ unsigned int hist[256];
    __shared__ unsigned int sh[2];
    __shared__ unsigned int warp_sum[LKV_BLOCK_MAX / 32];
    const unsigned int parts = gridDim.x, part = blockIdx.x;
    const int r = (int)blockIdx.y;
    unsigned long long base = (unsigned long long)rows[r] * (unsigned long long)cap;
    unsigned int n = (unsigned int)row_n[r], k = (unsigned int)row_k[r];
    int *out = kept + base;
    if (lkv_select_trivial(n, k, out, part, parts))
        return;
    unsigned int len = (n + parts - 1u) / parts;
    unsigned int c0 = part * len < n ? part * len : n;
    unsigned int m = n - c0 < len ? n - c0 : len;
    const float *s = scores + base + c0;
    for (unsigned int c = threadIdx.x; c < m; c += LKV_SELECT_INFLIGHT * blockDim.x) {
        float v[LKV_SELECT_INFLIGHT];
        lkv_select_fetch(s, m, c, blockDim.x, v);
        for (unsigned int u = 0u; u < LKV_SELECT_INFLIGHT; u++)
            if (c + u * blockDim.x < m)
                keys[c + u * blockDim.x] = lkv_select_key(v[u]);
    }
    unsigned int *count = sync + (unsigned long long)r * LKV_SELECT_SYNC_WORDS(parts);
    unsigned int *row_hist = count + 1, *row_counts = row_hist + 4u * 256u;
    unsigned int prefix = 0u, mask = 0u, need = k, round = 0u;
    for (int shift = 24; shift >= 0; shift -= 8, round++) {
        for (unsigned int b = threadIdx.x; b < 256u; b += blockDim.x)
            hist[b] = 0u;
        __syncthreads(); // also: the keys are in (the first pass)
        for (unsigned int i = threadIdx.x; i < m; i += blockDim.x)
            if ((keys[i] & mask) == prefix)
                atomicAdd(&hist[(keys[i] >> shift) & 255u], 1u);
        __syncthreads();
        if (parts > 1u) {
            unsigned int *rh = row_hist + round * 256u;
            for (unsigned int b = threadIdx.x; b < 256u; b += blockDim.x)
                if (hist[b] != 0u)
                    atomicAdd(&rh[b], hist[b]);
            lkv_select_meet(count, parts * (round + 1u));
            const volatile unsigned int *all = rh; // other blocks added to it
            for (unsigned int b = threadIdx.x; b < 256u; b += blockDim.x)
                hist[b] = all[b];
            __syncthreads();
        }
        lkv_select_narrow(hist, shift, sh, warp_sum, &prefix, &mask, &need);
    }
    // what the chunks before this one keep: their keys below the threshold,
    // and as many of their keys equal to it as `need` allows
    unsigned int less_before = 0u, eq_before = 0u;
    if (parts > 1u) {
        unsigned int less = 0u, eq = 0u, total;
        for (unsigned int i = threadIdx.x; i < m; i += blockDim.x) {
            less += keys[i] < prefix ? 1u : 0u;
            eq += keys[i] == prefix ? 1u : 0u;
        }
        lkv_select_scan(less, warp_sum, &less);
        lkv_select_scan(eq, warp_sum, &eq);
        if (threadIdx.x == 0) {
            row_counts[2u * part] = less;
            row_counts[2u * part + 1u] = eq;
        }
        lkv_select_meet(count, parts * 5u);
        const volatile unsigned int *counts = row_counts;
        for (unsigned int p0 = 0u; p0 < part; p0 += blockDim.x) {
            unsigned int p = p0 + threadIdx.x;
            lkv_select_scan(p < part ? counts[2u * p] : 0u, warp_sum, &total);
            less_before += total;
            lkv_select_scan(p < part ? counts[2u * p + 1u] : 0u, warp_sum, &total);
            eq_before += total;
        }
    }
    unsigned int eq_kept = eq_before < need ? eq_before : need;
    lkv_select_place<true>(nullptr, keys, m, c0, k, prefix, need, less_before + eq_kept,
                           eq_before, out, warp_sum);
    if (parts == 1u)
        return;
    // The last of the row's blocks to leave zeroes its words for the next
    // launch: every other block is past its last read of them.
    __syncthreads();
    if (threadIdx.x == 0)
        sh[0] = atomicAdd(count, 1u) == parts * 6u - 1u;
    __syncthreads();
    if (sh[0] == 0u)
        return;
    for (unsigned int i = threadIdx.x + 1u; i < LKV_SELECT_SYNC_WORDS(parts); i += blockDim.x)
        count[i] = 0u;
    if (threadIdx.x == 0)
        *count = 0u;
}
