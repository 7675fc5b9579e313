/* attend on CUDA/HIP: flash-decoding in one or two launches per batch of
 * groups (backends/gpu/kernels/attend.cu says what each computes and how it
 * differs from the CPU):
 *   lkv_attend_split_*   a split's logits, then its partials m, l, o;
 *                        combined into out and the log-sum-exp by the
 *                        group's split blocks together (a cooperative
 *                        launch: the driver places every block at once),
 *                        which then write the probabilities; else by the
 *                        last split block
 *   lkv_attend_probs     per-slot probabilities, combined per cache head,
 *                        where the split blocks did not write them
 * An observe (lkv_attend_args.observe) is applied where the probabilities
 * are computed, by the same kernels (attend.cu's lkv_att_sink): no launch
 * of its own, and no probabilities in memory unless probs is given too.
 * LAZYKV_GPU_COOPERATIVE=0 (read when the device is created; 0 or 1) keeps
 * to the second way, so tests cover both.
 *
 * Every group has at least one split, an empty one too (its split block
 * writes its out, 0, and lse, -inf). Groups are batched, two launches for
 * many groups rather than four per group as on Vulkan: a batch of short
 * caches then still fills the device, and launches stay few when a caller
 * attends every sequence of a layer at once. The kernels find their group from prefix sums of slots and splits
 * uploaded with the group lists. A batch ends where its scratch (logits,
 * partials and log-sum-exps) could pass the batch budget, unless it is one
 * group, so scratch stays bounded however many groups a call lists; and
 * where one more group would take a grid dimension of one of its launches
 * past the device's limits.
 *
 * The budget is ATTEND_BATCH_BYTES. For tests, the environment variable
 * LAZYKV_GPU_ATTEND_BATCH_BYTES (an integer in 1..ATTEND_BATCH_BYTES, read
 * when the device is created; any other value fails the open, naming it)
 * makes it smaller, so a call runs as several batches on small caches.
 *
 * Failure. The arguments, every batch's plan and grids, the scratch and the
 * upload of the lists are all checked or done before the first launch: a
 * call that fails on any of them writes nothing the caller can see. Past
 * that point only the driver can fail a launch (refusing it, or reporting
 * an earlier fault there): then out and probs of the batches before the
 * failing one are written, the failing batch's may be partly written and
 * those after it are untouched; K, V and q never are. A kernel fault is
 * sticky on CUDA and HIP, so the device is lost then anyway. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "gpu_internal.h"
#include "lkv_kernel_abi.h"
#include "plan/attend_plan.h"

/* The split length is planned from the whole batch (backends/plan/
 * attend_plan.h, LKV_ATTEND_SPREAD: the batch's slots over the device's
 * workgroup budget), so a sequence of a wide batch is cut into other splits
 * than in its own call and its combine sums in another order: its outputs
 * differ in the last bits (about 1e-7 at 32 sequences of 300 slots) and a
 * probability next to lazy's alpha can flip an observe. The batch family's
 * tolerant cases (batch(...)) hold; its bit-for-bit ones cannot. */
const lkv_backend_deviation lkv_gpu_deviations[] = {
    {NULL, "batch_bits(*",
     "a batch call's attend splits are planned from the whole batch's slots, not per "
     "sequence: outputs differ from the per-sequence calls in the last bits"},
    {NULL, NULL, NULL},
};

/* batch_groups_max and the combine's shared scales count on this */
_Static_assert(LKV_ATTEND_MAX_SPLITS <= LKV_ATT_MAX_SPLITS,
               "the plan's splits per group stay within the kernels' limit");

#define ATTEND_BATCH_BYTES ((int64_t)64 << 20) /* scratch of one batch */
#define ATTEND_BATCH_ENV "LAZYKV_GPU_ATTEND_BATCH_BYTES"
#define ATTEND_COOP_ENV "LAZYKV_GPU_COOPERATIVE"

enum { LAUNCH_SPLIT, LAUNCH_PROBS, LAUNCHES };
static const char *const launch_names[LAUNCHES] = {"split", "probs"};

typedef struct attend_batch {
    int32_t first, count; /* groups [first, first + count) of the call */
    int32_t max_n;
    int32_t split_len;
    int64_t slots;  /* their valid slots, summed */
    int64_t splits; /* sum over the groups of ceil(n / split_len) */
    int64_t bytes;  /* the most scratch it may take (group_bytes, summed) */
    uint32_t grid[LAUNCHES][3];
} attend_batch;

typedef struct attend_shape {
    int32_t per, qblocks, dim, cap;
    size_t elem;
} attend_shape;

lkv_status lkv_gpu_attend_settings(const lkv_gpu_driver *drv, int64_t *out_batch_bytes,
                                   int *out_cooperative)
{
    *out_batch_bytes = ATTEND_BATCH_BYTES;
    *out_cooperative = drv->launch_cooperative != NULL;
    const char *coop = getenv(ATTEND_COOP_ENV);
    if (coop && *coop) {
        if (strcmp(coop, "0") != 0 && strcmp(coop, "1") != 0)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s '%s' is neither 0 nor 1", drv->name,
                            ATTEND_COOP_ENV, coop);
        *out_cooperative = *out_cooperative && coop[0] == '1';
    }
    const char *text = getenv(ATTEND_BATCH_ENV);
    if (!text || !*text)
        return LKV_OK;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < 1 || v > ATTEND_BATCH_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s '%s' is not an integer in 1..%lld",
                        drv->name, ATTEND_BATCH_ENV, text, (long long)ATTEND_BATCH_BYTES);
    *out_batch_bytes = v;
    return LKV_OK;
}

/* a * b, or UINT64_MAX where that does not fit */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static size_t to_size(uint64_t bytes)
{
    return bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}

/* Query heads per split block, as log2: the smallest of 1, 2, 4, 8 that
 * holds a cache head's group (8 for larger groups, in several blocks); it
 * also picks the kernel (split_kernels). */
static int qblock_log2(int32_t per)
{
    return per <= 1 ? 0 : per <= 2 ? 1 : per <= 4 ? 2 : 3;
}

static int32_t qblock_of(int32_t per)
{
    return (int32_t)1 << qblock_log2(per);
}

static attend_shape shape_of(const lkv_attend_args *a)
{
    attend_shape s;
    s.per = a->q_heads / a->cache_heads;
    int32_t qb = qblock_of(s.per);
    s.qblocks = (s.per + qb - 1) / qb;
    s.dim = a->cache->head_dim;
    s.cap = a->cache->capacity;
    s.elem = lkv_dtype_size(a->cache->dtype);
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
    lkv_status st = lkv_dtype_check(c->dtype, drv, "attend");
    if (st != LKV_OK)
        return st;
    if (c->head_dim < 1 || c->head_dim > LKV_ATT_DIM_MAX)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: head_dim %d outside 1..%d", drv, c->head_dim,
                        LKV_ATT_DIM_MAX);
    if (c->capacity < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: capacity %d; it must be at least 1", drv,
                        c->capacity);
    attend_shape s = shape_of(a);
    if ((uint64_t)a->cache_heads * (uint64_t)s.qblocks > d->lim.max_grid_y)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: %d cache heads x %d query-head blocks "
                        "exceed the device's grid y limit %u", drv, a->cache_heads, s.qblocks,
                        (unsigned)d->lim.max_grid_y);
    return LKV_OK;
}

/* The rows of [rows][capacity] int32 or f32 buffer b (UINT64_MAX: b is
 * not used). */
static uint64_t rows_of(const lkv_buffer *b, int32_t cap)
{
    return b ? b->size / ((uint64_t)cap * 4) : UINT64_MAX;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The rows of the state the call's observe writes (UINT64_MAX: none), or 0
 * after failing for a bad observe. */
static uint64_t observe_rows(const lkv_device *d, const lkv_attend_args *a, lkv_status *st)
{
    const lkv_attend_observe *o = a->observe;
    const lkv_cache_buffers *c = a->cache;
    const char *drv = d->drv->name;
    *st = LKV_OK;
    if (!o)
        return UINT64_MAX;
    int lazy = o->kind == LKV_OBSERVE_RECURRENCE;
    if (!lazy && o->kind != LKV_OBSERVE_ACCUMULATE && o->kind != LKV_OBSERVE_ASSIGN)
        *st = lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: observe kind %d is unknown", drv,
                       (int)o->kind);
    else if (!o->group_t)
        *st = lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: the observe's group steps are "
                       "missing (NULL)", drv);
    else if (lazy ? !c->state_a || !c->state_b : !c->state_f)
        *st = lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: the observe's state buffer is "
                       "missing (NULL)", drv);
    if (*st != LKV_OK)
        return 0;
    return lazy ? min_u64(rows_of(c->state_a, c->capacity), rows_of(c->state_b, c->capacity))
                : rows_of(c->state_f, c->capacity);
}

/* The kernels trust every index, so one outside a buffer is caught here:
 * on a GPU it would be a fault that loses the context. */
static lkv_status check_buffers(const lkv_device *d, const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    const char *drv = d->drv->name;
    attend_shape s = shape_of(a);
    const char *missing = !a->q ? "q" : !c->k ? "K" : !c->v ? "V" : NULL;
    if (missing)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: the %s buffer is missing (NULL)", drv,
                        missing);
    uint64_t io = (uint64_t)a->n_groups * (uint64_t)a->q_heads * (uint64_t)s.dim * 4;
    if (a->q->size < io || (a->out && a->out->size < io))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: q or out holds fewer than the %llu "
                        "bytes of %d groups x %d query heads x head_dim %d", drv,
                        (unsigned long long)io, a->n_groups, a->q_heads, s.dim);
    uint64_t kv_row = (uint64_t)s.cap * (uint64_t)s.dim * s.elem;
    /* a paged cache's K/V is a pool of places: its rows are the hole map's */
    uint64_t kv_rows = c->paged ? c->phys->size / ((uint64_t)s.cap * 4)
                                : (c->k->size < c->v->size ? c->k->size : c->v->size) / kv_row;
    lkv_status st = LKV_OK;
    uint64_t rows = min_u64(min_u64(kv_rows, rows_of(a->probs, s.cap)), observe_rows(d, a, &st));
    if (st != LKV_OK)
        return st;
    for (int32_t g = 0; g < a->n_groups; g++) {
        int32_t r0 = a->group_row0[g], n = a->group_n[g];
        if (n < 0 || n > s.cap)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: group %d has %d valid slots, "
                            "outside 0..capacity %d", drv, g, n, s.cap);
        if (r0 < 0 || (uint64_t)r0 + (uint64_t)a->cache_heads > rows)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: group %d rows %d..%d outside the "
                            "%llu rows of K, V%s%s", drv, g, r0, r0 + a->cache_heads - 1,
                            (unsigned long long)rows, a->probs ? ", probs" : "",
                            a->observe ? ", the observed state" : "");
    }
    return LKV_OK;
}

/* A group's splits in a batch of split_len: one at least, so that an empty
 * group's out and lse are written by its (empty) split's combine. */
static uint64_t splits_of(int32_t n, int32_t split_len)
{
    uint64_t s = lkv_attend_splits((uint64_t)n, (uint64_t)split_len);
    return s > 0 ? s : 1;
}

/* The most scratch a group can take in a batch: its logits, partials of at
 * most one split per LKV_ATTEND_SPLIT_MIN slots (one at least), its
 * log-sum-exps. */
static int64_t group_bytes(const lkv_attend_args *a, int32_t n)
{
    uint64_t splits = splits_of(n, LKV_ATTEND_SPLIT_MIN);
    uint64_t per_head = (uint64_t)n + splits * ((uint64_t)a->cache->head_dim + 2) + 1;
    uint64_t bytes = mul_sat(per_head, (uint64_t)a->q_heads * 4);
    return bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
}

/* The most groups a batch may hold so that every grid dimension of its
 * launches stays within the device's limits (grids_of): split x <= groups *
 * LKV_ATT_MAX_SPLITS within 2^31 - 1, probs z = groups within max_grid_z,
 * and the split blocks' counters (groups * q_heads) countable. At least 1. */
static int32_t batch_groups_max(const lkv_device *d, const lkv_attend_args *a)
{
    int64_t most = d->lim.max_grid_z;
    if (most > INT32_MAX / a->q_heads)
        most = INT32_MAX / a->q_heads;
    if (most > INT32_MAX / LKV_ATT_MAX_SPLITS)
        most = INT32_MAX / LKV_ATT_MAX_SPLITS;
    return most < 1 ? 1 : (int32_t)most;
}

static lkv_gpu_kernel_id split_kernel(const lkv_attend_args *a);

/* The split blocks of one full wave: the device's multiprocessors times the
 * blocks of the call's split kernel one holds (the driver's occupancy
 * query, asked once per kernel), or the planner's default where the driver
 * cannot say. */
static uint64_t split_budget(lkv_device *d, const lkv_attend_args *a)
{
    return lkv_attend_budget(d->lim.multiprocessors,
                             lkv_gpu_resident(d, split_kernel(a), LKV_ATT_BLOCK));
}

/* Splits (backends/plan/attend_plan.h): the batch's slots spread over one
 * wave of the device's split blocks, in whole split blocks of slots. */
static int32_t split_len_of(const lkv_attend_args *a, const attend_batch *b, uint64_t budget)
{
    lkv_attend_split_in in = {
        .slots = (uint64_t)b->slots,
        .longest = b->max_n,
        .units = lkv_attend_units(a->cache_heads, a->q_heads,
                                  qblock_of(a->q_heads / a->cache_heads)),
        .budget = budget,
        .align = LKV_ATT_BLOCK,
        .rounding = LKV_ATTEND_SPREAD,
    };
    uint64_t len = lkv_attend_split_len(&in);
    return len > INT32_MAX ? INT32_MAX : (int32_t)len;
}

/* The batch that starts at group `first`: as many groups as fit the scratch
 * budget and batch_groups_max, at least one. */
static attend_batch batch_at(const lkv_device *d, const lkv_attend_args *a, int32_t first,
                             uint64_t budget)
{
    attend_batch b = {.first = first};
    int32_t most = batch_groups_max(d, a);
    while (first + b.count < a->n_groups && b.count < most) {
        int32_t n = a->group_n[first + b.count];
        int64_t bytes = group_bytes(a, n);
        if (b.count > 0 && bytes > d->attend_batch_bytes - b.bytes)
            break;
        b.bytes += bytes;
        b.slots += n;
        b.max_n = n > b.max_n ? n : b.max_n;
        b.count++;
    }
    b.split_len = split_len_of(a, &b, budget);
    for (int32_t g = first; g < first + b.count; g++)
        b.splits += (int64_t)splits_of(a->group_n[g], b.split_len);
    return b;
}

/* The batch's launch grids (backends/gpu/kernels/attend.cu), each dimension checked
 * against the device's limits: x 2^31 - 1, y max_grid_y, z max_grid_z. */
static lkv_status grids_of(const lkv_device *d, const lkv_attend_args *a, attend_batch *b)
{
    attend_shape s = shape_of(a);
    uint64_t g[LAUNCHES][3] = {
        {(uint64_t)b->splits, (uint64_t)a->cache_heads * (uint64_t)s.qblocks, 1},
        {lkv_gpu_div_up((uint64_t)b->max_n, LKV_ATT_BLOCK), (uint64_t)a->cache_heads,
         (uint64_t)b->count},
    };
    for (int l = 0; l < LAUNCHES; l++) {
        if (g[l][0] > INT32_MAX || g[l][1] > d->lim.max_grid_y || g[l][2] > d->lim.max_grid_z)
            return lkv_fail(LKV_UNSUPPORTED, "%s attend: the %s launch of groups %d..%d needs a "
                            "grid of %llu x %llu x %llu blocks, past the device's limits (x %d, "
                            "y %u, z %u)", d->drv->name, launch_names[l], b->first,
                            b->first + b->count - 1, (unsigned long long)g[l][0],
                            (unsigned long long)g[l][1], (unsigned long long)g[l][2], INT32_MAX,
                            (unsigned)d->lim.max_grid_y, (unsigned)d->lim.max_grid_z);
        for (int i = 0; i < 3; i++)
            b->grid[l][i] = (uint32_t)g[l][i];
    }
    return LKV_OK;
}

/* The plan of a call: its batches, their prefix sums (each batch's own, one
 * entry more than its groups, laid end to end: batch k's start at first + k)
 * and the scratch the largest batch needs. */
typedef struct attend_plan {
    attend_batch *batches;
    int32_t *slot_off, *split_off; /* n_groups + n_batches entries each */
    int32_t n_batches;
    size_t logits_bytes, partial_bytes, lse_bytes;
} attend_plan;

static void keep_max(size_t *most, uint64_t bytes)
{
    size_t b = to_size(bytes);
    *most = b > *most ? b : *most;
}

/* Lays out batch b (the plan's next) in the prefix sums and the scratch. */
static void add_batch(const lkv_attend_args *a, attend_plan *p, const attend_batch *b)
{
    int32_t *so = p->slot_off + b->first + p->n_batches;
    int32_t *sp = p->split_off + b->first + p->n_batches;
    so[0] = sp[0] = 0;
    for (int32_t i = 0; i < b->count; i++) {
        int32_t n = a->group_n[b->first + i];
        so[i + 1] = so[i] + n;
        sp[i + 1] = sp[i] + (int32_t)splits_of(n, b->split_len);
    }
    uint64_t heads4 = (uint64_t)a->q_heads * 4;
    keep_max(&p->logits_bytes, mul_sat((uint64_t)b->slots, heads4));
    keep_max(&p->partial_bytes,
             mul_sat(mul_sat((uint64_t)b->splits, heads4), (uint64_t)a->cache->head_dim + 2));
    keep_max(&p->lse_bytes, mul_sat((uint64_t)b->count, heads4));
    p->batches[p->n_batches++] = *b;
}

static void free_plan(attend_plan *p)
{
    free(p->batches);
    free(p->slot_off);
}

static lkv_status plan_call(lkv_device *d, const lkv_attend_args *a, attend_plan *p)
{
    uint64_t budget = split_budget(d, a);
    size_t groups = (size_t)a->n_groups;
    p->batches = malloc(sizeof(attend_batch) * groups);
    p->slot_off = malloc(sizeof(int32_t) * 4 * groups); /* at most 2 * groups entries each */
    if (!p->batches || !p->slot_off)
        return lkv_fail(LKV_OUT_OF_MEMORY, "%s attend: no host memory for the plan of %d groups",
                        d->drv->name, a->n_groups);
    p->split_off = p->slot_off + 2 * groups;
    p->n_batches = 0;
    p->logits_bytes = p->partial_bytes = p->lse_bytes = 16;
    for (int32_t first = 0; first < a->n_groups;) {
        attend_batch b = batch_at(d, a, first, budget);
        lkv_status st = grids_of(d, a, &b);
        if (st != LKV_OK)
            return st;
        add_batch(a, p, &b);
        first += b.count;
    }
    return LKV_OK;
}

/* The split kernels of each K/V dtype, indexed by lkv_dtype: one element
 * per load, or 16 bytes (`vec` elements); each in four, by query heads per
 * block (1, 2, 4, 8: qblock_of). */
typedef struct split_kernels {
    int32_t vec;
    lkv_gpu_kernel_id scalar[4], vector[4];
} split_kernels;

#define SPLIT_KERNELS(t)                                                                        \
    {LKV_GPU_K_lkv_attend_split_##t##_g1, LKV_GPU_K_lkv_attend_split_##t##_g2,                  \
     LKV_GPU_K_lkv_attend_split_##t##_g4, LKV_GPU_K_lkv_attend_split_##t##_g8}
static const split_kernels split_of_dtype[] = {
    [LKV_DTYPE_F32] = {LKV_ATT_F32_VEC, SPLIT_KERNELS(f32), SPLIT_KERNELS(f32_vec)},
    [LKV_DTYPE_F16] = {LKV_ATT_KV16_VEC, SPLIT_KERNELS(f16), SPLIT_KERNELS(f16_vec)},
    [LKV_DTYPE_BF16] = {LKV_ATT_KV16_VEC, SPLIT_KERNELS(bf16), SPLIT_KERNELS(bf16_vec)},
};
#undef SPLIT_KERNELS
_Static_assert(sizeof split_of_dtype / sizeof split_of_dtype[0] == LKV_DTYPE_COUNT,
               "one row per lkv_dtype");

/* The vector kernels load 16 bytes at a time: every K/V row and q vector
 * must start on a 16-byte boundary (head_dim a multiple of 8 halves or bf16
 * or 4 floats, buffers allocated aligned). check_shape checked the dtype. */
static lkv_gpu_kernel_id split_kernel(const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    const split_kernels *ks = &split_of_dtype[c->dtype];
    int aligned = c->head_dim % ks->vec == 0 && ((c->k->ptr | c->v->ptr | a->q->ptr) & 15) == 0;
    int at = qblock_log2(a->q_heads / a->cache_heads);
    return aligned ? ks->vector[at] : ks->scalar[at];
}

/* The launch lists of the call, uploaded once: group_row0, group_n, the
 * observe's group steps (0 without one; by the call's group index) and the
 * per-batch prefix sums. */
typedef struct attend_lists {
    lkv_gpu_ptr row0, n, slot_off, split_off, obs_t;
} attend_lists;

static lkv_status launch(lkv_device *d, lkv_gpu_kernel_id kernel, const uint32_t *grid,
                         uint32_t block, void **args)
{
    return lkv_gpu_launch_kernel(d, kernel, grid[0], grid[1], grid[2], block, args);
}

/* Whether the call computes probabilities: to keep or to observe. */
static int wants_probs(const lkv_attend_args *a)
{
    return a->probs || a->observe;
}

/* Whether the split blocks can compute the call's probabilities themselves
 * (LKV_ATT_F_PROBS, in a cooperative launch): a block holds all of its
 * cache head's query heads. */
static int probs_in_split(const lkv_attend_args *a)
{
    return wants_probs(a) && shape_of(a).qblocks == 1;
}

/* The split launch, cooperative where the driver can place every block at
 * once: then the group's split blocks share its combine and may write the
 * probabilities (one launch); else the last block of each group combines
 * and lkv_attend_probs follows. */
static lkv_status launch_batch(lkv_device *d, const lkv_attend_args *a, const attend_batch *b,
                               const attend_lists *l, int32_t batch_index)
{
    attend_shape s = shape_of(a);
    const lkv_cache_buffers *c = a->cache;
    lkv_gpu_ptr k = c->k->ptr, v = c->v->ptr, logits = d->logits->ptr;
    lkv_gpu_ptr phys = c->phys ? c->phys->ptr : 0; /* K/V through the hole map, if any */
    lkv_gpu_ptr part = d->partials->ptr, lse = d->lse->ptr, done = d->attend_done->ptr;
    uint64_t io_off = (uint64_t)b->first * (uint64_t)a->q_heads * (uint64_t)s.dim * 4;
    lkv_gpu_ptr q = a->q->ptr + io_off, out = a->out ? a->out->ptr + io_off : 0;
    lkv_gpu_ptr probs = a->probs ? a->probs->ptr : 0;
    const lkv_attend_observe *o = a->observe; /* its state, or none (kind -1) */
    int32_t obs_kind = o ? (int32_t)o->kind : -1;
    float alpha = o ? o->alpha : 0.0f;
    lkv_gpu_ptr obs_t = o ? l->obs_t + (lkv_gpu_ptr)b->first * 4 : 0;
    lkv_gpu_ptr last = o && c->state_a ? c->state_a->ptr : 0;
    lkv_gpu_ptr mri = o && c->state_b ? c->state_b->ptr : 0;
    lkv_gpu_ptr state = o && c->state_f ? c->state_f->ptr : 0;
    lkv_gpu_ptr row0 = l->row0 + (lkv_gpu_ptr)b->first * 4, gn = l->n + (lkv_gpu_ptr)b->first * 4;
    lkv_gpu_ptr so = l->slot_off + ((lkv_gpu_ptr)b->first + (lkv_gpu_ptr)batch_index) * 4;
    lkv_gpu_ptr sp = l->split_off + ((lkv_gpu_ptr)b->first + (lkv_gpu_ptr)batch_index) * 4;
    int32_t groups = b->count, cap = s.cap, dim = s.dim, heads = a->cache_heads, per = s.per;
    int32_t kv_cap = c->paged ? 0 : cap; /* a paged cache's K/V: one pool, no row term */
    int32_t split_len = b->split_len, reduce_max = a->reduce == LKV_REDUCE_MAX;
    int32_t base = (a->out ? LKV_ATT_F_OUT : 0) | (reduce_max ? LKV_ATT_F_MAX : 0);
    int32_t logits_flag = wants_probs(a) ? LKV_ATT_F_LOGITS : 0;
    int32_t flags = base | LKV_ATT_F_COOP | (probs_in_split(a) ? LKV_ATT_F_PROBS : logits_flag);
    float scale = a->scale;

    void *split_args[] = {&k,      &v,     &phys,   &q,     &logits, &part,  &out,
                          &lse,    &probs, &done,   &row0,  &gn,     &so,    &sp,
                          &groups, &cap,   &kv_cap, &dim,   &heads,  &per,   &split_len,
                          &scale,  &flags, &obs_kind, &obs_t, &alpha, &last, &mri,
                          &state};
    lkv_gpu_kernel_id kernel = split_kernel(a);
    const uint32_t *grid = b->grid[LAUNCH_SPLIT];
    lkv_status st = d->cooperative && lkv_gpu_one_wave(d, kernel, LKV_ATT_BLOCK, grid)
                        ? lkv_gpu_launch_cooperative(d, kernel, grid, LKV_ATT_BLOCK, split_args)
                        : LKV_UNSUPPORTED;
    if (st == LKV_UNSUPPORTED) {
        lkv_clear_error(); /* the grid does not fit at once: the other way */
        flags = base | logits_flag;
        st = launch(d, kernel, grid, LKV_ATT_BLOCK, split_args);
    }
    if (st != LKV_OK || !(flags & LKV_ATT_F_LOGITS) || b->max_n == 0)
        return st;
    void *probs_args[] = {&logits, &lse,      &probs, &row0,  &gn,   &so,   &cap,  &heads,
                          &per,    &reduce_max, &obs_kind, &obs_t, &alpha, &last, &mri, &state};
    return launch(d, LKV_GPU_K_lkv_attend_probs, b->grid[LAUNCH_PROBS], LKV_ATT_BLOCK, probs_args);
}

static lkv_status run_plan(lkv_device *d, const lkv_attend_args *a, const attend_plan *p)
{
    lkv_status st = lkv_gpu_reserve(d, &d->logits, p->logits_bytes);
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->partials, p->partial_bytes);
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->lse, p->lse_bytes);
    /* the split blocks' counts, a word per (group, cache head, query-head
     * block) <= (group, query head): zero when allocated, and each launch's
     * last blocks put theirs back to zero */
    if (st == LKV_OK)
        st = lkv_gpu_reserve(d, &d->attend_done, p->lse_bytes);
    const int32_t *host[5] = {a->group_row0, a->group_n, p->slot_off, p->split_off,
                              a->observe ? a->observe->group_t : NULL};
    size_t entries = (size_t)a->n_groups + (size_t)p->n_batches;
    size_t counts[5] = {(size_t)a->n_groups, (size_t)a->n_groups, entries, entries,
                        (size_t)a->n_groups};
    lkv_gpu_ptr ptrs[5] = {0, 0, 0, 0, 0};
    if (st == LKV_OK)
        st = lkv_gpu_upload(d, a->observe ? 5 : 4, host, counts, ptrs);
    if (st != LKV_OK)
        return st;
    /* Nothing below fails but the driver (see the top of the file). */
    attend_lists lists = {ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4]};
    for (int32_t k = 0; k < p->n_batches; k++) {
        const attend_batch *b = &p->batches[k];
        st = launch_batch(d, a, b, &lists, k);
        if (st != LKV_OK)
            return lkv_fail_context(st, "%s attend (batch %d of %d: groups %d..%d, %d slots at "
                                    "most)", d->drv->name, k + 1, p->n_batches, b->first,
                                    b->first + b->count - 1, b->max_n);
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
    if (st == LKV_OK)
        st = run_plan(d, a, &p);
    free_plan(&p);
    return st;
}
