/* attend: four dispatches per batch of groups (see the kernels,
 * backends/vulkan/shaders/attend_*.comp and backends/opencl/kernels/attend_*.cl, for the
 * arithmetic and how it differs from the CPU oracle):
 *   attend_logits   logits of every slot for every query head
 *   attend_split    flash-decoding partials over splits of the cache
 *   attend_combine  out and the log-sum-exp per query head
 *   attend_probs    per-slot probabilities, combined per cache head, kept
 *                   in probs and/or, with lkv_attend_args.observe, applied
 *                   to the policy state by the observe op's own per-slot
 *                   update (observe_slot.glsl, lkv_cl.h's lkv_observe_slot)
 *                   at each group's step; issued only when either is wanted
 *
 * A batch is as many consecutive groups of the call as one binding window
 * of K, V and probs spans (their rows, lowest to highest) and whose scratch
 * (logits, partials, log-sum-exps) stays within ATTEND_BATCH_BYTES; one
 * batch normally holds every group of a call, so a call is four dispatches
 * however many sequences or queries it attends. Each dispatch reads its
 * groups' rows, lengths, splits and scratch offsets from one row list
 * (ATT_* below, attend_list.glsl in the shaders, lkv_cl.h in the kernels).
 * A group whose cache heads do not fit one window (a very long cache) is a
 * batch of its own, taken a chunk of cache heads at a time.
 *
 * Splits are planned per group as before (backends/plan/attend_plan.h,
 * WHOLE): the same split lengths, so the same sums, as one group alone. The
 * split grid has the most splits of a batch's groups; the rest leave.
 *
 * Everything a call needs (plans, pipelines, scratch, list room) is acquired
 * before its first dispatch. */
#include "dtype.h"
#include "error.h"
#include "bind_internal.h"
#include "plan/attend_plan.h"

/* query heads one attend_split workgroup serves (QBLOCK of the shaders) */
#define LKV_BIND_ATT_QBLOCK 8

/* the most scratch of one buffer that a batch of several groups takes */
#define ATTEND_BATCH_BYTES ((uint64_t)64 << 20)

/* The row list, one entry per group of a batch: the columns of
 * attend_list.glsl and lkv_cl.h. */
enum {
    ATT_ROW,    /* the chunk's first cache row, counted from the window's first */
    ATT_N,      /* valid slots */
    ATT_SPLIT,  /* slots per split */
    ATT_SPLITS, /* splits */
    ATT_LOGITS, /* first logit in the logits scratch */
    ATT_PARTS,  /* first float in the partials scratch */
    ATT_Q,      /* first q and out element */
    ATT_T,      /* the observe's step of the group (0 without one) */
    ATT_LIST
};

/* attend's pipelines per K/V storage type, indexed by lkv_dtype: the vector
 * variants load 16 bytes at a time where rows and the window allow; the
 * holes ones read K/V through the cache's hole map (LKV_HOLES). */
typedef struct attend_pipes {
    lkv_bind_pipe logits, logits_vec, split, split_vec;
} attend_pipes;

static const attend_pipes holes_pipes_of_dtype[] = {
    [LKV_DTYPE_F32] = {LKV_BIND_PIPE_attend_logits_f32_holes,
                       LKV_BIND_PIPE_attend_logits_f32_vec_holes,
                       LKV_BIND_PIPE_attend_split_f32_holes,
                       LKV_BIND_PIPE_attend_split_f32_vec_holes},
    [LKV_DTYPE_F16] = {LKV_BIND_PIPE_attend_logits_f16_holes,
                       LKV_BIND_PIPE_attend_logits_f16_vec_holes,
                       LKV_BIND_PIPE_attend_split_f16_holes,
                       LKV_BIND_PIPE_attend_split_f16_vec_holes},
    [LKV_DTYPE_BF16] = {LKV_BIND_PIPE_attend_logits_bf16_holes,
                        LKV_BIND_PIPE_attend_logits_bf16_vec_holes,
                        LKV_BIND_PIPE_attend_split_bf16_holes,
                        LKV_BIND_PIPE_attend_split_bf16_vec_holes},
};
_Static_assert(sizeof holes_pipes_of_dtype / sizeof holes_pipes_of_dtype[0] == LKV_DTYPE_COUNT,
               "one row per lkv_dtype");

static const attend_pipes pipes_of_dtype[] = {
    [LKV_DTYPE_F32] = {LKV_BIND_PIPE_attend_logits_f32, LKV_BIND_PIPE_attend_logits_f32_vec,
                       LKV_BIND_PIPE_attend_split_f32, LKV_BIND_PIPE_attend_split_f32_vec},
    [LKV_DTYPE_F16] = {LKV_BIND_PIPE_attend_logits_f16, LKV_BIND_PIPE_attend_logits_f16_vec,
                       LKV_BIND_PIPE_attend_split_f16, LKV_BIND_PIPE_attend_split_f16_vec},
    [LKV_DTYPE_BF16] = {LKV_BIND_PIPE_attend_logits_bf16, LKV_BIND_PIPE_attend_logits_bf16_vec,
                        LKV_BIND_PIPE_attend_split_bf16, LKV_BIND_PIPE_attend_split_bf16_vec},
};
_Static_assert(sizeof pipes_of_dtype / sizeof pipes_of_dtype[0] == LKV_DTYPE_COUNT,
               "one row per lkv_dtype");

/* What every group of a call shares. */
typedef struct attend_shape {
    uint32_t per, dim, cap, elem, qblocks, dblocks;
    uint64_t kv_row;           /* bytes of one K or V row */
    int64_t rows_fit;          /* K, V and probs rows one window spans */
    const attend_pipes *pipes; /* of the cache's dtype */
} attend_shape;

/* One group's splits and scratch per cache head. */
typedef struct group_plan {
    uint32_t split_len, n_splits;
    uint64_t logits, parts; /* floats per cache head */
    int64_t heads_fit;      /* cache heads one dispatch can take */
} group_plan;

/* A batch: groups [first, first + count), cache heads [ch_first, ch_first +
 * nch) of each, their rows [lo, hi] and their scratch in floats. */
typedef struct attend_batch {
    int32_t first, count;
    uint32_t ch_first, nch, max_n, max_splits;
    int64_t lo, hi;
    uint64_t logits, parts, lse;
} attend_batch;

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static attend_shape shape_of(lkv_device *d, const lkv_attend_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    attend_shape s;
    s.per = (uint32_t)(a->q_heads / a->cache_heads);
    s.dim = (uint32_t)c->head_dim;
    s.cap = (uint32_t)c->capacity;
    s.elem = (uint32_t)lkv_dtype_size(c->dtype);
    s.qblocks = (s.per + LKV_BIND_ATT_QBLOCK - 1) / LKV_BIND_ATT_QBLOCK;
    s.dblocks = (s.dim + lkv_bind_lim(d)->wg - 1) / lkv_bind_lim(d)->wg;
    s.kv_row = (uint64_t)s.cap * s.dim * s.elem;
    s.rows_fit = min64(lkv_bind_kv_rows_fit(d, c, s.kv_row),
                       lkv_bind_rows_fit(d, (uint64_t)s.cap * 4));
    s.pipes = c->phys ? &holes_pipes_of_dtype[c->dtype] /* check_args checked the dtype */
                      : &pipes_of_dtype[c->dtype];
    return s;
}

static lkv_status plan_group(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                             int32_t g, group_plan *p)
{
    int32_t n = a->group_n[g];
    /* Splits (backends/plan/attend_plan.h): a whole count per group. */
    lkv_attend_split_in in = {
        .slots = (uint64_t)n,
        .longest = n,
        .units = lkv_attend_units(a->cache_heads, a->q_heads, LKV_BIND_ATT_QBLOCK),
        .budget = lkv_bind_lim(d)->max_groups,
        .align = lkv_bind_lim(d)->wg,
        .rounding = LKV_ATTEND_WHOLE,
    };
    p->split_len = (uint32_t)lkv_attend_split_len(&in);
    p->n_splits = (uint32_t)lkv_attend_splits((uint64_t)n, p->split_len);
    p->logits = (uint64_t)s->per * (uint64_t)(n ? n : 1);
    p->parts = (uint64_t)s->per * (p->n_splits ? p->n_splits : 1) * (s->dim + 2);
    p->heads_fit = min64(s->rows_fit, lkv_bind_rows_fit(d, p->logits * 4));
    p->heads_fit = min64(p->heads_fit, min64(lkv_bind_rows_fit(d, p->parts * 4), a->cache_heads));
    if (p->heads_fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: one cache head (%llu bytes of K) exceeds this "
                        "device's %llu-byte binding range; lower capacity or head_dim",
                        lkv_bind_name(d), (unsigned long long)s->kv_row,
                        (unsigned long long)lkv_bind_lim(d)->max_range);
    return LKV_OK;
}

/* Adds group g's cache heads [ch_first, ch_first + nch) to b. */
static void batch_add(attend_batch *b, const lkv_attend_args *a, int32_t g, const group_plan *p)
{
    int64_t lo = (int64_t)a->group_row0[g] + b->ch_first, hi = lo + b->nch - 1;
    b->lo = b->count == 0 || lo < b->lo ? lo : b->lo;
    b->hi = b->count == 0 || hi > b->hi ? hi : b->hi;
    b->max_n = (uint32_t)a->group_n[g] > b->max_n ? (uint32_t)a->group_n[g] : b->max_n;
    b->max_splits = p->n_splits > b->max_splits ? p->n_splits : b->max_splits;
    b->logits += p->logits * b->nch;
    b->parts += p->parts * b->nch;
    b->lse += (uint64_t)b->nch * (uint64_t)a->q_heads / (uint64_t)a->cache_heads;
    b->count++;
}

/* Whether group g (all its cache heads) joins batch b: its window, scratch
 * and grids (y = groups x cache heads, combine's x = groups x query heads)
 * stay within the device's limits and the batch budget. */
static int batch_takes(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                       const attend_batch *b, int32_t g, const group_plan *p)
{
    const lkv_bind_limits *lim = lkv_bind_lim(d);
    uint64_t budget = lim->max_range - lim->align - 4;
    budget = budget < ATTEND_BATCH_BYTES ? budget : ATTEND_BATCH_BYTES;
    int64_t lo = a->group_row0[g], hi = lo + a->cache_heads - 1;
    lo = lo < b->lo ? lo : b->lo;
    hi = hi > b->hi ? hi : b->hi;
    uint64_t groups = (uint64_t)b->count + 1;
    return p->heads_fit >= a->cache_heads && hi - lo + 1 <= s->rows_fit &&
           (b->logits + p->logits * b->nch) * 4 <= budget &&
           (b->parts + p->parts * b->nch) * 4 <= budget &&
           groups * (uint64_t)a->q_heads * 4 <= budget &&
           groups * b->nch <= lim->max_count[1] && groups * (uint64_t)a->q_heads <= lim->max_count[0];
}

/* The batch that starts at group g, cache head ch. */
static lkv_status batch_at(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                           int32_t g, uint32_t ch, attend_batch *b)
{
    group_plan p;
    lkv_status st = plan_group(d, a, s, g, &p);
    if (st != LKV_OK)
        return lkv_fail_context(st, "%s attend (group %d of %d slots)", lkv_bind_name(d), g,
                                a->group_n[g]);
    *b = (attend_batch){.first = g, .ch_first = ch};
    if (p.heads_fit < a->cache_heads) {
        b->nch = (uint32_t)min64(p.heads_fit, a->cache_heads - (int64_t)ch);
        batch_add(b, a, g, &p);
        return LKV_OK;
    }
    b->nch = (uint32_t)a->cache_heads;
    batch_add(b, a, g, &p);
    while (b->first + b->count < a->n_groups) {
        int32_t next = b->first + b->count;
        st = plan_group(d, a, s, next, &p);
        if (st != LKV_OK)
            return lkv_fail_context(st, "%s attend (group %d of %d slots)", lkv_bind_name(d),
                                    next, a->group_n[next]);
        if (!batch_takes(d, a, s, b, next, &p))
            break;
        batch_add(b, a, next, &p);
    }
    return LKV_OK;
}

/* Where the batch after b starts. */
static void batch_next(const lkv_attend_args *a, const attend_batch *b, int32_t *g, uint32_t *ch)
{
    if (b->count == 1 && b->ch_first + b->nch < (uint32_t)a->cache_heads) {
        *ch = b->ch_first + b->nch;
        return;
    }
    *g = b->first + b->count;
    *ch = 0;
}

/* The 16-byte-load variants need every K (V) row and q vector to start on
 * a 16-byte boundary of the window (4 f32 or 8 f16/bf16 elements); rows are
 * whole multiples of head_dim, so the window's skew decides for every group. */
static int rows_of_16_bytes(const attend_shape *s, uint32_t skew)
{
    uint32_t vec = 16 / s->elem;
    return s->dim % vec == 0 && skew % vec == 0;
}

static lkv_bind_pipe logits_pipe(const attend_shape *s, uint32_t skew)
{
    return rows_of_16_bytes(s, skew) ? s->pipes->logits_vec : s->pipes->logits;
}

/* attend_split_vec: an item owns one 16-byte unit of V (8 dimensions of a
 * 2-byte type, 4 of f32), every unit of a row in one work-group. The bound
 * (4 dimensions an item at most) also holds OpenCL's kernel, whose 16-bit
 * items own 8 dimensions where rows allow and 4 otherwise. */
static int split_vec(lkv_device *d, const attend_shape *s, uint32_t skew)
{
    return rows_of_16_bytes(s, skew) && s->dim <= 4 * lkv_bind_lim(d)->wg;
}

/* Writes b's row list. Room was made for it. */
static lkv_status put_list(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                           const attend_batch *b, lkv_bind_buf *out_list)
{
    lkv_bind_device *bd = lkv_bind_of(d);
    uint32_t *w = bd->list_words;
    if ((size_t)b->count * ATT_LIST > bd->list_cap)
        return lkv_fail(LKV_INTERNAL, "%s attend: a list of %d groups placed without room made "
                        "for it", lkv_bind_name(d), b->count);
    uint64_t logits = 0, parts = 0;
    for (int32_t i = 0; i < b->count; i++, w += ATT_LIST) {
        int32_t g = b->first + i;
        group_plan p;
        lkv_status st = plan_group(d, a, s, g, &p);
        if (st != LKV_OK)
            return st;
        w[ATT_ROW] = (uint32_t)((int64_t)a->group_row0[g] + b->ch_first - b->lo);
        w[ATT_N] = (uint32_t)a->group_n[g];
        w[ATT_SPLIT] = p.split_len;
        w[ATT_SPLITS] = p.n_splits;
        w[ATT_LOGITS] = (uint32_t)logits;
        w[ATT_PARTS] = (uint32_t)parts;
        w[ATT_Q] = (uint32_t)g * (uint32_t)a->q_heads * s->dim;
        w[ATT_T] = a->observe ? (uint32_t)a->observe->group_t[g] : 0;
        logits += p.logits * b->nch;
        parts += p.parts * b->nch;
    }
    return bd->drv->list_put(d, bd->list_words, (size_t)b->count * ATT_LIST * 4, out_list);
}

/* Whether the call computes probabilities: to keep or to observe. */
static int wants_probs(const lkv_attend_args *a)
{
    return a->probs || a->observe;
}

/* Buffer `buf` of [rows][capacity] 4-byte values over b's rows into *bind
 * and its skew into *skew. Every such window of a batch starts at the same
 * row with the same row size, so their skews agree. */
static void meta_window(lkv_device *d, const attend_shape *s, const attend_batch *b,
                        const lkv_buffer *buf, lkv_bind_buf *bind, uint32_t *skew)
{
    lkv_bind_window w = lkv_bind_window_of(d, buf, b->lo, b->hi, (uint64_t)s->cap * 4, 4);
    *bind = w.bind;
    *skew = w.skew;
}

/* The 4th dispatch: binds (list, probs, last, mri, state, logits, lse),
 * whose probs and state entries hold stand-ins on entry. */
static lkv_status run_probs(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                            const attend_batch *b, lkv_bind_buf *binds)
{
    const lkv_cache_buffers *c = a->cache;
    const lkv_attend_observe *o = a->observe;
    uint32_t skew = 0;
    if (a->probs)
        meta_window(d, s, b, a->probs, &binds[1], &skew);
    if (o && o->kind == LKV_OBSERVE_RECURRENCE) { /* check_observe saw the state there */
        meta_window(d, s, b, c->state_a, &binds[2], &skew);
        meta_window(d, s, b, c->state_b, &binds[3], &skew);
    } else if (o) {
        meta_window(d, s, b, c->state_f, &binds[4], &skew);
    }
    struct {
        uint32_t cap, per, nch, probs_skew, reduce_max, keep_probs, observe, kind;
        float alpha;
    } pp = {s->cap, s->per, b->nch, skew, a->reduce == LKV_REDUCE_MAX, a->probs != NULL,
            o != NULL, o ? (uint32_t)o->kind : 0, o ? o->alpha : 0.0f};
    uint32_t rows = (uint32_t)b->count * b->nch;
    return lkv_bind_dispatch(d, LKV_BIND_PIPE_attend_probs, binds, &pp,
                             lkv_bind_slot_groups(d, b->max_n, rows), rows, 1);
}

static lkv_status run_batch(lkv_device *d, const lkv_attend_args *a, const attend_shape *s,
                            const attend_batch *b)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_bind_buf list;
    lkv_status st = put_list(d, a, s, b, &list);
    if (st != LKV_OK)
        return st;
    uint32_t rows = (uint32_t)b->count * b->nch; /* grid y */
    lkv_bind_window k = lkv_bind_kv_window(d, c, c->k, b->lo, b->hi, s->kv_row, s->elem);
    lkv_bind_window v = lkv_bind_kv_window(d, c, c->v, b->lo, b->hi, s->kv_row, s->elem);
    /* holes: the map's window, bound last (unread without holes) */
    lkv_bind_window phys = c->phys ? lkv_bind_window_of(d, c->phys, b->lo, b->hi,
                                                        (uint64_t)s->cap * 4, 4)
                                   : (lkv_bind_window){list, 0};
    lkv_bind_buf logits = {lkv_bind_of(d)->logits, 0, b->logits * 4};
    lkv_bind_buf parts = {lkv_bind_of(d)->partials, 0, b->parts * 4};
    lkv_bind_buf lse = {lkv_bind_of(d)->lse, 0, b->lse * 4};

    /* the LKV_HOLES pipelines read phys_skew and kv_cap too */
    uint32_t kv_cap = lkv_bind_kv_cap(c);
    struct {
        uint32_t cap, dim, per, nch, ch_first, kv_skew;
        float scale;
        uint32_t phys_skew, kv_cap;
    } lp = {s->cap, s->dim, s->per, b->nch, b->ch_first, k.skew, a->scale, phys.skew, kv_cap};
    lkv_bind_buf b1[5] = {list, k.bind, lkv_bind_whole(d, a->q), logits, phys.bind};
    st = lkv_bind_dispatch(d, logits_pipe(s, k.skew), b1, &lp,
                           lkv_bind_slot_groups(d, b->max_n, (int64_t)rows * s->qblocks), rows, s->qblocks);
    struct { uint32_t cap, dim, per, nch, kv_skew, dblocks, phys_skew, kv_cap; } sp =
        {s->cap, s->dim, s->per, b->nch, v.skew, s->dblocks, phys.skew, kv_cap};
    lkv_bind_buf b2[5] = {list, v.bind, logits, parts, phys.bind};
    int vec = split_vec(d, s, v.skew);
    lkv_bind_pipe split = vec ? s->pipes->split_vec : s->pipes->split;
    if (st == LKV_OK && b->max_splits > 0)
        st = lkv_bind_dispatch(d, split, b2, &sp, b->max_splits, rows,
                               s->qblocks * (vec ? 1 : s->dblocks));
    struct { uint32_t dim, nqh, qh_first, has_out; } cp =
        {s->dim, b->nch * s->per, b->ch_first * s->per, a->out != NULL};
    /* Without an output the binding is a stand-in the shader never writes. */
    lkv_bind_buf b3[4] = {list, parts, a->out ? lkv_bind_whole(d, a->out) : lse, lse};
    if (st == LKV_OK)
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_attend_combine, b3, &cp, rows * s->per, 1, 1);
    if (st != LKV_OK || !wants_probs(a) || b->max_n == 0)
        return st;
    /* lse stands in for probs and the state until run_probs binds them */
    lkv_bind_buf b4[7] = {list, lse, lse, lse, lse, logits, lse};
    return run_probs(d, a, s, b, b4);
}

/* The rows of [rows][capacity] 4-byte buffer buf. */
static int64_t meta_rows(lkv_device *d, const lkv_buffer *buf, int32_t cap)
{
    return (int64_t)(lkv_bind_size(d, buf) / ((uint64_t)cap * 4));
}

/* The observe's kind, steps and state: the state holds every group's rows. */
static lkv_status check_observe(lkv_device *d, const lkv_attend_args *a)
{
    const lkv_attend_observe *o = a->observe;
    const lkv_cache_buffers *c = a->cache;
    int lazy = o->kind == LKV_OBSERVE_RECURRENCE;
    if (!lazy && o->kind != LKV_OBSERVE_ACCUMULATE && o->kind != LKV_OBSERVE_ASSIGN)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: observe kind %d is unknown (%d "
                        "recurrence, %d accumulate or %d assign)", lkv_bind_name(d),
                        (int)o->kind, LKV_OBSERVE_RECURRENCE, LKV_OBSERVE_ACCUMULATE,
                        LKV_OBSERVE_ASSIGN);
    if (!o->group_t)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: the observe's group steps "
                        "(group_t) are missing (NULL)", lkv_bind_name(d));
    if (lazy ? !c->state_a || !c->state_b : !c->state_f)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: the observe (kind %d) has no state "
                        "buffer (%s is NULL)", lkv_bind_name(d), (int)o->kind,
                        lazy ? (c->state_a ? "state_b" : "state_a") : "state_f");
    /* lazy writes both of its buffers: the shorter bounds the rows */
    int64_t rows = meta_rows(d, lazy ? c->state_a : c->state_f, c->capacity);
    rows = lazy ? min64(rows, meta_rows(d, c->state_b, c->capacity)) : rows;
    for (int32_t g = 0; g < a->n_groups; g++) {
        int64_t r0 = a->group_row0[g];
        if (r0 < 0 || r0 + a->cache_heads > rows)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s attend: group %d rows %lld..%lld outside "
                            "the %lld rows of the observed state (capacity %d)",
                            lkv_bind_name(d), g, (long long)r0,
                            (long long)(r0 + a->cache_heads - 1), (long long)rows, c->capacity);
    }
    return LKV_OK;
}

/* The cache's dtype has pipelines here. q and out are bound whole: they
 * hold a few vectors per group, but a caller could pass more groups than one
 * binding spans. */
static lkv_status check_args(lkv_device *d, const lkv_attend_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, lkv_bind_name(d), "attend");
    if (st != LKV_OK)
        return st;
    const lkv_buffer *io[2] = {a->q, a->out};
    for (int i = 0; i < 2; i++)
        if (io[i] && lkv_bind_size(d, io[i]) > lkv_bind_lim(d)->max_range)
            return lkv_fail(LKV_UNSUPPORTED, "%s attend: a %s buffer of %llu bytes exceeds this "
                            "device's %llu-byte storage-buffer range; attend fewer groups at once",
                            lkv_bind_name(d), i ? "out" : "q", (unsigned long long)lkv_bind_size(d, io[i]),
                            (unsigned long long)lkv_bind_lim(d)->max_range);
    return a->observe ? check_observe(d, a) : LKV_OK;
}

/* Every batch planned once before anything is issued: the pipelines they
 * take, the largest scratch of one and room for all their lists. */
static lkv_status prepare(lkv_device *d, const lkv_attend_args *a, const attend_shape *s)
{
    attend_batch most = {0}, b;
    int32_t entries = 0;
    lkv_status st = LKV_OK;
    int32_t g = 0;
    uint32_t ch = 0;
    while (st == LKV_OK && g < a->n_groups) {
        st = batch_at(d, a, s, g, ch, &b);
        if (st != LKV_OK)
            break;
        lkv_bind_window k = lkv_bind_kv_window(d, a->cache, a->cache->k, b.lo, b.hi, s->kv_row,
                                               s->elem);
        lkv_bind_window v = lkv_bind_kv_window(d, a->cache, a->cache->v, b.lo, b.hi, s->kv_row,
                                               s->elem);
        st = lkv_bind_pipe_ready(d, logits_pipe(s, k.skew));
        if (st == LKV_OK)
            st = lkv_bind_pipe_ready(d, split_vec(d, s, v.skew) ? s->pipes->split_vec
                                                               : s->pipes->split);
        most.logits = b.logits > most.logits ? b.logits : most.logits;
        most.parts = b.parts > most.parts ? b.parts : most.parts;
        most.lse = b.lse > most.lse ? b.lse : most.lse;
        entries += b.count;
        batch_next(a, &b, &g, &ch);
    }
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_attend_combine);
    if (st == LKV_OK && wants_probs(a))
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_attend_probs);
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->logits, (size_t)most.logits * 4);
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->partials, (size_t)most.parts * 4);
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->lse, (size_t)most.lse * 4);
    return st == LKV_OK ? lkv_bind_list_room(d, entries, ATT_LIST) : st;
}

lkv_status lkv_bind_attend(lkv_device *d, const lkv_attend_args *a)
{
    lkv_status st = check_args(d, a);
    if (st != LKV_OK || a->n_groups <= 0)
        return st;
    attend_shape s = shape_of(d, a);
    st = prepare(d, a, &s);
    int32_t g = 0;
    uint32_t ch = 0;
    while (st == LKV_OK && g < a->n_groups) {
        attend_batch b;
        st = batch_at(d, a, &s, g, ch, &b);
        if (st != LKV_OK)
            return st;
        st = run_batch(d, a, &s, &b);
        if (st != LKV_OK)
            return lkv_fail_context(st, "%s attend (groups %d..%d)", lkv_bind_name(d), b.first,
                                    b.first + b.count - 1);
        batch_next(a, &b, &g, &ch);
    }
    return st;
}
