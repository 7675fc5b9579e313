/* lkv_kv_layout: checks and slot offsets (kv_layout.h). */
#include "kv_layout.h"

#include "error.h"

lkv_status lkv_kv_layout_check(const lkv_kv_layout *kv, int buffers, const char *call)
{
    if (!lkv_dtype_name(kv->dtype))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: dtype %d is not a lkv_dtype", call,
                        (int)kv->dtype);
    if (kv->head_dim < 1 || kv->layers < 1 || kv->heads < 1 || kv->sequences < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: head_dim %d, layers %d, heads %d, sequences %d: each must be >= 1",
                        call, kv->head_dim, kv->layers, kv->heads, kv->sequences);
    int need_k = buffers & LKV_LAYOUT_K, need_v = buffers & LKV_LAYOUT_V;
    if ((need_k && !kv->k_layers) || (need_v && !kv->v_layers))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call,
                        need_k && !kv->k_layers ? "k_layers" : "v_layers");
    for (int32_t l = 0; l < kv->layers; l++)
        if ((need_k && !kv->k_layers[l]) || (need_v && !kv->v_layers[l]))
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s[%d] is NULL", call,
                            need_k && !kv->k_layers[l] ? "k_layers" : "v_layers", l);
    if (kv->block_size < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: block_size %d is negative", call,
                        kv->block_size);
    if (kv->block_size > 0 && (!kv->block_table || kv->max_blocks < 1 || kv->n_blocks < 1))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: a paged layout (block_size %d) needs block_table, max_blocks (%d) "
                        "and n_blocks (%d)",
                        call, kv->block_size, kv->max_blocks, kv->n_blocks);
    return LKV_OK;
}

/* One index of the layout: how many values it takes and its stride. */
typedef struct layout_dim {
    const char *name;
    int32_t count;
    size_t stride;
} layout_dim;

lkv_status lkv_kv_layout_check_disjoint(const lkv_kv_layout *kv, int32_t n_slots,
                                        const char *call)
{
    int paged = kv->block_size > 0;
    layout_dim dims[3] = {
        paged ? (layout_dim){"block_stride", kv->n_blocks, kv->block_stride}
              : (layout_dim){"seq_stride", kv->sequences, kv->seq_stride},
        {"slot_stride", paged ? kv->block_size : n_slots, kv->slot_stride},
        {"head_stride", kv->heads, kv->head_stride},
    };
    for (int i = 1; i < 3; i++) /* by stride, ascending */
        for (int j = i; j > 0 && dims[j].stride < dims[j - 1].stride; j--) {
            layout_dim t = dims[j];
            dims[j] = dims[j - 1], dims[j - 1] = t;
        }
    uint64_t span = (uint64_t)kv->head_dim * lkv_dtype_size(kv->dtype), reach = span;
    for (int i = 0; i < 3; i++) {
        if (dims[i].count < 2) /* one value: its stride is never taken */
            continue;
        if (dims[i].stride < reach)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: %s %zu is below the %llu bytes it steps over (a head is %llu: "
                            "head_dim %d of %s; seq_stride %zu, slot_stride %zu, head_stride "
                            "%zu, block_stride %zu; %d slots a %s): elements would overlap",
                            call, dims[i].name, dims[i].stride, (unsigned long long)reach,
                            (unsigned long long)span, kv->head_dim, lkv_dtype_name(kv->dtype),
                            kv->seq_stride, kv->slot_stride, kv->head_stride, kv->block_stride,
                            paged ? kv->block_size : n_slots, paged ? "block" : "row");
        uint64_t steps = (uint64_t)(dims[i].count - 1);
        if (dims[i].stride > (UINT64_MAX - reach) / steps)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s %zu times %d does not fit in 64 bits",
                            call, dims[i].name, dims[i].stride, dims[i].count);
        reach += steps * dims[i].stride;
    }
    return LKV_OK;
}

lkv_status lkv_kv_layout_check_words(const lkv_kv_layout *kv, const char *call)
{
    size_t span = (size_t)kv->head_dim * lkv_dtype_size(kv->dtype);
    const size_t strides[4] = {kv->seq_stride, kv->slot_stride, kv->head_stride,
                               kv->block_stride};
    const char *names[4] = {"seq_stride", "slot_stride", "head_stride", "block_stride"};
    if (span % 4)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: a head's %zu bytes (head_dim %d of %s) are not whole 32-bit words",
                        call, span, kv->head_dim, lkv_dtype_name(kv->dtype));
    for (int i = 0; i < 4; i++)
        if (strides[i] % 4)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s %zu is not a multiple of 4 bytes",
                            call, names[i], strides[i]);
    return LKV_OK;
}

size_t lkv_kv_layout_slot(const lkv_kv_layout *kv, int32_t s, int32_t j, const int32_t *table,
                          int32_t n_table)
{
    if (kv->block_size == 0)
        return (size_t)s * kv->seq_stride + (size_t)j * kv->slot_stride;
    if (!table) {
        table = kv->block_table + (size_t)s * (size_t)kv->max_blocks;
        n_table = kv->max_blocks;
    }
    int32_t bi = j / kv->block_size;
    if (bi >= n_table)
        return (size_t)-1;
    int32_t b = table[bi];
    if (b < 0 || b >= kv->n_blocks)
        return (size_t)-1;
    return (size_t)b * kv->block_stride + (size_t)(j % kv->block_size) * kv->slot_stride;
}

int32_t lkv_kv_layout_row(const lkv_kv_layout *kv, int32_t seq, int32_t head, int32_t n,
                          uint64_t *out_base, uint64_t *out_reach)
{
    uint64_t span = (uint64_t)kv->head_dim * lkv_dtype_size(kv->dtype), most = 0;
    uint64_t head_at = (uint64_t)head * kv->head_stride;
    *out_base = head_at + (kv->block_size == 0 ? (uint64_t)seq * kv->seq_stride : 0);
    int32_t step = kv->block_size > 0 ? kv->block_size : (n > 0 ? n : 1);
    for (int32_t j = 0; j < n; j += step) {
        int32_t last = j + step - 1 < n - 1 ? j + step - 1 : n - 1;
        size_t at = lkv_kv_layout_slot(kv, seq, last, NULL, 0);
        if (at == (size_t)-1)
            return last;
        uint64_t end = (uint64_t)at + head_at + span;
        most = end > most ? end : most;
    }
    *out_reach = most;
    return -1;
}

lkv_engine_slots lkv_kv_layout_slots(const lkv_kv_layout *kv, const uint32_t *base,
                                     const int32_t *tab_row)
{
    int paged = kv->block_size > 0;
    return (lkv_engine_slots){
        .base = base, .tab_row = paged ? tab_row : NULL,
        .slot_stride = (uint32_t)(kv->slot_stride / 4),
        .block_stride = (uint32_t)(kv->block_stride / 4), .block_size = kv->block_size,
        .table = paged ? kv->block_table : NULL, .table_rows = kv->sequences,
        .max_blocks = kv->max_blocks,
    };
}
