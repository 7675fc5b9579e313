// move_kept: mirrors backends/vulkan/shaders/move_kept.comp. A cache's plan
// applied to an engine's K or V from the kept lists on the device: back 0
// copies each moved slot's words into the scratch, back 1 writes them to
// their slots (kernels on the in-order queue see each other's writes);
// slots kept in place are skipped by both.
// Launch: x = work-groups over the longest row's kept words, y = the run's
// rows. list: (kept_row, n_kept, base, tab_row, at) per row.

LKV_KERNEL lkv_move_kept(LKV_BIND(uint, list), LKV_BIND(uint, table), LKV_BIND(uint, kept),
                         LKV_BIND(uint, buf), LKV_BIND(uint, scratch), uint n, uint words,
                         uint kept_stride, uint kept_skew, uint kept_base, uint slot_stride,
                         uint block_stride, uint block_size, uint max_blocks, uint back)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, table);
    LKV_OPEN(uint, kept);
    LKV_OPEN(uint, buf);
    LKV_OPEN(uint, scratch);
    uint step = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_group_id(1); i < n; i += (uint)get_num_groups(1)) {
        uint row = kept_skew + (list[5u * i] - kept_base) * kept_stride;
        uint total = list[5u * i + 1u] * words, at = list[5u * i + 4u];
        for (uint x = (uint)get_global_id(0); x < total; x += step) {
            uint j = x / words, e = x - j * words, s = kept[row + j];
            if (s == j)
                continue;
            uint w = list[5u * i + 2u], tab = list[5u * i + 3u];
            if (back)
                buf[lkv_engine_slot(table, w, tab, j, slot_stride, block_stride, block_size,
                                    max_blocks) + e] = scratch[at + x];
            else
                scratch[at + x] = buf[lkv_engine_slot(table, w, tab, s, slot_stride,
                                                      block_stride, block_size, max_blocks) + e];
        }
    }
}
