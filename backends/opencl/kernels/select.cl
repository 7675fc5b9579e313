// select: mirrors backends/vulkan/shaders/select.comp. Per listed row keep the k best of n
// slots, ranked by score (higher first), ties to the lower slot, NaN last;
// write the kept slots in ascending order to the first k entries of the row
// in `kept`.
// One work-group per row. Each score maps to a 32-bit key whose ascending
// order is the ranking; a radix select (4 passes of 8 bits, histograms in
// local memory, each pass's digit found by a work-group scan of the bins)
// finds the k-th key T and how many slots with key == T to
// take; a last pass in slot order keeps every key < T and the first of the
// keys == T, placing them with a work-group prefix sum. A row of at most
// SELECT_CHUNK slots is read once: its keys go to local memory first and
// every pass reads them there, not the scores again (five reads otherwise).
// The result is exactly the CPU oracle's (same keys, same tie rule).
// Launch: x = listed rows. list: (row, n, k) triples.

// The most slots a row can have for its keys to be held in keys[] (8 KiB).
#define SELECT_CHUNK 2048u

// Ascending key = descending score; -0 ties +0; every NaN is the last key.
static uint key_of(uint b)
{
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return 0xffffffffu;
    if ((b & 0x7fffffffu) == 0u)
        b = 0u;
    uint ord = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
    return ~ord;
}

// Slot i's key: held in keys[] when the row fits there, else from its score.
static uint key_at(bool held, __global const uint *scores, uint base, __local const uint *keys,
                   uint i)
{
    return held ? keys[i] : key_of(scores[base + i]);
}

static uint group_scan(uint mine, uint *total, __local uint *scan);

// The digit where the running count of the 256 bins reaches `need` (the
// keys of lower digits are all kept) into sh[0], and what is left of `need`
// in it into sh[1]: a work-group scan of the bins, LKV_WG at a time, so no
// work-item walks them alone. Exactly one bin holds the crossing.
static void find_digit(__local const uint *hist, uint need, __local uint *sh,
                       __local uint *scan)
{
    uint tid = (uint)get_local_id(0), below = 0u;
    for (uint c = 0u; c < 256u; c += LKV_WG) {
        uint b = c + tid, v = b < 256u ? hist[b] : 0u, total;
        uint before = below + group_scan(v, &total, scan) - v;
        if (b < 256u && before < need && need <= before + v) {
            sh[0] = b;
            sh[1] = need - before;
        }
        below += total;
        barrier(CLK_LOCAL_MEM_FENCE); // scan is rewritten by the next chunk
    }
}

// The k-th smallest key of the row's n and how many keys equal to it the
// k best take (*need). Every work-item returns the same.
static uint kth_key(bool held, __global const uint *scores, uint base, __local const uint *keys,
                    uint n, uint k, uint *need, __local uint *hist, __local uint *sh,
                    __local uint *scan)
{
    uint tid = (uint)get_local_id(0);
    uint prefix = 0u, mask = 0u;
    *need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint b = tid; b < 256u; b += LKV_WG)
            hist[b] = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        // A chunk of LKV_WG slots a round, as the placement: PoCL 3.1
        // miscompiles the strided loop (i += LKV_WG) once it reads keys[],
        // losing the counts of rows shorter than the work-group.
        for (uint c = 0u; c < n; c += LKV_WG) {
            uint i = c + tid;
            if (i < n) {
                uint key = key_at(held, scores, base, keys, i);
                if ((key & mask) == prefix)
                    atomic_inc(&hist[(key >> (uint)shift) & 255u]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        find_digit(hist, *need, sh, scan);
        barrier(CLK_LOCAL_MEM_FENCE);
        prefix |= sh[0] << (uint)shift;
        mask |= 255u << (uint)shift;
        *need = sh[1];
        // sh and hist are rewritten by the next pass.
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return prefix;
}

// Inclusive prefix sum of `mine` over the work-group (Hillis-Steele in
// local memory); returns it, and the group's total in *total.
static uint group_scan(uint mine, uint *total, __local uint *scan)
{
    uint tid = (uint)get_local_id(0);
    scan[tid] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1u; off < LKV_WG; off <<= 1u) {
        uint add = tid >= off ? scan[tid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[tid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint incl = scan[tid];
    *total = scan[LKV_WG - 1u];
    return incl;
}

LKV_KERNEL lkv_select(LKV_BIND(uint, list), LKV_BIND(uint, scores), LKV_BIND(uint, kept),
                  uint cap, uint meta_skew, uint row_base)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, scores); // f32 bits
    LKV_OPEN(uint, kept);
    __local uint keys[SELECT_CHUNK];
    __local uint hist[256];
    __local uint sh[2]; // the pass's digit and what is still needed
    __local uint scan[LKV_WG];
    uint tid = (uint)get_local_id(0);
    uint r = (uint)get_group_id(0);
    uint row = list[3u * r], n = list[3u * r + 1u], k = list[3u * r + 2u];
    uint base = META_INDEX(row, 0u);
    if (k == 0u)
        return;
    bool take_all = k >= n;
    uint need = k, prefix = 0u;
    bool held = !take_all && n <= SELECT_CHUNK; // the same in the whole work-group
    for (uint i = tid; held && i < n; i += LKV_WG)
        keys[i] = key_of(scores[base + i]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!take_all)
        prefix = kth_key(held, scores, base, keys, n, k, &need, hist, sh, scan);
    // prefix is now the k-th key; keep keys < prefix and `need` of the keys
    // == prefix, the lowest slots first.
    uint kept_total = 0u, eq_total = 0u;
    for (uint c = 0u; c < n; c += LKV_WG) {
        uint i = c + tid;
        uint less = 0u, eq = 0u;
        if (i < n) {
            if (take_all) {
                less = 1u;
            } else {
                uint key = key_at(held, scores, base, keys, i);
                less = key < prefix ? 1u : 0u;
                eq = key == prefix ? 1u : 0u;
            }
        }
        // Both counts in one word: a chunk holds at most LKV_WG < 2^16 slots.
        uint mine = less | (eq << 16u);
        uint total;
        uint before = group_scan(mine, &total, scan) - mine;
        uint take_left = need > eq_total ? need - eq_total : 0u;
        uint less_before = before & 0xffffu, eq_before = before >> 16u;
        if (less == 1u || (eq == 1u && eq_before < take_left))
            kept[base + kept_total + less_before + min(eq_before, take_left)] = i;
        kept_total += (total & 0xffffu) + min(total >> 16u, take_left);
        eq_total += total >> 16u;
        // The next chunk's scan overwrites what this one read.
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
