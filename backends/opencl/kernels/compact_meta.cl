// compact, per-slot metadata: mirrors backends/vulkan/shaders/compact_meta.comp. pos,
// state_a, state_b and state_f of the kept slots move to the front in place,
// in the same gather-then-write rounds as compact_kv.cl (see there why this
// is safe), from the first slot that moves. All four are moved as raw 32-bit
// words. Launch: x = blocks of the round's slots, y = listed rows.
// list: (row, k) pairs; scratch: [listed row][round slot][4].

LKV_KERNEL lkv_compact_meta(LKV_BIND(uint, list), LKV_BIND(uint, kept), LKV_BIND(uint, pos),
                        LKV_BIND(uint, sa), LKV_BIND(uint, sb), LKV_BIND(uint, sf),
                        LKV_BIND(uint4, scratch),
                        uint cap, uint meta_skew, uint row_base,
                        uint phase, // 0 gather, 1 write
                        uint round_first, uint round_slots)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, kept);
    LKV_OPEN(uint, pos);
    LKV_OPEN(uint, sa);
    LKV_OPEN(uint, sb);
    LKV_OPEN(uint, sf);
    LKV_OPEN(uint4, scratch);
    uint r = (uint)get_group_id(1);
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint base = META_INDEX(row, 0u);
    uint lo = lkv_first_moved(kept, base, count);
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    uint end = count > round_first ? min(round_slots, count - round_first) : 0u;
    for (uint i = (uint)get_global_id(0); i < end; i += stride) {
        uint j = round_first + i;
        if (j < lo || j >= count)
            continue;
        uint s = r * round_slots + i;
        if (phase == 0u) {
            uint src = base + kept[base + j];
            scratch[s] = (uint4)(pos[src], sa[src], sb[src], sf[src]);
        } else {
            uint4 val = scratch[s];
            pos[base + j] = val.x;
            sa[base + j] = val.y;
            sb[base + j] = val.z;
            sf[base + j] = val.w;
        }
    }
}
