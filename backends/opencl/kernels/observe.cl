// observe: mirrors backends/vulkan/shaders/observe.comp. Per listed row and valid slot, the
// policy state update from this step's probability: integer updates and one
// f32 add or assignment, as on the CPU, so the results are bit-identical to
// the oracle. Launch: x = slot blocks, y = listed rows. list: (row, n, t) per row: t its own step, as a
// batch of sequences at different steps needs (the push constant t unused).
// The kinds' names come from core/op_kinds.h, written above lkv_cl.h.

static void observe_slot(__global const float *probs, __global int *last, __global int *mri,
                         __global float *state, uint x, uint kind, int t, float alpha)
{
    float p = probs[x];
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
    for (uint i = (uint)get_global_id(0); i < n; i += stride)
        observe_slot(probs, last, mri, state, META_INDEX(row, i), kind, t, alpha);
}
