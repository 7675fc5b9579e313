/* The host side shared by the APIs whose kernels take buffer bindings:
 * Vulkan (descriptors and push constants, kernels in backends/vulkan/shaders/) and OpenCL
 * (kernel arguments, kernels in backends/opencl/kernels/). Every op is planned here
 * once, as dispatches of the pipelines of bind_pipes.h: each names its
 * storage buffers as windows (buffer, byte offset, range), its scalars as a
 * push-constant struct of 4-byte fields, and a grid of one-dimensional
 * work-groups. A backend only supplies the driver table below.
 *
 * Dispatches of one device run in the order issued, each seeing the writes
 * of those before it (Vulkan records a barrier after each, an in-order
 * OpenCL queue gives it for free).
 *
 * A backend's `struct lkv_device` begins with an lkv_bind_device, so the
 * shared code reaches it through lkv_bind_of(). */
#ifndef LKV_BIND_INTERNAL_H
#define LKV_BIND_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "host/host_locked.h"

typedef enum lkv_bind_pipe {
#define LKV_BIND_PIPE(name, source, defines, bindings, push) LKV_BIND_PIPE_##name,
#include "bind_pipes.h"
#undef LKV_BIND_PIPE
    LKV_BIND_PIPE_COUNT
} lkv_bind_pipe;

/* A pipeline as bind_pipes.h lists it (bind_window.c). */
typedef struct lkv_bind_pipe_info {
    const char *name, *source, *defines; /* defines: comma-separated, "" for none */
    uint32_t bindings, push_bytes;
} lkv_bind_pipe_info;
extern const lkv_bind_pipe_info lkv_bind_pipes[LKV_BIND_PIPE_COUNT];

/* store binds 10 with holes: its row list, the K and V inputs, K, V, pos,
 * three states and the hole map. */
#define LKV_BIND_MAX_BINDINGS 10

/* One storage-buffer binding of a dispatch: `range` bytes from `offset`. */
typedef struct lkv_bind_buf {
    const lkv_buffer *buf;
    uint64_t offset, range;
} lkv_bind_buf;

/* A window over rows [lo, hi] of a [rows][per_row] buffer of `elem`-byte
 * values: the binding and the elements that precede row lo in it (the
 * binding offset is rounded down to the device's alignment). */
typedef struct lkv_bind_window {
    lkv_bind_buf bind;
    uint32_t skew;
} lkv_bind_window;

/* What the plans need to know of the device, filled by the backend. */
typedef struct lkv_bind_limits {
    uint32_t wg;          /* work-group size: a power of two */
    uint32_t max_groups;  /* work-groups worth launching at once (kernels loop over the rest) */
    uint32_t max_slot_groups; /* the same for kernels of one slot per work-item (see bind_window.c) */
    uint32_t max_count[2]; /* most work-groups along x and along y of one dispatch */
    uint64_t max_range;   /* most bytes one binding spans */
    uint64_t align;       /* binding offsets are multiples of this (>= 4) */
    int has_f64;          /* scores in double, as the oracle */
} lkv_bind_limits;

/* What a backend does for the shared plans. Every call may fail with a
 * status and a message naming the driver call. */
typedef struct lkv_bind_driver {
    const char *name; /* "vulkan", "opencl": prefixes messages */
    /* The ops table's buffer entries (host/host_locked.c takes the lock). */
    lkv_status (*alloc)(lkv_device *d, size_t bytes, lkv_buffer **out_buf);
    void (*free)(lkv_device *d, lkv_buffer *b);
    lkv_status (*write)(lkv_device *d, lkv_buffer *dst, size_t off, const void *src, size_t n);
    lkv_status (*read)(lkv_device *d, const lkv_buffer *src, size_t off, void *dst, size_t n);
    lkv_status (*copy)(lkv_device *d, lkv_buffer *dst, size_t dst_off, const lkv_buffer *src,
                       size_t src_off, size_t n);
    lkv_status (*sync)(lkv_device *d);
    /* Builds a pipeline now, so an op acquires everything before it issues
     * any work; dispatch builds it too if needed. */
    lkv_status (*pipe_ready)(lkv_device *d, lkv_bind_pipe pipe);
    /* Issues one dispatch; `push` holds the pipeline's push_bytes. A grid
     * with a zero dimension issues nothing. */
    lkv_status (*dispatch)(lkv_device *d, lkv_bind_pipe pipe, const lkv_bind_buf *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz);
    /* Makes room for `bytes` of row lists (alignment included) before the
     * op issues anything, so placing them cannot fail half-way. */
    lkv_status (*list_room)(lkv_device *d, size_t bytes);
    /* Places `bytes` of list words where the next dispatches can read them
     * and gives the binding. Room was made by list_room. */
    lkv_status (*list_put)(lkv_device *d, const uint32_t *words, size_t bytes,
                           lkv_bind_buf *out_bind);
    /* Grows *buf to at least `bytes` (contents not kept). */
    lkv_status (*reserve)(lkv_device *d, lkv_buffer **buf, size_t bytes);
    uint64_t (*size)(const lkv_buffer *b);
    /* The ops table's wrap (core/backend.h): a view of memory the caller
     * owns, whose offset the driver adds to every binding and transfer. */
    lkv_status (*wrap)(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf);
    /* Ends every ops-table entry (an op, a write, a copy, an alloc): hands
     * what it recorded to the queue without waiting (`st` OK), or drops it
     * unrun (a failed entry, so it changes nothing). NULL where every
     * command already went to the queue when it was issued (OpenCL). */
    void (*end_entry)(lkv_device *d, lkv_status *st);
    /* The ops table's lanes (core/backend.h), unlocked: the locked entries
     * below take the one handle's lock around them. NULL: no lanes. */
    lkv_status (*lane_open)(lkv_device *d, lkv_device **out_lane);
    lkv_status (*mark)(lkv_device *d, lkv_mark **out_mark);
    lkv_status (*wait_mark)(lkv_device *d, const lkv_mark *mark);
} lkv_bind_driver;

typedef struct lkv_bind_device {
    lkv_host_lock lock; /* first: held by every locked entry (host/host_locked.h) */
    const lkv_bind_driver *drv;
    lkv_bind_limits lim;
    lkv_buffer *logits, *partials, *lse; /* attend scratch, grown on demand */
    lkv_buffer *compact_scratch;         /* compact's gather rounds */
    uint32_t *list_words;                /* host staging of one list (bind_window.c) */
    size_t list_cap;
    int32_t *steps;                      /* the rows' steps of observe and score */
    size_t steps_cap;
    /* What the device did (lkv_counters of lazykv.h), counted by the driver
     * where it happens: a dispatch when it is recorded or enqueued, a
     * transfer per write or read entry (row lists, like push constants, are
     * arguments of a dispatch and not counted), a sync per host wait. */
    lkv_counters count;
} lkv_bind_device;

static inline lkv_bind_device *lkv_bind_of(lkv_device *d)
{
    return (lkv_bind_device *)(void *)d;
}

static inline const lkv_bind_limits *lkv_bind_lim(lkv_device *d)
{
    return &lkv_bind_of(d)->lim;
}

static inline const char *lkv_bind_name(lkv_device *d)
{
    return lkv_bind_of(d)->drv->name;
}

static inline lkv_status lkv_bind_dispatch(lkv_device *d, lkv_bind_pipe pipe, const lkv_bind_buf *binds,
                                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz)
{
    return lkv_bind_of(d)->drv->dispatch(d, pipe, binds, push, gx, gy, gz);
}

static inline lkv_status lkv_bind_pipe_ready(lkv_device *d, lkv_bind_pipe pipe)
{
    return lkv_bind_of(d)->drv->pipe_ready(d, pipe);
}

static inline lkv_status lkv_bind_reserve(lkv_device *d, lkv_buffer **buf, size_t bytes)
{
    return lkv_bind_of(d)->drv->reserve(d, buf, bytes);
}

static inline uint64_t lkv_bind_size(lkv_device *d, const lkv_buffer *b)
{
    return lkv_bind_of(d)->drv->size(b);
}

/* Frees the host staging; the backend frees the scratch buffers. */
void lkv_bind_release(lkv_bind_device *b);

/* bind_settings.c: the testing knobs and device-derived settings. */
/* An integer environment knob in lo..hi; *out_set says whether it was set
 * (*out is left alone when not). A bad value fails, naming the knob. */
lkv_status lkv_bind_env_long(const char *name, long long lo, long long hi, long long *out,
                             int *out_set);
/* The work-group size: 64, or the knob's power of two in 32..256, halved
 * until the device allows it (`max_items` work-items, `local_bytes` of
 * local memory per group). */
lkv_status lkv_bind_work_group(const char *knob, uint64_t max_items, uint64_t local_bytes,
                               uint32_t *out_wg);
/* Whether scores run in double: where the device can, unless the knob
 * (LAZYKV_VULKAN_F64, LAZYKV_OPENCL_F64) is 0: the probe's report. It
 * parses the knob as lkv_bind_env_long does for the open, which also
 * refuses a bad value. */
int lkv_bind_f64_scores(const char *knob, int device_has_f64);
/* Work-groups worth launching at once on a GPU or on a CPU device. */
uint32_t lkv_bind_group_budget(int on_cpu);

/* bind_window.c */
lkv_bind_window lkv_bind_window_of(lkv_device *d, const lkv_buffer *b, int64_t row_lo,
                                   int64_t row_hi, uint64_t row_bytes, uint32_t elem);
/* The whole buffer, or as much of it as one binding spans. */
lkv_bind_buf lkv_bind_whole(lkv_device *d, const lkv_buffer *b);
/* A cache's K or V buffer `b` for rows row_lo..row_hi: their window, or in a
 * paged cache the whole pool (skew 0; its places have no row term). */
lkv_bind_window lkv_bind_kv_window(lkv_device *d, const lkv_cache_buffers *c,
                                   const lkv_buffer *b, int64_t row_lo, int64_t row_hi,
                                   uint64_t row_bytes, uint32_t elem);
/* Cache rows of row_bytes of K or V one window spans; unbounded in a paged
 * cache, whose pool is bound whole (lkv_bind_check_cache). */
int64_t lkv_bind_kv_rows_fit(lkv_device *d, const lkv_cache_buffers *c, uint64_t row_bytes);
/* The K/V row stride in slots the LKV_HOLES kernels take (kv_cap): the
 * capacity, or 0 in a paged cache. */
uint32_t lkv_bind_kv_cap(const lkv_cache_buffers *c);
/* check_cache (core/backend.h): a paged cache's pool fits one binding (the
 * kernels bind it whole); UNSUPPORTED naming the sizes otherwise. */
lkv_status lkv_bind_check_cache(lkv_device *d, const lkv_cache_buffers *c);
/* Splits a row list into runs that fit one dispatch: rows spanning at most
 * `rows_fit` consecutive rows, at most the device's group count, whole
 * multiples of `unit` entries. Returns the run length starting at `first`. */
int32_t lkv_bind_run(lkv_device *d, const int32_t *rows, int32_t count, int32_t first,
                     int64_t rows_fit, int32_t unit, int64_t *out_lo, int64_t *out_hi);
/* Each listed row's step for observe and score: row_t, or t for all when
 * row_t is NULL (then in host staging owned by the device). NULL when out
 * of memory, with the error set. */
const int32_t *lkv_bind_steps(lkv_device *d, const int32_t *row_t, int32_t t, int32_t n_rows);
/* The largest of v[first .. first+len): a run's longest row, which sizes
 * its grid. */
int32_t lkv_bind_longest(const int32_t *v, int32_t first, int32_t len);
/* UNSUPPORTED, naming the op and `what`, when `size` bytes of a buffer a
 * plan moves pass one binding or 16 GiB (32-bit word indices). */
lkv_status lkv_bind_check_fits(lkv_device *d, uint64_t size, const char *op, const char *what);
/* An engine's slots (core/backend.h) as the kernels bind them: the block
 * table as a list of lkv_bind_table_n entries (one never read for a dense
 * layout, counted in the op's list room), and the tab_row column (a
 * stand-in when dense). */
int32_t lkv_bind_table_n(const lkv_engine_slots *s);
lkv_status lkv_bind_put_table(lkv_device *d, const lkv_engine_slots *s, lkv_bind_buf *out_bind);
const int32_t *lkv_bind_tab_rows(const lkv_engine_slots *s);
/* How many consecutive rows of `row_bytes` one binding can span. */
int64_t lkv_bind_rows_fit(lkv_device *d, uint64_t row_bytes);
/* Work-groups along x for `items` invocations in each of `rows` rows of a
 * grid-stride dispatch: one per item, within the device's budget. */
uint32_t lkv_bind_groups(lkv_device *d, int64_t items, int64_t rows);
/* The same for a kernel whose work-items each read one slot's K row or
 * logit (attend's logits and probs), within max_slot_groups. */
uint32_t lkv_bind_slot_groups(lkv_device *d, int64_t items, int64_t rows);
/* Room for an op's lists of `n_rows` entries of `ncols` columns. */
size_t lkv_bind_list_bytes(lkv_device *d, int32_t n_rows, int ncols);
lkv_status lkv_bind_list_room(lkv_device *d, int32_t n_rows, int ncols);
/* Places entries first .. first+len of `ncols` host int32 columns (rows,
 * row_n, ...) interleaved, for the kernel's `list`. */
lkv_status lkv_bind_put_list(lkv_device *d, const int32_t *const *cols, int ncols, int32_t first,
                             int32_t len, lkv_bind_buf *out_bind);

/* The ops (one file each). */
lkv_status lkv_bind_attend(lkv_device *d, const lkv_attend_args *a);
lkv_status lkv_bind_observe(lkv_device *d, const lkv_observe_args *a);
lkv_status lkv_bind_score(lkv_device *d, const lkv_score_args *a);
lkv_status lkv_bind_select(lkv_device *d, const lkv_select_args *a);
lkv_status lkv_bind_compact(lkv_device *d, const lkv_compact_args *a);
lkv_status lkv_bind_store(lkv_device *d, const lkv_store_args *a);
lkv_status lkv_bind_gather(lkv_device *d, const lkv_gather_args *a);
lkv_status lkv_bind_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a);
lkv_status lkv_bind_move_kept(lkv_device *d, const lkv_move_kept_args *a);
lkv_status lkv_bind_qk_probs(lkv_device *d, const lkv_qk_probs_args *a);
lkv_status lkv_bind_redundancy(lkv_device *d, const lkv_redundancy_args *a);

/* bind_backend.c: what the locked ops-table entries (host/host_locked.h)
 * run: the driver's buffer entries and the plans above. The backends fill
 * in name, probe, open and close, and LKV_HOST_LOCKED_OPS. */
extern const lkv_host_inner lkv_bind_inner;

/* The entries host/host_locked.h does not have yet (store, wrap, counters),
 * locked the same way, for the ops table beside LKV_HOST_LOCKED_OPS. */
lkv_status lkv_bind_locked_store(lkv_device *d, const lkv_store_args *a);
lkv_status lkv_bind_locked_gather(lkv_device *d, const lkv_gather_args *a);
lkv_status lkv_bind_locked_reduce_rows(lkv_device *d, const lkv_reduce_rows_args *a);
lkv_status lkv_bind_locked_move_kept(lkv_device *d, const lkv_move_kept_args *a);
lkv_status lkv_bind_locked_qk_probs(lkv_device *d, const lkv_qk_probs_args *a);
lkv_status lkv_bind_locked_redundancy(lkv_device *d, const lkv_redundancy_args *a);
lkv_status lkv_bind_locked_wrap(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes,
                                lkv_buffer **out_buf);
void lkv_bind_locked_counters(const lkv_device *d, lkv_counters *out);
lkv_status lkv_bind_locked_lane_open(lkv_device *d, lkv_device **out_lane);
lkv_status lkv_bind_locked_mark(lkv_device *d, lkv_mark **out_mark);
lkv_status lkv_bind_locked_wait_mark(lkv_device *d, const lkv_mark *mark);
/* The lane entries of a binding backend whose driver has lanes (one lock
 * at a time: a mark names no handle's state but its own). */
#define LKV_BIND_LANE_OPS                                                                     \
    .lane_open = lkv_bind_locked_lane_open, .mark = lkv_bind_locked_mark,                      \
    .wait_mark = lkv_bind_locked_wait_mark
#define LKV_BIND_LOCKED_OPS                                                                   \
    .store = lkv_bind_locked_store, .gather = lkv_bind_locked_gather,                          \
    .reduce_rows = lkv_bind_locked_reduce_rows, .move_kept = lkv_bind_locked_move_kept,        \
    .qk_probs = lkv_bind_locked_qk_probs, .redundancy = lkv_bind_locked_redundancy,            \
    .wrap = lkv_bind_locked_wrap, .check_cache = lkv_bind_check_cache,                        \
    .counters = lkv_bind_locked_counters

/* Whether a wrap's offset suits the device's binding alignment; otherwise
 * INVALID_ARGUMENT naming both (bind_window.c). */
lkv_status lkv_bind_wrap_check(lkv_device *d, uint64_t handle, uint64_t offset, size_t bytes);

/* The known deviations of a binding backend's device without f64 in its
 * kernels (the probe's "f32 scores"): the scores the oracle computes in f64
 * are f32 there. `no_f64` names the missing capability, `exp_error` what the
 * API allows its float exp; both are string literals. The list ends the
 * ops table's `deviations` array (add the NULL entry after it). */
#define LKV_BIND_F32_SCORE_DEVIATIONS(no_f64, exp_error)                                         \
    {"f32 scores", "score(kind=lazy,*|replay(policy=lazy,*",                                    \
     no_f64 ": lazy scores in f32, where " exp_error ", so near-equal scores of different "      \
            "(mri, delta) can order differently from the f64 oracle"},                            \
    {"f32 scores", "score(kind=noisy,*",                                                          \
     no_f64 ": Gumbel noise -log(-log u) in f32 loses digits as u nears 1; the same Philox "     \
            "bits, so the same sample up to ~1e-2"}

#endif /* LKV_BIND_INTERNAL_H */
