// observe: mirrors backends/vulkan/shaders/observe.comp. Per listed row and valid slot, the
// policy state update from this step's probability (lkv_observe_slot of
// lkv_cl.h, shared with attend_probs.cl): integer updates and one f32 add or
// assignment, as on the CPU, so the results are bit-identical to the oracle.
// Launch: x = slot blocks, y = listed rows. list: (row, n, t) per row: t its
// own step, as a batch of sequences at different steps needs (the push
// constant t unused).
// The kinds' names come from core/op_kinds.h, written above lkv_cl.h.

LKV_KERNEL lkv_observe(LKV_BIND(uint, list), LKV_BIND(float, probs), LKV_BIND(int, last),
                   LKV_BIND(int, mri), LKV_BIND(float, state),
                   uint cap, uint meta_skew, uint row_base,
                   uint kind, // lkv_observe_kind
                   int t, float alpha)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(float, probs);
    LKV_OPEN(int, last);
    LKV_OPEN(int, mri);
    LKV_OPEN(float, state);
    uint r = (uint)get_group_id(1);
    uint row = list[3u * r], n = list[3u * r + 1u];
    t = (int)list[3u * r + 2u]; // the row's own step (rows of a batch may differ)
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_global_id(0); i < n; i += stride) {
        uint x = META_INDEX(row, i);
        lkv_observe_slot(kind, probs[x], x, t, alpha, last, mri, state);
    }
}
