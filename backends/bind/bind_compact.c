/* compact: compact_kv.comp moves K and V, compact_meta.comp the
 * position and state, in rounds of gather-to-scratch then write (see the
 * shaders for why in place is safe). Every round covers every row of a run,
 * so all workgroups of the device share the work; the scratch, and so the
 * extra memory an eviction needs, is bounded by LKV_BIND_COMPACT_SCRATCH.
 * A cache that fills holes moves no K/V: compact_phys.comp rebuilds its
 * hole map instead, a whole row of the map at a time (scatter to scratch,
 * copy back), runs cut so that their rows' map fits the scratch.
 *
 * The op plans every run first and acquires what they need (pipelines,
 * scratch, room for the row lists) before issuing anything, so running out
 * of any of them leaves the cache as it was. What can still fail later is
 * the driver refusing a dispatch: on Vulkan nothing has run then (the work
 * is submitted as a whole), on OpenCL the dispatches queued before it still
 * run, so K/V may be moved and the state not; the core reports that as an
 * eviction that failed part-way, to be answered by resetting the sequence. */
#include "dtype.h"
#include "error.h"
#include "bind_internal.h"

#define LKV_BIND_COMPACT_SCRATCH ((uint64_t)16 << 20)

/* How one run of rows moves its K and V. */
typedef struct kv_plan {
    lkv_bind_pipe pipe;
    uint32_t words;      /* per slot, in the shader's units */
    uint32_t skew;       /* the same units before row lo's slot 0 in the window */
    uint32_t slot_words; /* scratch words per slot */
    uint32_t unit;       /* 4-byte words per shader unit */
} kv_plan;

typedef struct compact_run {
    int32_t first, len;
    int64_t lo, hi;
    kv_plan kv;
    uint32_t kv_round, meta_round; /* slots per round per row */
} compact_run;

/* Bytes per K/V element: 4, or 2 for f16 and bf16, which compact moves
 * alike (it copies bits, never converts). 0 for an unknown dtype. */
static uint32_t elem_of(const lkv_cache_buffers *c)
{
    return (uint32_t)lkv_dtype_size(c->dtype);
}

static uint64_t kv_row_bytes(const lkv_cache_buffers *c)
{
    return (uint64_t)c->capacity * (uint64_t)c->head_dim * elem_of(c);
}

/* Whole 32-bit words per slot, in 16-byte units where slots and the window
 * allow, unless 2-byte (f16 or bf16) slots straddle words: then words are
 * assembled from halves. Rows that share a word (odd capacity * head_dim)
 * are safe in one dispatch: a word belongs to the slot of its lower half,
 * and the last slot of a row only moves when the row is not full. */
static kv_plan plan_kv(const lkv_cache_buffers *c, uint32_t skew_elems)
{
    int pairs = elem_of(c) == 2;
    int halves = pairs && (c->head_dim % 2 != 0 || skew_elems % 2 != 0);
    kv_plan p;
    p.words = pairs && !halves ? (uint32_t)c->head_dim / 2 : (uint32_t)c->head_dim;
    p.skew = pairs && !halves ? skew_elems / 2 : skew_elems;
    p.slot_words = halves ? (p.words + 3) / 2 : p.words;
    int vec = !halves && p.words % 4 == 0 && p.skew % 4 == 0;
    p.unit = vec ? 4 : 1;
    p.pipe = halves ? LKV_BIND_PIPE_compact_kv_halves
                    : vec ? LKV_BIND_PIPE_compact_kv_vec : LKV_BIND_PIPE_compact_kv;
    return p;
}

/* Slots per round per row, when each slot takes `bytes` of scratch. */
static uint32_t round_slots(lkv_device *d, int32_t rows, uint64_t bytes)
{
    uint64_t cap = LKV_BIND_COMPACT_SCRATCH < lkv_bind_lim(d)->max_range - lkv_bind_lim(d)->align ? LKV_BIND_COMPACT_SCRATCH
                                                                        : lkv_bind_lim(d)->max_range - lkv_bind_lim(d)->align;
    uint64_t w = cap / ((uint64_t)rows * bytes);
    return w < 1 ? 1 : (uint32_t)w;
}

/* compact_kv takes a slot per workgroup: one per slot of the round, within
 * the device's budget (the workgroups loop over the rest). */
static uint32_t slot_groups(lkv_device *d, int32_t rows, uint32_t slots)
{
    uint32_t g = lkv_bind_lim(d)->max_groups / (uint32_t)rows;
    g = g < 1 ? 1 : g;
    return g < slots ? g : slots;
}

/* Rows of one run: as many as one binding of K holds, and with a hole map
 * as many as the scratch holds of the map (at least one row). */
static int64_t run_fit(const lkv_cache_buffers *c, int64_t fit)
{
    if (!c->phys)
        return fit;
    int64_t phys = (int64_t)(LKV_BIND_COMPACT_SCRATCH / ((uint64_t)c->capacity * 4));
    phys = phys < 1 ? 1 : phys;
    return phys < fit ? phys : fit;
}

static compact_run plan_run(lkv_device *d, const lkv_compact_args *a, int32_t first, int64_t fit)
{
    const lkv_cache_buffers *c = a->cache;
    compact_run r = {.first = first};
    r.len = lkv_bind_run(d, a->rows, a->n_rows, first, fit, 1, &r.lo, &r.hi);
    lkv_bind_window k = lkv_bind_window_of(d, c->k, r.lo, r.hi, kv_row_bytes(c), elem_of(c));
    r.kv = plan_kv(c, k.skew);
    r.kv_round = round_slots(d, r.len, (uint64_t)r.kv.slot_words * 8);
    r.meta_round = round_slots(d, r.len, 16);
    return r;
}

static uint64_t kv_scratch(const compact_run *r)
{
    return (uint64_t)r->len * r->kv_round * r->kv.slot_words * 8;
}

static uint64_t meta_scratch(const compact_run *r)
{
    return (uint64_t)r->len * r->meta_round * 16;
}

static uint64_t phys_scratch(const lkv_cache_buffers *c, const compact_run *r)
{
    return c->phys ? (uint64_t)r->len * (uint64_t)c->capacity * 4 : 0;
}

/* Pipelines, scratch and list room for every run, before any recording. */
static lkv_status acquire(lkv_device *d, const lkv_compact_args *a, int64_t fit)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t scratch = 0;
    lkv_status st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_compact_meta);
    if (st == LKV_OK && c->phys)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_compact_phys);
    for (int32_t first = 0; st == LKV_OK && first < a->n_rows;) {
        compact_run r = plan_run(d, a, first, fit);
        if (!c->phys) {
            st = lkv_bind_pipe_ready(d, r.kv.pipe);
            scratch = kv_scratch(&r) > scratch ? kv_scratch(&r) : scratch;
        }
        scratch = meta_scratch(&r) > scratch ? meta_scratch(&r) : scratch;
        scratch = phys_scratch(c, &r) > scratch ? phys_scratch(c, &r) : scratch;
        first += r.len;
    }
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->compact_scratch, (size_t)scratch);
    /* with holes each run places a second list, of three columns */
    if (st == LKV_OK)
        st = c->phys ? lkv_bind_list_room(d, 2 * a->n_rows, 3) : lkv_bind_list_room(d, a->n_rows, 2);
    return st;
}

static lkv_status move_kv(lkv_device *d, const lkv_compact_args *a, const compact_run *r,
                          lkv_bind_buf list, lkv_bind_window kept)
{
    const lkv_cache_buffers *c = a->cache;
    const kv_plan *p = &r->kv;
    uint64_t scratch = kv_scratch(r);
    lkv_bind_buf b[5] = {list, kept.bind,
                         lkv_bind_window_of(d, c->k, r->lo, r->hi, kv_row_bytes(c), elem_of(c)).bind,
                         lkv_bind_window_of(d, c->v, r->lo, r->hi, kv_row_bytes(c), elem_of(c)).bind,
                         {lkv_bind_of(d)->compact_scratch, 0, scratch}};
    int64_t most = lkv_bind_longest(a->row_k, r->first, r->len);
    lkv_status st = LKV_OK;
    for (int64_t first = 0; st == LKV_OK && first < most; first += r->kv_round)
        for (uint32_t phase = 0; st == LKV_OK && phase < 2; phase++) {
            struct { uint32_t cap, words, skew, row_base, meta_skew, phase, first, slots, half; } push =
                {(uint32_t)c->capacity, p->words / p->unit, p->skew / p->unit, (uint32_t)r->lo,
                 kept.skew, phase, (uint32_t)first, r->kv_round, (uint32_t)(scratch / 8 / p->unit)};
            st = lkv_bind_dispatch(d, p->pipe, b, &push, slot_groups(d, r->len, r->kv_round),
                                   (uint32_t)r->len, 1);
        }
    return st;
}

static lkv_status move_meta(lkv_device *d, const lkv_compact_args *a, const compact_run *r,
                            lkv_bind_buf list, lkv_bind_window kept)
{
    const lkv_cache_buffers *c = a->cache;
    uint64_t row = (uint64_t)c->capacity * 4;
    lkv_bind_buf b[7] = {list, kept.bind,
                         lkv_bind_window_of(d, c->pos, r->lo, r->hi, row, 4).bind,
                         lkv_bind_window_of(d, c->state_a, r->lo, r->hi, row, 4).bind,
                         lkv_bind_window_of(d, c->state_b, r->lo, r->hi, row, 4).bind,
                         lkv_bind_window_of(d, c->state_f, r->lo, r->hi, row, 4).bind,
                         {lkv_bind_of(d)->compact_scratch, 0, meta_scratch(r)}};
    int64_t most = lkv_bind_longest(a->row_k, r->first, r->len);
    lkv_status st = LKV_OK;
    for (int64_t first = 0; st == LKV_OK && first < most; first += r->meta_round)
        for (uint32_t phase = 0; st == LKV_OK && phase < 2; phase++) {
            struct { uint32_t cap, skew, row_base, phase, first, slots; } push =
                {(uint32_t)c->capacity, kept.skew, (uint32_t)r->lo, phase, (uint32_t)first,
                 r->meta_round};
            st = lkv_bind_dispatch(d, LKV_BIND_PIPE_compact_meta, b, &push,
                                   lkv_bind_groups(d, r->meta_round, r->len), (uint32_t)r->len, 1);
        }
    return st;
}

/* The run's hole map rebuilt (compact_phys.comp): every entry of each row's
 * n slots scattered to its destination in scratch, then the rows copied
 * back. */
static lkv_status move_phys(lkv_device *d, const lkv_compact_args *a, const compact_run *r,
                            lkv_bind_window kept)
{
    const lkv_cache_buffers *c = a->cache;
    const int32_t *cols[3] = {a->rows, a->row_k, a->row_n};
    lkv_bind_buf list;
    lkv_status st = lkv_bind_put_list(d, cols, 3, r->first, r->len, &list);
    uint64_t row = (uint64_t)c->capacity * 4;
    lkv_bind_buf b[4] = {list, kept.bind, lkv_bind_window_of(d, c->phys, r->lo, r->hi, row, 4).bind,
                         {lkv_bind_of(d)->compact_scratch, 0, phys_scratch(c, r)}};
    int64_t most = lkv_bind_longest(a->row_n, r->first, r->len);
    for (uint32_t phase = 0; st == LKV_OK && phase < 2; phase++) {
        struct { uint32_t cap, skew, row_base, phase; } push =
            {(uint32_t)c->capacity, kept.skew, (uint32_t)r->lo, phase};
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_compact_phys, b, &push,
                               lkv_bind_groups(d, most, r->len), (uint32_t)r->len, 1);
    }
    return st;
}

lkv_status lkv_bind_compact(lkv_device *d, const lkv_compact_args *a)
{
    const lkv_cache_buffers *c = a->cache;
    lkv_status st = lkv_dtype_check(c->dtype, lkv_bind_name(d), "compact");
    if (st != LKV_OK)
        return st;
    int64_t fit = run_fit(c, lkv_bind_rows_fit(d, kv_row_bytes(c)));
    if (fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s compact: one cache row (%llu bytes) exceeds this "
                        "device's %llu-byte binding range",
                        lkv_bind_name(d), (unsigned long long)kv_row_bytes(c),
                        (unsigned long long)lkv_bind_lim(d)->max_range);
    st = acquire(d, a, fit);
    const int32_t *cols[2] = {a->rows, a->row_k};
    for (int32_t first = 0; st == LKV_OK && first < a->n_rows;) {
        compact_run r = plan_run(d, a, first, fit);
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 2, r.first, r.len, &list);
        lkv_bind_window kept = lkv_bind_window_of(d, a->kept, r.lo, r.hi, (uint64_t)c->capacity * 4, 4);
        if (st == LKV_OK)
            st = c->phys ? move_phys(d, a, &r, kept) : move_kv(d, a, &r, list, kept);
        if (st == LKV_OK)
            st = move_meta(d, a, &r, list, kept);
        first += r.len;
    }
    return st;
}
