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
// (lkv_select_fetch). The kept set is exactly the oracle's: the keys order the slots as its comparison does and equal keys go to the
// lower slot; there is no arithmetic. k >= n keeps every slot; k == 0
// writes nothing. Works at any warp width and any block of whole warps.
// Launch: block LKV_SELECT_BLOCK (any multiple of 64 up to LKV_BLOCK_MAX), one
// block per listed row, x = listed rows (grid-stride over n_rows).
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
        lkv_select_digit(hist, need, sh, warp_sum);
        __syncthreads();
        prefix |= sh[0] << shift;
        mask |= 255u << shift;
        need = sh[1];
        __syncthreads(); // sh and hist are rewritten by the next pass
    }
    *out_key = prefix;
    return need;
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
        if (k == 0u)
            continue;
        if (k >= n) {
            for (unsigned int i = threadIdx.x; i < n; i += blockDim.x)
                out[i] = (int)i;
            continue;
        }
        unsigned int key_k;
        unsigned int need = lkv_select_threshold(s, n, k, hist, sh, warp_sum, &key_k);
        // keep keys < key_k and the first `need` keys == key_k, in slot order:
        // a tile of U x block slots at a time, U consecutive slots a thread
        // (loaded together); one block scan of the threads' counts (at most
        // a tile each, packed in one word) places them
        const unsigned int U = LKV_SELECT_INFLIGHT;
        unsigned int kept_total = 0u, eq_total = 0u;
        for (unsigned int c = 0u; c < n; c += U * blockDim.x) {
            unsigned int first = c + threadIdx.x * U;
            float v[LKV_SELECT_INFLIGHT];
            lkv_select_fetch(s, n, first < n ? first : c, 1u, v);
            unsigned int less = 0u, eq = 0u;
            for (unsigned int u = 0u; u < U; u++) {
                unsigned int key = lkv_select_key(v[u]);
                bool in = first + u < n;
                less += (in & (key < key_k)) ? 1u : 0u;
                eq += (in & (key == key_k)) ? 1u : 0u;
            }
            unsigned int total;
            unsigned int before = lkv_select_scan(less | (eq << 16), warp_sum, &total);
            unsigned int take = need > eq_total ? need - eq_total : 0u;
            unsigned int lb = before & 0xffffu, eb = before >> 16;
            for (unsigned int u = 0u; u < U; u++) {
                unsigned int key = lkv_select_key(v[u]);
                if (first + u >= n)
                    break;
                if (key < key_k || (key == key_k && eb < take))
                    out[kept_total + lb + (eb < take ? eb : take)] = (int)(first + u);
                lb += key < key_k ? 1u : 0u;
                eb += key == key_k ? 1u : 0u;
            }
            kept_total += (total & 0xffffu) + ((total >> 16) < take ? (total >> 16) : take);
            eq_total += total >> 16;
            if (kept_total == k) // the same in every thread: the rest keeps nothing
                break;
        }
    }
}
