/* The ref backend: the plain-C numerical oracle that conformance checks every
 * other backend against, cpu included. Written to be obviously right, not
 * fast (double accumulation, two-pass softmax, a full sort in select); its
 * code is not tuned for speed, and `auto` never picks it. Memory and
 * counters are the host-memory device's (backends/hostmem/). */
#include "ref_ops.h"

static lkv_status ref_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_hostmem_probe("ref", "plain C reference (the oracle)", out, cap, out_count);
    return LKV_OK;
}

static lkv_status ref_open(int device, lkv_device **out_dev)
{
    return lkv_hostmem_open("ref", device, out_dev);
}

/* Every op is one pass, what a GPU backend would launch at least once. */
#define LKV_REF_COUNTED(op, args_type)                                                  \
    static lkv_status ref_##op(lkv_device *dev, const args_type *a)                   \
    {                                                                                 \
        dev->counters.launches++;                                                     \
        return lkv_ref_##op(dev, a);                                                  \
    }
LKV_REF_COUNTED(attend, lkv_attend_args)
LKV_REF_COUNTED(observe, lkv_observe_args)
LKV_REF_COUNTED(score, lkv_score_args)
LKV_REF_COUNTED(select, lkv_select_args)
LKV_REF_COUNTED(compact, lkv_compact_args)
LKV_REF_COUNTED(store, lkv_store_args)
LKV_REF_COUNTED(gather, lkv_gather_args)
LKV_REF_COUNTED(reduce_rows, lkv_reduce_rows_args)
LKV_REF_COUNTED(move_kept, lkv_move_kept_args)
LKV_REF_COUNTED(qk_probs, lkv_qk_probs_args)
LKV_REF_COUNTED(redundancy, lkv_redundancy_args)
#undef LKV_REF_COUNTED

const lkv_backend_ops lkv_backend_ref = {
    .name = "ref",
    .probe = ref_probe,
    .open = ref_open,
    .close = lkv_hostmem_close,
    LKV_HOSTMEM_OPS,
    .attend = ref_attend,
    .observe = ref_observe,
    .score = ref_score,
    .select = ref_select,
    .compact = ref_compact,
    .store = ref_store,
    .gather = ref_gather,
    .reduce_rows = ref_reduce_rows,
    .move_kept = ref_move_kept,
    .qk_probs = ref_qk_probs,
    .redundancy = ref_redundancy,
    .row_steps = 1,
    .holes = 1,
    .paged = 1,
};
