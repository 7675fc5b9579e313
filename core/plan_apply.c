/* lkv_plan_apply: an eviction plan applied to K/V the engine owns, in host
 * memory, dense or paged. Everything is checked before the first byte
 * moves; then each row moves its kept slots down in ascending order, which
 * is safe in place because kept[j] >= j. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kv_layout.h"
#include "plan_registry.h"

/* A row whose kept list is on the device: every slot it may keep. */
static lkv_status check_counts_row(const lkv_plan_row *r, int32_t i, const lkv_kv_layout *kv,
                                   const char *call)
{
    int32_t bs = kv->block_size;
    for (int32_t j = 0; bs > 0 && j < r->n_before; j += bs)
        if (lkv_kv_layout_slot(kv, r->sequence, j, NULL, 0) == (size_t)-1)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: row %d: sequence %d slot %d (of the %d it held) has no block in "
                            "the table (max_blocks %d, n_blocks %d)",
                            call, i, r->sequence, j, r->n_before, kv->max_blocks, kv->n_blocks);
    return LKV_OK;
}

static lkv_status check_row(const lkv_plan_row *r, int32_t i, const lkv_kv_layout *kv,
                            int on_device, const char *call)
{
    if (r->sequence < 0 || r->sequence >= kv->sequences || r->layer < 0 ||
        r->layer >= kv->layers || r->head < 0 || r->head >= kv->heads)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: row %d names sequence %d layer %d head %d, outside the "
                        "layout's %d x %d x %d",
                        call, i, r->sequence, r->layer, r->head, kv->sequences, kv->layers, kv->heads);
    if (r->n_kept < 0 || r->n_kept > r->n_before || r->first_move < 0 ||
        r->first_move > r->n_kept || (r->n_kept > 0 && !r->kept && !on_device))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: row %d keeps %d of %d slots from %d: not a plan row", call, i,
                        r->n_kept, r->n_before, r->first_move);
    int64_t room = (int64_t)kv->max_blocks * kv->block_size;
    if (kv->block_size > 0 && r->n_before > room)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: row %d held %d slots, beyond the layout's room for %lld (max_blocks "
                        "%d of block_size %d)",
                        call, i, r->n_before, (long long)room, kv->max_blocks, kv->block_size);
    if (on_device)
        return check_counts_row(r, i, kv, call);
    for (int32_t j = 0; j < r->n_kept; j++) {
        int32_t src = r->kept[j];
        if (src < j || src >= r->n_before || (j > 0 && src <= r->kept[j - 1]) ||
            (j < r->first_move && src != j))
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: row %d kept[%d] = %d: kept slots must ascend, be "
                            "below n_before %d, and equal their index before first_move %d",
                            call, i, j, src, r->n_before, r->first_move);
        int32_t missing = -1;
        if (lkv_kv_layout_slot(kv, r->sequence, src, NULL, 0) == (size_t)-1)
            missing = src;
        else if (j >= r->first_move &&
                 lkv_kv_layout_slot(kv, r->sequence, j, NULL, 0) == (size_t)-1)
            missing = j; /* the slot it moves to */
        if (missing >= 0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "%s: row %d: sequence %d slot %d has no block in the "
                            "table (max_blocks %d, n_blocks %d)",
                            call, i, r->sequence, missing, kv->max_blocks, kv->n_blocks);
    }
    return LKV_OK;
}

static void move_row(const lkv_plan_row *r, const lkv_kv_layout *kv)
{
    size_t bytes = (size_t)kv->head_dim * lkv_dtype_size(kv->dtype);
    size_t head = (size_t)r->head * kv->head_stride;
    unsigned char *k = kv->k_layers[r->layer], *v = kv->v_layers[r->layer];
    for (int32_t j = r->first_move; j < r->n_kept; j++) {
        size_t dst = lkv_kv_layout_slot(kv, r->sequence, j, NULL, 0) + head;
        size_t src = lkv_kv_layout_slot(kv, r->sequence, r->kept[j], NULL, 0) + head;
        memmove(k + dst, k + src, bytes);
        memmove(v + dst, v + src, bytes);
    }
}

/* Per sequence: the most slots any of its rows held before and keeps
 * after, and how many of its rows the plan covers. */
typedef struct seq_span {
    int32_t before, after, rows;
} seq_span;

static void plan_spans(const lkv_eviction_plan *plan, seq_span *span)
{
    for (int32_t i = 0; i < plan->n_rows; i++) {
        seq_span *s = &span[plan->rows[i].sequence];
        s->before = plan->rows[i].n_before > s->before ? plan->rows[i].n_before : s->before;
        s->after = plan->rows[i].n_kept > s->after ? plan->rows[i].n_kept : s->after;
        s->rows++;
    }
}

/* The table entries a sequence's new length empties: [*first, *end). None
 * when some layer or head of it is not in the plan: that row still holds
 * its slots. */
static void emptied(const lkv_kv_layout *kv, const seq_span *s, int32_t *first, int32_t *end)
{
    int32_t bs = kv->block_size;
    *first = (s->after + bs - 1) / bs;
    *end = s->rows < kv->layers * kv->heads ? *first : (s->before + bs - 1) / bs;
}

/* Counts the freed blocks, checks the room, then lists them. */
static lkv_status freed_blocks(const lkv_kv_layout *kv, const seq_span *span, int32_t *out,
                               int32_t cap, int32_t *out_n, const char *call)
{
    int32_t n = 0, first, end;
    for (int32_t s = 0; s < kv->sequences; s++) {
        emptied(kv, &span[s], &first, &end);
        n += end - first;
    }
    if (out && n > cap)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: out_freed has room for %d blocks; the plan frees %d", call, cap, n);
    for (int32_t s = 0, k = 0; out && s < kv->sequences; s++) {
        emptied(kv, &span[s], &first, &end);
        for (int32_t b = first; b < end; b++)
            out[k++] = kv->block_table[(size_t)s * (size_t)kv->max_blocks + (size_t)b];
    }
    *out_n = n;
    return LKV_OK;
}

/* Every entry of a paged table names a block of the pool or none
 * (negative), and no block the plan writes a slot of (slots first_move ..
 * n_kept-1 of a row; from slot 0 when the kept lists are on the device) is
 * named twice in the whole table: an engine may share the blocks of an
 * unwritten prefix between sequences, not those the plan moves slots in. */
static lkv_status check_table(const lkv_eviction_plan *plan, const lkv_kv_layout *kv,
                              int on_device, const char *call)
{
    int32_t *named = calloc((size_t)kv->n_blocks, sizeof *named);
    if (!named)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory for %d blocks", call,
                        kv->n_blocks);
    lkv_status st = LKV_OK;
    size_t entries = (size_t)kv->sequences * (size_t)kv->max_blocks;
    for (size_t e = 0; e < entries && st == LKV_OK; e++) {
        int32_t b = kv->block_table[e];
        if (b >= kv->n_blocks)
            st = lkv_fail(LKV_INVALID_ARGUMENT,
                          "%s: block_table[%zu][%zu] = %d is outside the pool of n_blocks %d "
                          "(a negative entry holds no block)",
                          call, e / (size_t)kv->max_blocks, e % (size_t)kv->max_blocks, b,
                          kv->n_blocks);
        else if (b >= 0)
            named[b]++;
    }
    int32_t bs = kv->block_size;
    for (int32_t i = 0; i < plan->n_rows && st == LKV_OK; i++) {
        const lkv_plan_row *r = &plan->rows[i];
        int32_t first = on_device ? 0 : r->first_move;
        const int32_t *row = kv->block_table + (size_t)r->sequence * (size_t)kv->max_blocks;
        for (int32_t e = first / bs; first < r->n_kept && e <= (r->n_kept - 1) / bs; e++)
            if (row[e] >= 0 && named[row[e]] > 1) {
                st = lkv_fail(LKV_INVALID_ARGUMENT,
                              "%s: row %d moves slots into block %d (sequence %d, entry %d), "
                              "which the block table names %d times: a block the plan writes "
                              "must be its sequence's alone (copy a shared block first)",
                              call, i, row[e], r->sequence, e, named[row[e]]);
                break;
            }
    }
    free(named);
    return st;
}

/* The most slots a row of the plan held (at least 1): what a dense
 * layout's rows must have room for. */
static int32_t most_held(const lkv_eviction_plan *plan)
{
    int32_t most = 1;
    for (int32_t i = 0; i < plan->n_rows; i++)
        most = plan->rows[i].n_before > most ? plan->rows[i].n_before : most;
    return most;
}

lkv_status lkv_plan_check(const lkv_eviction_plan *plan, const lkv_kv_layout *kv, int buffers,
                          int32_t *out_freed, int32_t freed_cap, int32_t *out_n_freed,
                          const char *call)
{
    if (!plan || !kv)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call, !plan ? "plan" : "kv");
    if (plan->n_rows < 0 || (plan->n_rows > 0 && !plan->rows))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: plan of %d rows without rows", call,
                        plan->n_rows);
    int on_device = buffers & LKV_PLAN_KEPT_ON_DEVICE;
    /* a stale plan's rows may be freed: nothing of them is read before this */
    lkv_status st = lkv_plan_check_identity(plan, kv->layers, kv->heads, kv->head_dim, "layout",
                                            call);
    if (st == LKV_OK)
        st = lkv_kv_layout_check(kv, buffers & (LKV_LAYOUT_K | LKV_LAYOUT_V), call);
    for (int32_t i = 0; i < plan->n_rows && st == LKV_OK; i++)
        st = check_row(&plan->rows[i], i, kv, on_device, call);
    if (st == LKV_OK)
        st = lkv_kv_layout_check_disjoint(kv, most_held(plan), call);
    if (st == LKV_OK && kv->block_size > 0)
        st = check_table(plan, kv, on_device, call);
    if (st != LKV_OK)
        return st;
    *out_n_freed = 0;
    if (kv->block_size == 0)
        return LKV_OK;
    seq_span *span = calloc((size_t)kv->sequences, sizeof *span);
    if (!span)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s: out of host memory", call);
    plan_spans(plan, span);
    st = freed_blocks(kv, span, out_freed, freed_cap, out_n_freed, call);
    free(span);
    return st;
}

lkv_status lkv_plan_apply(const lkv_eviction_plan *plan, const lkv_kv_layout *kv,
                          int32_t *out_freed, int32_t freed_cap, int32_t *out_n_freed)
{
    lkv_clear_error();
    int32_t n_freed = 0;
    lkv_status st = lkv_plan_check(plan, kv, LKV_LAYOUT_K | LKV_LAYOUT_V, out_freed, freed_cap,
                                   &n_freed, "lkv_plan_apply");
    if (st != LKV_OK)
        return st;
    for (int32_t i = 0; i < plan->n_rows; i++)
        move_row(&plan->rows[i], kv);
    if (out_n_freed)
        *out_n_freed = n_freed;
    return LKV_OK;
}
