// compact: per listed row, the kept slots' K and V rows, pos, state_a,
// state_b and state_f move to the front in order, in place: slot j takes
// slot kept[j] for j < k (backends/cpu/cpu_compact.c). Pure data movement,
// bit-exact, NaN payloads included.
//
// Why in place is safe here. kept is ascending, so the source of slot j is
// kept[j] >= j. A plain parallel copy is not safe: slot j is the source of
// an earlier slot j' < j whenever kept[j'] = j, and the thread writing j can
// run before the one reading it. Each block therefore owns one (row, array,
// column slice) and marches forward over the row in chunks of C destination
// slots: it reads the chunk's sources into registers, synchronises, then
// writes them. A chunk's reads precede its writes (the barrier), the
// writes of chunk [c, c + C) never touch a source of a later chunk (those are
// kept[j] >= j >= c + C), and a later chunk writes only after every thread
// has passed that chunk's barrier, so after all reads of this one. Blocks
// share no bytes (different rows, arrays or columns), so no grid-wide order
// is needed and no scratch: one launch moves everything, so a launch that
// fails has changed nothing. Slots before the first that moves (kept[j] == j;
// kept[j] - j never decreases, so a binary search finds it) are skipped.
//
// Units: K and V move in 16-byte units (uint4) when a slot's row of
// head_dim * (2 or 4) bytes is a multiple of 16, else 4-byte units, else
// 2-byte (f16 with odd head_dim); row and slot offsets are multiples of the
// slot row size and the buffers are allocation-aligned, so every unit is
// aligned. A block's slice is `slice_w` consecutive units of every slot, so
// a warp reads and writes whole runs of slice_w units (the host keeps
// slices at least 32 bytes wide unless the row is narrower). pos and the
// states move as 4-byte words, one block per (row, array).
// Launch: block LKV_COMPACT_BLOCK (any multiple of 64; slice_w <=
// LKV_COMPACT_PER_THREAD * block), x = the K
// slices, then the V slices (slices = units / slice_w rounded up), then 4
// (pos, state_a, state_b, state_f); y = listed rows (grid-stride over
// n_rows). Unit offsets are 64-bit: rows * capacity *
// head_dim passes 2^32. With units = 0 (a cache that fills holes) there are
// no K/V slices: x = 4 moves the metadata only.
//
// lkv_compact_phys: the hole map of a cache that fills holes, which moves
// no K/V. Each listed row's map entries of the n slots it held move as the
// oracle's do (backends/ref/ref_compact.c): the kept slots' entries to the
// front in kept order, then the evicted slots' in ascending slot order, so
// the places they held are the next tokens'. Each slot s finds its own
// destination: kept (at the index where a binary search of the ascending
// kept list finds it) or the (s - kept slots below s)-th evicted one, after
// the k kept. Kept entries move down and evicted ones up, so an entry can
// land where another thread has yet to read: phase 0 scatters the row into
// scratch ([listed row][cap]), phase 1 (the next launch) copies it back.
// Launch: block LKV_COMPACT_BLOCK, x = blocks striding over the slots, y =
// listed rows (grid-stride over n_rows).
#include "lkv_gpu.h"

// Units each thread carries per chunk (a chunk is blockDim * this many
// units): LKV_COMPACT_PER_THREAD, in lkv_kernel_abi.h with the host's slice
// limit it bounds.

// First j < k with kept[j] != j, or k. kept[j] - j >= 0 never decreases,
// so kept[j] == j holds exactly on a prefix. Every thread computes it (the
// same few loads), which saves a barrier.
LKV_DEV int lkv_compact_first_moved(const int *kept, int k)
{
    int lo = 0, hi = k;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (kept[mid] == mid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Moves units [u0, u0 + w) of every kept slot of one row of `data`, whose
// slot j starts at unit row0 + j * units, marching forward in chunks (see
// the header). w <= blockDim * LKV_COMPACT_PER_THREAD.
template <typename T>
LKV_DEV void lkv_compact_march(T *data, unsigned long long row0, int units, int u0, int w,
                               const int *kept, int first, int k)
{
    int chunk = (int)blockDim.x * LKV_COMPACT_PER_THREAD / w; // slots per chunk, >= 1
    // a thread's (slot in chunk, unit) pairs are the same in every chunk
    int slot_of[LKV_COMPACT_PER_THREAD], unit_of[LKV_COMPACT_PER_THREAD];
    for (int m = 0; m < LKV_COMPACT_PER_THREAD; m++) {
        int e = (int)threadIdx.x + m * (int)blockDim.x;
        slot_of[m] = e / w < chunk ? e / w : -1;
        unit_of[m] = u0 + e % w;
    }
    for (int c = first; c < k; c += chunk) {
        T val[LKV_COMPACT_PER_THREAD] = {};
        for (int m = 0; m < LKV_COMPACT_PER_THREAD; m++) {
            int j = c + slot_of[m];
            if (slot_of[m] >= 0 && j < k)
                val[m] = data[row0 + (unsigned long long)kept[j] * (unsigned long long)units +
                              (unsigned long long)unit_of[m]];
        }
        __syncthreads(); // every read of this chunk before any of its writes
        for (int m = 0; m < LKV_COMPACT_PER_THREAD; m++) {
            int j = c + slot_of[m];
            if (slot_of[m] >= 0 && j < k)
                data[row0 + (unsigned long long)j * (unsigned long long)units +
                     (unsigned long long)unit_of[m]] = val[m];
        }
    }
}

// One block's share: K or V column slice, or one metadata array.
template <typename T>
LKV_DEV void lkv_compact_rows(const int *rows, const int *row_k, const int *kept, T *k, T *v,
                              unsigned int *pos, unsigned int *state_a, unsigned int *state_b,
                              unsigned int *state_f, int cap, int units, int slice_w, int n_rows)
{
    int slices = (units + slice_w - 1) / slice_w;
    int part = (int)blockIdx.x;
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        unsigned long long row = (unsigned long long)rows[r];
        const int *kr = kept + row * (unsigned long long)cap;
        int count = row_k[r];
        int first = lkv_compact_first_moved(kr, count);
        if (part < 2 * slices) {
            int slice = part % slices, u0 = slice * slice_w;
            int w = units - u0 < slice_w ? units - u0 : slice_w;
            unsigned long long row0 = row * (unsigned long long)cap * (unsigned long long)units;
            lkv_compact_march(part < slices ? k : v, row0, units, u0, w, kr, first, count);
        } else {
            int which = part - 2 * slices;
            unsigned int *meta = which == 0   ? pos
                                 : which == 1 ? state_a
                                 : which == 2 ? state_b
                                              : state_f;
            lkv_compact_march(meta, row * (unsigned long long)cap, 1, 0, 1, kr, first, count);
        }
    }
}

LKV_KERNEL(lkv_compact_b16)(const int *rows, const int *row_k, const int *kept, uint4 *k,
                            uint4 *v, unsigned int *pos, unsigned int *state_a,
                            unsigned int *state_b, unsigned int *state_f, int cap, int units,
                            int slice_w, int n_rows)
{
    lkv_compact_rows(rows, row_k, kept, k, v, pos, state_a, state_b, state_f, cap, units, slice_w,
                     n_rows);
}

LKV_KERNEL(lkv_compact_b4)(const int *rows, const int *row_k, const int *kept, unsigned int *k,
                           unsigned int *v, unsigned int *pos, unsigned int *state_a,
                           unsigned int *state_b, unsigned int *state_f, int cap, int units,
                           int slice_w, int n_rows)
{
    lkv_compact_rows(rows, row_k, kept, k, v, pos, state_a, state_b, state_f, cap, units, slice_w,
                     n_rows);
}

LKV_KERNEL(lkv_compact_b2)(const int *rows, const int *row_k, const int *kept,
                           unsigned short *k, unsigned short *v, unsigned int *pos,
                           unsigned int *state_a, unsigned int *state_b, unsigned int *state_f,
                           int cap, int units, int slice_w, int n_rows)
{
    lkv_compact_rows(rows, row_k, kept, k, v, pos, state_a, state_b, state_f, cap, units, slice_w,
                     n_rows);
}

// How many of kept[0 .. k) (ascending) are below s.
LKV_DEV int lkv_compact_kept_below(const int *kept, int k, int s)
{
    int lo = 0, hi = k;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (kept[mid] < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

LKV_KERNEL(lkv_compact_phys)(const int *rows, const int *row_k, const int *row_n,
                             const int *kept, int *phys, int *scratch, int cap, int n_rows,
                             int phase) // 0: scatter to scratch, 1: copy back
{
    int stride = (int)(gridDim.x * blockDim.x);
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        unsigned long long row = (unsigned long long)rows[r] * (unsigned long long)cap;
        int *prow = phys + row, *tmp = scratch + (unsigned long long)r * (unsigned long long)cap;
        const int *kr = kept + row;
        int k = row_k[r], n = row_n[r];
        for (int s = (int)(blockIdx.x * blockDim.x + threadIdx.x); s < n; s += stride) {
            if (phase == 0) {
                int below = lkv_compact_kept_below(kr, k, s);
                int dst = below < k && kr[below] == s ? below : k + (s - below);
                tmp[dst] = prow[s];
            } else {
                prow[s] = tmp[s];
            }
        }
    }
}
