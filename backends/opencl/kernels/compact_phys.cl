// compact, the hole map of a cache that fills holes: mirrors
// backends/vulkan/shaders/compact_phys.comp. No K/V moves; each listed
// row's map entries of the n slots it held move as the oracle's do
// (backends/ref/ref_compact.c): the kept slots' entries to the front in
// kept order, then the evicted slots' in ascending slot order, so the
// places they held are the next tokens'. Each slot s finds its own
// destination: kept (at the index where a binary search of the ascending
// kept list finds it) or the (s - kept slots below s)-th evicted one, after
// the k kept. An evicted entry can land on a slot whose entry another
// work-item has yet to read, so phase 0 scatters every entry of the row into
// scratch and phase 1 (the next launch) copies the row back.
// Launch: x = blocks striding over the slots, y = listed rows. list: (row,
// k, n) per row; scratch: [listed row][cap].

// How many of kept[base .. base + k) (ascending) are below s.
static uint kept_below(__global const uint *kept, uint base, uint k, uint s)
{
    uint lo = 0u, hi = k;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (kept[base + mid] < s)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

LKV_KERNEL lkv_compact_phys(LKV_BIND(const uint, list), LKV_BIND(const uint, kept),
                            LKV_BIND(uint, phys), LKV_BIND(uint, scratch), uint cap,
                            uint meta_skew, uint row_base,
                            uint phase) // 0 scatter to scratch, 1 copy back
{
    LKV_OPEN(const uint, list);
    LKV_OPEN(const uint, kept);
    LKV_OPEN(uint, phys);
    LKV_OPEN(uint, scratch);
    uint r = (uint)get_group_id(1);
    uint row = list[3u * r], k = list[3u * r + 1u], n = list[3u * r + 2u];
    uint base = META_INDEX(row, 0u);
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint s = (uint)get_global_id(0); s < n; s += stride) {
        if (phase == 0u) {
            uint below = kept_below(kept, base, k, s);
            uint dst = below < k && kept[base + below] == s ? below : k + (s - below);
            scratch[r * cap + dst] = phys[base + s];
        } else {
            phys[base + s] = scratch[r * cap + s];
        }
    }
}
