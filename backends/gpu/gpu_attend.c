/* attend on CUDA/HIP: flash-decoding in three launches per batch of groups
 * (kernels/attend.cu says what each computes and how it differs from the CPU):
 *   lkv_attend_split_*   a split's logits, then its partials m, l, o
 *   lkv_attend_combine   out and the log-sum-exp per query head
 *   lkv_attend_probs     per-slot probabilities, combined per cache head
 *
 * Groups are batched, three launches for many groups rather than three per
 * group as on Vulkan: a batch of short caches then still fills the device,
 * and launches stay few when a caller attends every sequence of a layer at
 * once. The kernels find their group from prefix sums of slots and splits
 * uploaded with the group lists. A batch ends where its logits would pass
 * ATTEND_BATCH_BYTES (unless it is one group), so scratch stays bounded
 * however many groups a call lists; the grids stay within the device's
 * limits because a batch has at most max_grid_z groups.
 *
 * Everything that can fail for want of memory (scratch, the lists) happens
 * before the first launch, so a failed call changes nothing. */
#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "gpu_internal.h"

#define ATTEND_BLOCK 256u         /* threads of a split or probs block */
#define ATTEND_QBLOCK 8           /* query heads per split block (LKV_ATT_QBLOCK) */
#define ATTEND_DIM_MAX 1024       /* the V pass holds at most 4 columns per thread */
#define ATTEND_SPLIT_MIN 256      /* a shorter split costs more to merge than it saves */
#define ATTEND_MAX_SPLITS 1024    /* per group, so the combine's loop stays short */
#define ATTEND_BLOCKS_PER_SM 8    /* split blocks wanted per multiprocessor */
#define ATTEND_BATCH_BYTES ((int64_t)64 << 20) /* logits of one batch */
#define ATTEND_BATCH_GROUPS 65535

typedef struct attend_batch {
    int32_t first, count; /* groups [first, first + count) of the call */
    int64_t slots;        /* their valid slots, summed */
    int32_t max_n;
    int32_t split_len;
    int64_t splits; /* sum over the groups of ceil(n / split_len) */
} attend_batch;

typedef struct attend_shape {
    int32_t per, qblocks, dim, cap;
    size_t elem;
} attend_shape;

static attend_shape shape_of(const lkv_attend_args *a)
{
    attend_shape s;
    s.per = a->q_heads / a->cache_heads;
    s.qblocks = (s.per + ATTEND_QBLOCK - 1) / ATTEND_QBLOCK;
    s.dim = a->cache->head_dim;
    s.cap = a->cache->capacity;
    s.elem = a->cache->dtype == LKV_DTYPE_F16 ? 2 : 4;
    return s;
}

static lkv_status check_shape(const lkv_device *d, const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    const char *drv = d->drv->name;
    if (a->n_groups < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: n_groups %d is negative", drv,
                        a->n_groups);
    if (a->cache_heads < 1 || a->q_heads < a->cache_heads || a->q_heads % a->cache_heads)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: q_heads %d is not a positive multiple "
                        "of cache_heads %d", drv, a->q_heads, a->cache_heads);
    if (c->dtype != LKV_DTYPE_F32 && c->dtype != LKV_DTYPE_F16)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: K/V dtype %d: only f32 and f16", drv,
                        (int)c->dtype);
    if (c->head_dim < 1 || c->head_dim > ATTEND_DIM_MAX)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: head_dim %d outside 1..%d", drv, c->head_dim,
                        ATTEND_DIM_MAX);
    if (c->capacity < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: capacity %d", drv, c->capacity);
    attend_shape s = shape_of(a);
    if ((uint64_t)a->cache_heads * (uint64_t)s.qblocks > d->lim.max_grid_y)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: %d cache heads x %d query-head blocks "
                        "exceed the device's grid y limit %u", drv, a->cache_heads, s.qblocks,
                        (unsigned)d->lim.max_grid_y);
    return LKV_OK;
}

/* The kernels trust every index, so one outside a buffer is caught here:
 * on a GPU it would be a fault that loses the context. */
static lkv_status check_buffers(const lkv_device *d, const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    const char *drv = d->drv->name;
    attend_shape s = shape_of(a);
    if (!a->q || !c->k || !c->v)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: q, K or V buffer missing", drv);
    uint64_t io = (uint64_t)a->n_groups * (uint64_t)a->q_heads * (uint64_t)s.dim * 4;
    if (a->q->size < io || (a->out && a->out->size < io))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: q or out holds fewer than the %llu "
                        "bytes of %d groups x %d query heads x head_dim %d", drv,
                        (unsigned long long)io, a->n_groups, a->q_heads, s.dim);
    uint64_t kv_row = (uint64_t)s.cap * (uint64_t)s.dim * s.elem;
    uint64_t kv_rows = (c->k->size < c->v->size ? c->k->size : c->v->size) / kv_row;
    uint64_t prob_rows = a->probs ? a->probs->size / ((uint64_t)s.cap * 4) : UINT64_MAX;
    uint64_t rows = kv_rows < prob_rows ? kv_rows : prob_rows;
    for (int32_t g = 0; g < a->n_groups; g++) {
        int32_t r0 = a->group_row0[g], n = a->group_n[g];
        if (n < 0 || n > s.cap)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: group %d has %d valid slots, "
                            "outside 0..capacity %d", drv, g, n, s.cap);
        if (r0 < 0 || (uint64_t)r0 + (uint64_t)a->cache_heads > rows)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: group %d rows %d..%d outside the "
                            "%llu rows of K, V%s", drv, g, r0, r0 + a->cache_heads - 1,
                            (unsigned long long)rows, a->probs ? " and probs" : "");
    }
    return LKV_OK;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Splits: enough blocks of the batch to fill the device (ATTEND_BLOCKS_PER_SM
 * per multiprocessor), none shorter than ATTEND_SPLIT_MIN slots and at most
 * ATTEND_MAX_SPLITS per group; lengths in whole blocks of slots. */
static int32_t split_len_of(const lkv_device *d, const lkv_attend_args *a, const attend_batch *b)
{
    attend_shape s = shape_of(a);
    int64_t units = (int64_t)a->cache_heads * s.qblocks;
    int64_t target = (int64_t)(d->lim.multiprocessors > 0 ? d->lim.multiprocessors : 1) *
                     ATTEND_BLOCKS_PER_SM;
    int64_t len = ceil_div(b->slots * units, target);
    if (len < ATTEND_SPLIT_MIN)
        len = ATTEND_SPLIT_MIN;
    if (len < ceil_div(b->max_n, ATTEND_MAX_SPLITS))
        len = ceil_div(b->max_n, ATTEND_MAX_SPLITS);
    return (int32_t)(ceil_div(len, ATTEND_BLOCK) * ATTEND_BLOCK);
}

/* The batch that starts at group `first`: as many groups as fit
 * ATTEND_BATCH_BYTES of logits and the grid, at least one. */
static attend_batch batch_at(const lkv_device *d, const lkv_attend_args *a, int32_t first)
{
    attend_batch b = {first, 0, 0, 0, 0, 0};
    int64_t most = d->lim.max_grid_z < ATTEND_BATCH_GROUPS ? d->lim.max_grid_z : ATTEND_BATCH_GROUPS;
    while (first + b.count < a->n_groups && b.count < most) {
        int32_t n = a->group_n[first + b.count];
        if (b.count > 0 && (b.slots + n) * a->q_heads * 4 > ATTEND_BATCH_BYTES)
            break;
        b.slots += n;
        b.max_n = n > b.max_n ? n : b.max_n;
        b.count++;
    }
    b.split_len = split_len_of(d, a, &b);
    for (int32_t g = first; g < first + b.count; g++)
        b.splits += ceil_div(a->group_n[g], b.split_len);
    return b;
}

/* The plan of a call: its batches' prefix sums (each batch's own, one entry
 * more than its groups, laid end to end: batch k's start at first + k) and
 * the scratch the largest batch needs. */
typedef struct attend_plan {
    int32_t *slot_off, *split_off; /* n_groups + batches entries each */
    int32_t batches;
    size_t logits_bytes, partial_bytes, lse_bytes;
} attend_plan;

static lkv_status plan_call(const lkv_device *d, const lkv_attend_args *a, attend_plan *p)
{
    attend_shape s = shape_of(a);
    size_t entries = 2 * (size_t)a->n_groups;
    p->slot_off = malloc(sizeof(int32_t) * 2 * entries);
    if (!p->slot_off)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s attend: no host memory for the lists of %d groups",
                        d->drv->name, a->n_groups);
    p->split_off = p->slot_off + entries;
    p->batches = 0;
    p->logits_bytes = p->partial_bytes = p->lse_bytes = 16;
    for (int32_t first = 0; first < a->n_groups; p->batches++) {
        attend_batch b = batch_at(d, a, first);
        int32_t *so = p->slot_off + first + p->batches, *sp = p->split_off + first + p->batches;
        so[0] = sp[0] = 0;
        for (int32_t i = 0; i < b.count; i++) {
            int32_t n = a->group_n[first + i];
            so[i + 1] = so[i] + n;
            sp[i + 1] = sp[i] + (int32_t)ceil_div(n, b.split_len);
        }
        size_t logits = (size_t)b.slots * (size_t)a->q_heads * 4;
        size_t partials = (size_t)b.splits * (size_t)a->q_heads * ((size_t)s.dim + 2) * 4;
        size_t lse = (size_t)b.count * (size_t)a->q_heads * 4;
        p->logits_bytes = logits > p->logits_bytes ? logits : p->logits_bytes;
        p->partial_bytes = partials > p->partial_bytes ? partials : p->partial_bytes;
        p->lse_bytes = lse > p->lse_bytes ? lse : p->lse_bytes;
        first += b.count;
    }
    return LKV_OK;
}

/* The vector kernels load 16 bytes at a time: every K/V row and q vector
 * must start on a 16-byte boundary (head_dim a multiple of 8 halves or 4
 * floats, buffers allocated aligned). */
static lkv_gpu_kernel_id split_kernel(const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    int f16 = c->dtype == LKV_DTYPE_F16;
    int aligned = c->head_dim % (f16 ? 8 : 4) == 0 &&
                  ((c->k->ptr | c->v->ptr | a->q->ptr) & 15) == 0;
    if (f16)
        return aligned ? LKV_GPU_K_lkv_attend_split_f16_vec : LKV_GPU_K_lkv_attend_split_f16;
    return aligned ? LKV_GPU_K_lkv_attend_split_f32_vec : LKV_GPU_K_lkv_attend_split_f32;
}

/* The launch lists of the call, uploaded once: group_row0, group_n (by the
 * call's group index) and the per-batch prefix sums. */
typedef struct attend_lists {
    lkv_gpu_ptr row0, n, slot_off, split_off;
} attend_lists;

static lkv_status launch_batch(lkv_device *d, const lkv_attend_args *a, const attend_batch *b,
                               const attend_lists *l, int32_t batch_index)
{
    attend_shape s = shape_of(a);
    const lkv_cache_buffers *c = a->cache;
    lkv_gpu_ptr k = c->k->ptr, v = c->v->ptr, logits = d->logits->ptr;
    lkv_gpu_ptr part = d->partials->ptr, lse = d->lse->ptr;
    uint64_t io_off = (uint64_t)b->first * (uint64_t)a->q_heads * (uint64_t)s.dim * 4;
    lkv_gpu_ptr q = a->q->ptr + io_off, out = a->out ? a->out->ptr + io_off : 0;
    lkv_gpu_ptr row0 = l->row0 + (lkv_gpu_ptr)b->first * 4, gn = l->n + (lkv_gpu_ptr)b->first * 4;
    lkv_gpu_ptr so = l->slot_off + ((lkv_gpu_ptr)b->first + (lkv_gpu_ptr)batch_index) * 4;
    lkv_gpu_ptr sp = l->split_off + ((lkv_gpu_ptr)b->first + (lkv_gpu_ptr)batch_index) * 4;
    int32_t groups = b->count, cap = s.cap, dim = s.dim, heads = a->cache_heads, per = s.per;
    int32_t split_len = b->split_len, q_heads = a->q_heads, has_out = a->out != NULL;
    int32_t reduce_max = a->reduce == LKV_REDUCE_MAX;
    float scale = a->scale;

    void *split_args[] = {&k, &v, &q, &logits, &part, &row0, &gn, &so, &sp, &groups, &cap, &dim,
                          &heads, &per, &split_len, &scale};
    lkv_status st = lkv_gpu_launch_kernel(d, split_kernel(a), (uint32_t)b->splits,
                                          (uint32_t)(heads * s.qblocks), 1, ATTEND_BLOCK,
                                          split_args);
    /* Threads over head_dim; whole warps of either width. */
    uint32_t combine_block = (uint32_t)(dim + 63) / 64 * 64;
    combine_block = combine_block > ATTEND_BLOCK ? ATTEND_BLOCK : combine_block;
    void *combine_args[] = {&part, &out, &lse, &sp, &q_heads, &dim, &has_out};
    if (st == LKV_OK)
        st = lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_attend_combine,
                                   (uint32_t)groups * (uint32_t)q_heads, 1, 1, combine_block,
                                   combine_args);
    if (st != LKV_OK || !a->probs || b->max_n == 0)
        return st;
    lkv_gpu_ptr probs = a->probs->ptr;
    void *probs_args[] = {&logits, &lse, &probs, &row0, &gn, &so, &cap, &heads, &per, &reduce_max};
    return lkv_gpu_launch_kernel(d, LKV_GPU_K_lkv_attend_probs,
                                 (uint32_t)ceil_div(b->max_n, ATTEND_BLOCK), (uint32_t)heads,
                                 (uint32_t)groups, ATTEND_BLOCK, probs_args);
}

static lkv_status run_plan(lkv_device *d, const lkv_attend_args *a, const attend_plan *p)
{
    lkv_status st = lkv_gpu_reserve(d, &d->logits, p->logits_bytes);
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->partials, p->partial_bytes);
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->lse, p->lse_bytes);
    const int32_t *host[4] = {a->group_row0, a->group_n, p->slot_off, p->split_off};
    size_t entries = (size_t)a->n_groups + (size_t)p->batches;
    size_t counts[4] = {(size_t)a->n_groups, (size_t)a->n_groups, entries, entries};
    lkv_gpu_ptr ptrs[4];
    if (st == LKV_OK)
        st = lkv_gpu_upload(d, 4, host, counts, ptrs);
    if (st != LKV_OK)
        return st;
    attend_lists lists = {ptrs[0], ptrs[1], ptrs[2], ptrs[3]};
    int32_t first = 0;
    for (int32_t k = 0; k < p->batches; k++) {
        attend_batch b = batch_at(d, a, first);
        st = launch_batch(d, a, &b, &lists, k);
        if (st != LKV_OK)
            return lkv_fail_context(st, "%s attend (groups %d..%d, %d slots at most)",
                                    d->drv->name, b.first, b.first + b.count - 1, b.max_n);
        first += b.count;
    }
    return LKV_OK;
}

lkv_status lkv_gpu_attend(lkv_device *d, const lkv_attend_args *a)
{
    if (a->n_groups == 0)
        return LKV_OK; /* nothing listed, nothing to check: as on the CPU */
    lkv_status st = check_shape(d, a);
    if (st == LKV_OK)
        st = check_buffers(d, a);
    if (st != LKV_OK)
        return st;
    attend_plan p = {0};
    st = plan_call(d, a, &p);
    if (st != LKV_OK)
        return st;
    st = run_plan(d, a, &p);
    free(p.slot_off);
    return st;
}
