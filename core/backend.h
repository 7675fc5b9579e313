/* The backend interface: what the core asks of a device.
 *
 * A backend is one const lkv_backend_ops table. The core decides everything
 * about policy (when to evict, how many slots to keep, which are protected,
 * which score formula) and passes it in the op arguments; a backend only
 * computes. Every op has one reference implementation in backends/cpu/, which
 * defines it; GPU kernels mirror it and document where their arithmetic order
 * differs.
 *
 * Storage the ops work on, all indexed by cache row (one row per sequence,
 * layer and cache head: row = (sequence * layers + layer) * heads + head) and
 * slot (0 .. capacity-1, valid slots first, in positional order):
 *   k, v      [rows][capacity][head_dim]  f32, f16 or bf16
 *   pos       [rows][capacity]            int32 absolute token position
 *   state_a/b [rows][capacity]            int32 policy state (lazy: last, mri)
 *   state_f   [rows][capacity]            f32 policy state (h2o, tova, snapkv, nacl)
 *   probs, scores [rows][capacity]        f32 scratch
 *   kept      [rows][capacity]            int32 scratch
 *   phys      [rows][capacity]            int32, holes only (LKV_PLACEMENT_HOLES):
 *             where slot j's K/V lies in the row (k, v are then indexed by
 *             phys[row][j], everything else by j); per row a permutation of
 *             0..capacity-1 whose entries from the row's length on are the
 *             free places, the next token's first. NULL: K/V at slot j.
 *             Paged (LKV_PLACEMENT_PAGED, cache->paged): k and v are instead
 *             one pool [places][head_dim] shared by every row, and phys
 *             holds pool places (no row term): slot j of any row lies at
 *             k + phys[row][j] * head_dim. The row's entries past its places
 *             (core/pages.h) are never read.
 * Row lists (`rows`, `row_n`, ...) are host arrays; buffers are device memory.
 */
#ifndef LKV_BACKEND_H
#define LKV_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"
#include "op_kinds.h"

typedef struct lkv_device lkv_device; /* defined by each backend */
typedef struct lkv_buffer lkv_buffer; /* defined by each backend */
typedef struct lkv_mark lkv_mark;     /* defined by each backend with lanes */

/* The device-side storage of one cache. */
typedef struct lkv_cache_buffers {
    lkv_buffer *k;
    lkv_buffer *v;
    lkv_buffer *pos;
    lkv_buffer *state_a;
    lkv_buffer *state_b;
    lkv_buffer *state_f;
    int32_t capacity;
    int32_t head_dim;
    lkv_dtype dtype;
    lkv_buffer *phys; /* NULL unless the cache fills holes */
    int paged;        /* phys holds places of a K/V pool, not of the row */
} lkv_cache_buffers;

/* The observe an attend applies itself (lkv_attend_args.observe; only for
 * a backend whose attend_observes is 1): the observe op's update of `kind`
 * with `alpha` (lkv_observe_args) of every row of every group, over the
 * group's group_n[g] slots at its own step group_t[g], from the
 * probabilities the attend computes: the state it leaves is bit for bit what
 * the same backend's attend with probs and then its observe of those rows
 * would leave. The probabilities never reach memory unless probs is given
 * too, which is the point: one pass over them instead of a write, a launch
 * and a read. */
typedef struct lkv_attend_observe {
    lkv_observe_kind kind;
    float alpha;
    const int32_t *group_t; /* [n_groups] host array */
} lkv_attend_observe;

/* attend: for each group (one sequence and layer: `cache_heads` consecutive
 * rows starting at group_row0[g], each with group_n[g] valid slots) and each
 * query head h (cache head h / (q_heads / cache_heads)):
 *   out[g][h]  = softmax(scale * q[g][h] . K) . V
 *   probs[row] = the softmax probabilities, combined over the query heads that
 *                share the cache head by `reduce` (max or mean).
 * `out` or `probs` may be NULL when not wanted. `observe` (NULL: none) also
 * updates the policy state from those probabilities (lkv_attend_observe). */
typedef struct lkv_attend_args {
    const lkv_cache_buffers *cache;
    int32_t n_groups;
    const int32_t *group_row0;
    const int32_t *group_n;
    int32_t cache_heads;
    int32_t q_heads;
    float scale;
    lkv_group_reduce reduce; /* LKV_REDUCE_MAX or LKV_REDUCE_MEAN */
    const lkv_buffer *q;     /* [n_groups][q_heads][head_dim] f32 */
    lkv_buffer *out;         /* [n_groups][q_heads][head_dim] f32, or NULL */
    lkv_buffer *probs;       /* [rows][capacity] f32, or NULL */
    const lkv_attend_observe *observe; /* or NULL */
} lkv_attend_args;

/* observe: update per-slot policy state of each listed row from probs. */
typedef struct lkv_observe_args {
    const lkv_cache_buffers *cache;
    int32_t n_rows;
    const int32_t *rows;
    const int32_t *row_n;
    const lkv_buffer *probs;
    lkv_observe_kind kind;
    int32_t t;
    /* [n_rows] host array: each listed row's own step (rows of a batch
     * whose sequences stand at different steps), or NULL: every row at t.
     * Only for a backend with row_steps set; core passes NULL otherwise. */
    const int32_t *row_t;
    float alpha;
} lkv_observe_args;

/* score: eviction priority of every valid slot; higher is kept first.
 * Slots [0, protect_head) and [n - protect_tail, n) score +infinity, as do the
 * `prior_k` slots listed per row in `prior_kept` (a previous select's output).
 * Pooling runs over the unprotected range only. */
typedef struct lkv_score_args {
    const lkv_cache_buffers *cache;
    int32_t n_rows;
    const int32_t *rows;
    const int32_t *row_n;
    int32_t rows_per_group; /* GROUP_MEAN: consecutive listed rows sharing a decision */
    lkv_score_kind kind;
    int32_t t;
    const int32_t *row_t; /* as in lkv_observe_args */
    int32_t protect_head;
    int32_t protect_tail;
    int32_t pool_kernel;
    uint64_t seed;
    const lkv_buffer *prior_kept; /* [rows][capacity] int32, or NULL */
    int32_t prior_k;
    lkv_buffer *scores;           /* [rows][capacity] f32 */
} lkv_score_args;

/* redundancy (rkv, docs/policy-rkv.md): the keys' redundancy of each listed
 * row's n = row_n[i] valid slots, mixed into its scores. With
 * khat_j = k_j / (|k_j| + 1e-8) (K read through phys with holes):
 *   S[i][j] = khat_i . khat_j for i != j, S[i][i] = 0;
 *   r(i)    = the largest j with S[i][j] > threshold, or 0 when none;
 *             then S[i][r(i)] = 0 (each row spares its newest near-copy);
 *   m_j     = (1 / n) * sum over i of S[i][j];  R_j = softmax(m)_j over all n;
 *   scores[row][j] = mix_lambda * importance_scale * scores[row][j]
 *                    - (1 - mix_lambda) * R_j          for j < n - protect_tail;
 * the protected tail keeps its score. `work` (f32) and `match` (int32),
 * [rows][capacity] each, are scratch the op may use (the cache's probs and
 * kept, free while an eviction runs). */
typedef struct lkv_redundancy_args {
    const lkv_cache_buffers *cache;
    int32_t n_rows;
    const int32_t *rows;
    const int32_t *row_n;
    int32_t protect_tail;
    float threshold;
    float mix_lambda;
    float importance_scale;
    lkv_buffer *work;
    lkv_buffer *match;
    lkv_buffer *scores;
} lkv_redundancy_args;

/* select: per row keep the row_k[i] highest scores; ties go to the older slot
 * (lower index), NaN ranks below everything; the kept slot indices are written
 * in ascending order to the first row_k[i] entries of the row in `kept`. */
typedef struct lkv_select_args {
    int32_t capacity;
    int32_t n_rows;
    const int32_t *rows;
    const int32_t *row_n;
    const int32_t *row_k;
    const lkv_buffer *scores;
    lkv_buffer *kept;
} lkv_select_args;

/* compact: move the kept slots' k, v, pos and state rows to the front in
 * order. In place is safe: kept is ascending, so a destination never passes
 * its source. With cache->phys, K/V stay where they are and phys moves with
 * pos and state instead: the kept slots' entries to the front in order, then
 * the evicted slots' entries (of the row_n[i] slots held before) in
 * ascending slot order, so the places they held are the next tokens'. */
typedef struct lkv_compact_args {
    const lkv_cache_buffers *cache;
    int32_t n_rows;
    const int32_t *rows;
    const int32_t *row_n; /* slots held before, for phys */
    const int32_t *row_k;
    const lkv_buffer *kept;
} lkv_compact_args;

/* store: write tokens' f32 keys and values into cache slots, rounded to the
 * storage type as lkv_dtype_store does (nearest, ties to even), with their
 * positions and fresh policy state. Entry e (one sequence and layer) takes
 * tokens src_token[e] .. src_token[e] + count[e] - 1 of k and v
 * ([tokens][kv_heads][head_dim] f32) into slots slot0[e] .. slot0[e] +
 * count[e] - 1 of rows row0[e] + h, for every cache head h < cache_heads,
 * reading KV head h * kv_heads / cache_heads (grouped: h; expanded: the query
 * head's KV head). Token j of the entry gets pos = position0[e] + j,
 * state_a = last_init[e], state_b = 0 and state_f = 0.
 *
 * Inputs from device memory reach it unchecked, so store keeps the cache
 * finite whatever it is given: a NaN or infinite element is stored as +0, and
 * a finite one beyond the storage type's largest finite value as that value
 * with its sign. (Host inputs are checked by core first and never hit the
 * rule.) */
typedef struct lkv_store_args {
    const lkv_cache_buffers *cache;
    int32_t n_entries;
    const int32_t *row0;
    const int32_t *slot0;
    const int32_t *count;
    const int32_t *src_token;
    const int32_t *position0;
    const int32_t *last_init;
    int32_t cache_heads;
    int32_t kv_heads;
    const lkv_buffer *k; /* [tokens][kv_heads][head_dim] f32 */
    const lkv_buffer *v;
} lkv_store_args;

/* gather: within one buffer, span i of `words` 4-byte words moves from word
 * src_word[i] to word dst_word[i], as if every source were read before any
 * destination is written: a plan's moves in place, where a destination may
 * be a later move's source. Destinations never overlap each other. The
 * words are copied bit for bit. The device backends gather the sources into
 * their kept scratch and scatter them back (two passes in stream order, no
 * allocation, no wait); the reference copies through host memory. */
typedef struct lkv_gather_args {
    int32_t n;
    int32_t words;
    const uint32_t *src_word; /* [n] host array */
    const uint32_t *dst_word; /* [n] host array */
    lkv_buffer *buf;
} lkv_gather_args;

/* reduce_rows: row i of dst (dst_row[i] * dst_stride words in) gets, over
 * its first len[i] words, the reduce of `group` consecutive rows of src
 * from row src_row[i] (rows src_stride words apart): an engine's
 * probabilities per query head into the cache's rows per cache head, one
 * dispatch for a whole batch. A group of one is copied bit for bit; max
 * keeps v > m ? v : m over the rows in order, the same bits everywhere (the
 * values are checked probabilities: no NaN); mean is the double sum over
 * the rows in order divided by the group, rounded once. Device kernels
 * without f64 (Vulkan or OpenCL on such a device) sum in f32, a few ulp
 * from the oracle. Destination rows overlap neither each other nor src. */
typedef struct lkv_reduce_rows_args {
    int32_t n;
    int32_t group;
    lkv_group_reduce reduce;
    int32_t src_stride;     /* words */
    int32_t dst_stride;     /* words */
    const int32_t *src_row; /* [n] host arrays */
    const int32_t *dst_row;
    const int32_t *len;
    const lkv_buffer *src;
    lkv_buffer *dst;
} lkv_reduce_rows_args;

/* Where an engine's slots are, in 32-bit words, for the ops that read or
 * move its K/V in place (move_kept, qk_probs): row i's slot j starts at
 * word base[i] + j * slot_stride (dense, block_size 0), or at base[i] +
 * table[tab_row[i] * max_blocks + j / block_size] * block_stride +
 * (j % block_size) * slot_stride (paged). Core has checked every address
 * the rows can reach. */
typedef struct lkv_engine_slots {
    const uint32_t *base;   /* [n] host array: the row's head in its layer */
    const int32_t *tab_row; /* [n] host array, paged only (NULL dense) */
    uint32_t slot_stride, block_stride;
    int32_t block_size;
    const int32_t *table;   /* paged: [table_rows][max_blocks] host array */
    int32_t table_rows, max_blocks;
} lkv_engine_slots;

/* move_kept: an engine-owned cache's plan applied to one of the engine's
 * device K or V buffers straight from the kept lists select left on the
 * device (no read-back). Row i moves, for each j < n_kept[i] whose kept
 * slot s = kept[kept_row[i] * kept_stride + j] is not j itself, the `words`
 * 32-bit words of slot s to slot j (`slots`), every source read before any
 * destination is written (through the backend's kept scratch of `held`
 * bytes, where row i's words start at word at[i], as gather). */
typedef struct lkv_move_kept_args {
    int32_t n;
    const int32_t *kept_row; /* [n] host arrays */
    const int32_t *n_kept;
    const uint32_t *at;
    uint64_t held;
    const lkv_buffer *kept;  /* [rows][kept_stride] int32, select's output */
    int32_t kept_stride;
    int32_t words;
    lkv_engine_slots slots;
    lkv_buffer *buf;
} lkv_move_kept_args;

/* qk_probs: an engine's attention probabilities recomputed on the device
 * from its queries, its K read in place and its log-sum-exp, as
 * core/engine_qk.c computes them on the host: row i over slots j < len[i]
 *   probs[out_row[i] * stride + j] = min(1, exp(dot * scale - lse[lse_at[i]]))
 * with dot = sum over d ascending of q[q_row[i] * dim + d] * K_j[d], the
 * product, sum and exponent in double (f32 where a Vulkan or OpenCL device
 * lacks f64: the few-ulp deviation of score's). K_j is slot j of row i
 * (`slots`): dim elements of dtype f32, f16 or bf16, whole words per slot.
 * Nothing is checked here (a value out of range gives probabilities out
 * of range, never an access outside the buffers). */
typedef struct lkv_qk_probs_args {
    int32_t n;
    const int32_t *q_row;   /* [n] host arrays */
    const int32_t *lse_at;
    const int32_t *len;
    const int32_t *out_row;
    const lkv_buffer *q;    /* f32 */
    const lkv_buffer *lse;  /* f32 */
    const lkv_buffer *k;
    lkv_buffer *probs;      /* f32, rows of `stride` */
    lkv_dtype dtype;
    int32_t dim, stride;
    float scale;
    lkv_engine_slots slots;
} lkv_qk_probs_args;

/* A known deviation from the oracle that a backend owns and accepts: the
 * conformance cases it is expected to fail on devices with a trait, and
 * why in words. The conformance suite turns those FAILs into XFAILs (still
 * listed) and says when such a case passes, so an entry does not outlive
 * the limitation it records. */
typedef struct lkv_backend_deviation {
    /* A device trait as the probe's report names it in `reason` ("f32
     * scores"); NULL for every device of the backend. */
    const char *trait;
    /* Conformance case names: '*' matches any run of characters and '|'
     * separates alternatives ("score(kind=lazy,*|replay(policy=lazy,*"). */
    const char *cases;
    const char *reason;
} lkv_backend_deviation;

typedef struct lkv_backend_ops {
    const char *name;
    /* Lists devices as reports (lkv_device_report of lazykv.h). Never aborts;
     * a missing driver is one report with available = 0 and the reason. */
    lkv_status (*probe)(lkv_device_report *out_reports, int cap, int *out_count);
    lkv_status (*open)(int device, lkv_device **out_dev);
    void (*close)(lkv_device *dev);

    /* Buffers are zero-filled on allocation. Offsets and sizes in bytes. */
    lkv_status (*alloc)(lkv_device *dev, size_t bytes, lkv_buffer **out_buf);
    void (*free)(lkv_device *dev, lkv_buffer *buf);
    lkv_status (*write)(lkv_device *dev, lkv_buffer *dst, size_t offset,
                        const void *src, size_t bytes);
    lkv_status (*read)(lkv_device *dev, const lkv_buffer *src, size_t offset,
                       void *dst, size_t bytes);
    lkv_status (*copy)(lkv_device *dev, lkv_buffer *dst, size_t dst_offset,
                       const lkv_buffer *src, size_t src_offset, size_t bytes);
    /* Waits for all queued work. Ops may be asynchronous; read is not. */
    lkv_status (*sync)(lkv_device *dev);

    /* Opens a device on handles the caller owns (lkv_external_device of
     * lazykv.h): its context and queue/stream, on which every op, copy and
     * read is then ordered. The device never destroys what it borrowed.
     * NULL when the backend cannot. */
    lkv_status (*open_external)(const lkv_external_device *ext, lkv_device **out_dev);
    /* Borrows memory the caller owns as a buffer the ops accept: `handle` is
     * the backend's native handle (cpu: a host address; cuda, hip: a device
     * address; opencl: a cl_mem; vulkan: a VkBuffer), viewed from byte
     * `offset` for `bytes`. free() releases the view, never the memory. A
     * view may be made and freed every call, so it is cheap (no device
     * allocation, no synchronization). NULL: no device memory accepted. */
    lkv_status (*wrap)(lkv_device *dev, uint64_t handle, uint64_t offset, size_t bytes,
                       lkv_buffer **out_buf);
    /* What the device did since it was opened (lkv_counters of lazykv.h):
     * launches, transfers and host waits, counted where they happen. NULL:
     * the backend counts nothing (all zero). */
    void (*counters)(const lkv_device *dev, lkv_counters *out);

    /* The ops. A NULL entry means the backend does not support the op;
     * the core reports UNSUPPORTED instead of calling it. */
    lkv_status (*attend)(lkv_device *dev, const lkv_attend_args *args);
    lkv_status (*observe)(lkv_device *dev, const lkv_observe_args *args);
    lkv_status (*score)(lkv_device *dev, const lkv_score_args *args);
    lkv_status (*select)(lkv_device *dev, const lkv_select_args *args);
    /* rkv only; NULL: the backend cannot run rkv (UNSUPPORTED at creation) */
    lkv_status (*redundancy)(lkv_device *dev, const lkv_redundancy_args *args);
    lkv_status (*compact)(lkv_device *dev, const lkv_compact_args *args);
    /* NULL: core writes K/V row by row through `write` instead (host inputs
     * only; device inputs are then UNSUPPORTED). */
    lkv_status (*store)(lkv_device *dev, const lkv_store_args *args);
    /* NULL: plans cannot be applied to K/V in this backend's device memory. */
    lkv_status (*gather)(lkv_device *dev, const lkv_gather_args *args);
    /* NULL: probabilities in this backend's device memory cannot be
     * observed. */
    lkv_status (*reduce_rows)(lkv_device *dev, const lkv_reduce_rows_args *args);
    /* NULL: a cache's plan cannot be applied from the device. */
    lkv_status (*move_kept)(lkv_device *dev, const lkv_move_kept_args *args);
    /* NULL: probabilities cannot be recomputed from device q, K and lse. */
    lkv_status (*qk_probs)(lkv_device *dev, const lkv_qk_probs_args *args);

    /* 1 when observe and score honour row_t, so one dispatch serves rows at
     * different steps; 0: core splits such a batch by step. */
    int row_steps;
    /* 1 when attend takes lkv_attend_args.observe (observe fused into the
     * pass that computes the probabilities); 0: core never passes it and
     * runs observe after attend. */
    int attend_observes;
    /* 1 when attend, store and compact honour cache->phys (holes); 0: a
     * cache that fills holes is refused at create. */
    int holes;
    /* 1 when they also take cache->paged (K/V one pool, phys its places;
     * the host reads and writes the map between ops); 0: a paged cache is
     * refused at create. */
    int paged;
    /* NULL: every cache the placement check admits runs here. Else whether
     * this cache's buffers suit the device (a binding backend: a paged pool
     * fits one binding), asked once at create, after they are allocated. */
    lkv_status (*check_cache)(lkv_device *dev, const lkv_cache_buffers *cache);

    /* Lanes: a second queue (stream) on the device, so that eviction work
     * runs beside the attention of the layers after it instead of in line
     * with it (core/lane.c). NULL lane_open: one queue only (the core then
     * runs background evictions on a helper thread). All four or none.
     *   lane_open   a device handle `*out_lane` on the same device: every
     *               buffer of either is valid on both and every entry of
     *               this table takes it, but its work goes to its own queue
     *               (a second hardware queue where the device has one; the
     *               same queue otherwise, then ordered as asked but not
     *               concurrent). UNSUPPORTED when the device cannot (an
     *               engine's borrowed queue, say). Closed with `close`
     *               (which waits for its work), before `dev` is, and only
     *               once the work of `dev` that waited on its marks has
     *               finished (a sync of `dev`).
     *   mark        flushes what `dev` has recorded and returns a point in
     *               its issued work: everything issued to `dev` so far.
     *   wait_mark   work issued to `dev` from now on starts only after the
     *               mark (made by `dev` or by another handle of the same
     *               device) has passed, and sees its writes; no host wait.
     *   mark_free   frees a mark made by `dev` (waited on or not: a wait
     *               already issued still holds).
     * The two handles may be used from different threads, each under its
     * own lock, as any two devices; a mark is used by one thread at a time. */
    lkv_status (*lane_open)(lkv_device *dev, lkv_device **out_lane);
    lkv_status (*mark)(lkv_device *dev, lkv_mark **out_mark);
    lkv_status (*wait_mark)(lkv_device *dev, const lkv_mark *mark);
    void (*mark_free)(lkv_device *dev, lkv_mark *mark);
    /* 0 when a lane's work would only take turns with the parent's (one
     * hardware queue, or a CPU device whose queues share its cores): the
     * core then keeps to the helper thread unless told otherwise
     * (LAZYKV_LANES=1, for tests). NULL: lanes run concurrently. */
    int (*lanes_concurrent)(lkv_device *dev);

    /* The backend's known deviations, ended by an entry whose `cases` is
     * NULL; NULL when it has none. */
    const lkv_backend_deviation *deviations;
} lkv_backend_ops;

#endif /* LKV_BACKEND_H */
