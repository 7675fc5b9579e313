/* The cache as core sees it: host-side bookkeeping around device buffers. */
#ifndef LKV_CACHE_H
#define LKV_CACHE_H

#include "backend.h"
#include "policy.h"
#include "runtime.h"

typedef struct lkv_sequence {
    int32_t *len;          /* [layers] valid slots per cache head */
    int32_t t;             /* decode step; 0 until the first decode */
    int32_t next_layer;    /* the layer the next prefill/decode call must name */
    int in_prefill;        /* some layers of a prefill chunk in, not all */
    int prompt_open;       /* a chunk said more_chunks: the prompt goes on */
    int prefilled;
    int32_t chunk_tokens;  /* what layer 0's chunk brought, for the other layers */
    int chunk_more;        /* layer 0's more_chunks */
    int32_t prompt_tokens; /* the prompt's tokens so far, every chunk counted */
    int32_t first_position;
    int32_t next_position; /* position of the next token, decoded or prefilled */
    int32_t since_evict;   /* tokens appended since the last eviction: what
                              truncate can drop (they are every row's tail) */
} lkv_sequence;

/* One (sequence, layer) whose eviction is due, with its plan and step. */
typedef struct lkv_due_pair {
    int32_t seq;
    int32_t layer;
    int32_t t;
    lkv_evict_plan plan;
} lkv_due_pair;

/* A device buffer grown on demand and kept: the batch calls stage host
 * inputs in it, so steady-state calls allocate nothing. */
typedef struct lkv_stage {
    lkv_buffer *buf;
    size_t bytes;
} lkv_stage;

/* Host-side lists of one batch call, grown on demand and kept. */
typedef struct lkv_batch_lists {
    int32_t cap;
    int32_t *row0, *slot0, *count, *src_token, *position0, *last_init; /* store entries */
    int32_t *group_n;  /* attend groups (row0 reused) */
} lkv_batch_lists;

/* Probabilities handed in instead of computed. Trace replay (engine 0):
 * rows per cache head, batches of one; in decode the step's probabilities
 * ([heads][stride]), in prefill the votes' sums written to state_f. An
 * engine-owned cache (engine 1): the engine's attention per query head,
 * combined over each cache head's group here; in decode one block of
 * [q_heads][stride] per listed sequence, in prefill one [q_heads][stride]
 * block per voting query (core/engine.c). A trace's stride is its rows'
 * length (the layer's slots after the append). */
typedef struct lkv_given {
    const float *p;
    int32_t stride;
    int engine;
    /* The engine's rows are one per cache head, combined by the engine
     * (LKV_ROWS_CACHE_HEADS), not one per query head. */
    int cache_rows;
    /* The engine's rows in device memory (a view of them), read instead of
     * p; cache_rows then, or a group of one. */
    const lkv_buffer *dev;
} lkv_given;

/* The eviction plan of the last call, kept for lkv_cache_get_plan. The
 * kept lists stay where select left them (c->kept, row dev_row[i] of plan
 * row i) until a host reader asks: lkv_cache_apply_plan_device moves K/V
 * from them without reading them back. Select writes each row once per
 * call (an engine-owned cache never evicts early), so they hold until the
 * next call. */
typedef struct lkv_plan_store {
    lkv_plan_row *rows;
    int32_t *dev_row;
    int32_t n_rows, rows_cap;
    int32_t *kept;
    size_t kept_used, kept_cap;
    int32_t n_read; /* rows [0, n_read) have their kept lists on the host */
    /* The cache's identity in the plan registry (plan_registry.h; 0 and
     * unregistered for a cache owning its K/V), its registry slot, and the
     * serial of the call the plan belongs to. */
    uint64_t id;
    int32_t reg;
    uint64_t serial;
} lkv_plan_store;

struct lkv_cache {
    lkv_runtime *rt;
    const lkv_backend_ops *ops;
    lkv_device *dev;
    lkv_cache_config cfg; /* policy defaults resolved */
    const lkv_policy_rules *rules;
    int32_t heads;        /* cache heads per layer */
    int32_t group;        /* query heads per cache head */
    float scale;
    lkv_cache_buffers buf;
    lkv_buffer *probs, *scores, *kept; /* [rows][capacity] scratch */
    lkv_stage stage_q, stage_k, stage_v, stage_out;
    lkv_stage stage_p;    /* engine-owned: probabilities recomputed on the device */
    lkv_stage stage_plan; /* engine-owned: the plan's kept lists, gathered to read */
    lkv_sequence *seqs;
    /* [sequences * layers * heads] row lists of one op call */
    int32_t *rows, *row_n, *row_k, *row_t;
    lkv_due_pair *due_pairs; /* [sequences * layers] scheduler scratch */
    lkv_batch_lists lists;
    float *vote_q;           /* host gather of one round of voting queries */
    size_t vote_q_cap;       /* floats */
    unsigned char *listed;   /* [sequences] duplicate check of a batch */
    int32_t *seq_steps;      /* [sequences] per listed sequence: its step */
    int32_t *vote_first, *vote_token0; /* [sequences] prefill vote scratch */
    lkv_cache_stats stats;
    lkv_plan_store plan;     /* engine-owned caches: what the last call evicted */
    float *given_row;        /* [capacity] one combined row of given probabilities */
    struct lkv_background *bg; /* eviction = background without a lane: the helper; else NULL */
    struct lkv_lane *lane;     /* eviction = background on a backend with lanes; else NULL */
    struct lkv_pages *pages;   /* placement paged: the block pool (pages.h); else NULL */
};

/* Waits for the cache's background eviction, if one is pending, and returns
 * its failure once (lazykv.h, lkv_eviction_timing). Every public call that
 * reads or changes the cache's state starts with it. */
lkv_status lkv_cache_join(const lkv_cache *c);
/* The same for a call that touches only `layer`'s rows (decode, observe):
 * with a lane, only that layer's evictions are waited for (core/lane.h). */
lkv_status lkv_cache_join_layer(const lkv_cache *c, int32_t layer);

static inline int32_t lkv_row_of(const lkv_cache *c, int32_t seq, int32_t layer, int32_t head)
{
    return (seq * c->cfg.layers + layer) * c->heads + head;
}

/* Stores every listed sequence's new tokens of `layer`: entry i takes
 * count[i] tokens from src_token[i] of k and v ([tokens][kv_heads][head_dim]
 * f32 device buffers) at slots len .. len + count of every head, positions
 * position0[i].., and advances len. One store dispatch for the batch; a
 * backend without store gets row-by-row writes from the host arrays
 * `host_k`, `host_v` (NULL for device inputs: then UNSUPPORTED). Capacity is
 * the caller's to check. Uses c->lists (filled by the caller: seqs in row0's
 * place is not needed; see batch.c). */
lkv_status lkv_cache_store(lkv_cache *c, const int32_t *seqs, int32_t n, int32_t layer,
                           const lkv_buffer *k, const lkv_buffer *v, const float *host_k,
                           const float *host_v);

/* Copies host rows src[heads][n] to the first n slots of every head of
 * (seq, layer) in a [rows][capacity] f32 buffer (probs, state_f). */
lkv_status lkv_cache_write_rows(lkv_cache *c, int32_t seq, int32_t layer, lkv_buffer *dst,
                                const float *src, int32_t n);

/* Undoes a store's lengths and counters for `count` tokens (the bytes stay,
 * unreachable). */
void lkv_cache_unappend(lkv_cache *c, int32_t seq, int32_t layer, int32_t count);

/* A batch call's arrays as device buffers: host arrays staged in the
 * cache's grow-only buffers, device arrays borrowed as views, which
 * lkv_cache_release_inputs frees. */
typedef struct lkv_inputs {
    const lkv_buffer *q, *k, *v;
    lkv_buffer *out;
    lkv_buffer *views[4];
} lkv_inputs;

/* One array into `*out`: with `device`, a view of `a` when its handle is
 * set (into *view); else, when `host` is given, `stage` grown to `bytes` and
 * written from it when `upload` (an output is only reserved). */
lkv_status lkv_cache_take_input(lkv_cache *c, int device, lkv_device_array a, const float *host,
                                lkv_stage *stage, size_t bytes, int upload, lkv_buffer **view,
                                const lkv_buffer **out);
void lkv_cache_release_inputs(lkv_cache *c, lkv_inputs *in);

/* Whether the policy observes at step t, and with which kind. */
int lkv_observes_at(const lkv_cache *c, int32_t t, lkv_observe_kind *out_kind);

/* Grows a staging buffer to at least `bytes`. */
lkv_status lkv_stage_reserve(lkv_cache *c, lkv_stage *stage, size_t bytes);

/* Grows c->lists to hold `n` entries. */
lkv_status lkv_lists_reserve(lkv_cache *c, int32_t n);

/* One attend dispatch over `n_groups` groups: group g is the query set
 * q[g] ([q_heads][head_dim] rows of the q buffer) over the first group_n[g]
 * slots of the (sequence, layer) whose first row is row0[g] (c->lists).
 * out and probs as wanted (NULL: not); `observe` only where the backend
 * takes it (attend_observes), else NULL. */
lkv_status lkv_cache_attend(lkv_cache *c, int32_t n_groups, const lkv_buffer *q,
                            lkv_buffer *out, int want_probs, const lkv_attend_observe *observe);

/* The same attend, then the observe of `kind` of every group's rows from
 * its probabilities: group g is sequence seqs[g] at step steps[g] over its
 * group_n[g] slots (c->lists), in `layer`. One dispatch where the backend
 * fuses them (attend_observes), else attend with probs and then
 * lkv_cache_observe. */
lkv_status lkv_cache_attend_observe(lkv_cache *c, int32_t n_groups, const lkv_buffer *q,
                                    lkv_buffer *out, const int32_t *seqs, const int32_t *steps,
                                    int32_t layer, lkv_observe_kind kind);

/* One observe dispatch over every head of the listed sequences' `layer`,
 * each at its own step (steps[i]) over ns[i] slots (NULL: its length); split
 * by step when the backend takes one per call. */
lkv_status lkv_cache_observe(lkv_cache *c, const int32_t *seqs, const int32_t *steps,
                             const int32_t *ns, int32_t n, int32_t layer, lkv_observe_kind kind);

/* The checks every call naming a sequence and a layer shares: non-NULL
 * cache and io, sequence and layer in range. `call` names the API call. */
lkv_status lkv_check_call(const lkv_cache *c, const void *io, const char *call, int32_t seq,
                          int32_t layer);

/* The call fits who owns the K/V: an owned cache takes K/V (or, from trace
 * replay, given probabilities), an engine-owned one the engine's attention
 * only. `owned_call` / `engine_call` name the right calls for the message. */
lkv_status lkv_check_owner(const lkv_cache *c, const lkv_given *given, const char *call,
                           const char *owned_call, const char *engine_call);

/* A sequence index in range. */
lkv_status lkv_check_seq(const lkv_cache *c, int32_t seq);

/* The sequence list of a batch call: 1..sequences distinct indices in range. */
lkv_status lkv_check_list(lkv_cache *c, const int32_t *seqs, int32_t n, const char *call);

/* The checks every batch call starts with: non-NULL cache and io, layer
 * in range, the sequence list, the memory kind. */
lkv_status lkv_check_batch(lkv_cache *c, const void *io, int32_t layer, const int32_t *seqs,
                           int32_t n, lkv_memory memory, const char *call);

/* A memory kind the call accepts: host always; device when the backend
 * wraps and stores device memory. */
lkv_status lkv_check_memory(const lkv_cache *c, lkv_memory memory, const char *call);

/* Fails naming `what` and the element unless all `count` values are finite
 * and, when `stored` as f16, within f16 range. `width`: elements per row. */
lkv_status lkv_check_input(const lkv_cache *c, const float *x, size_t count, int32_t width,
                           const char *what, int stored, int32_t seq, int32_t layer);

/* When an eviction is due. */
typedef enum lkv_due {
    LKV_DUE_DECODE,  /* after decode step t: the policy's period */
    LKV_DUE_PREFILL, /* after the last layer's prompt: the prefill eviction */
    LKV_DUE_EARLY    /* before a step's append, on every full layer: the early
                        eviction (docs/policies-admission.md); t is the step
                        whose state the cache holds, the previous one */
} lkv_due;

/* Layers first .. end - 1. */
typedef struct lkv_layer_span {
    int32_t first, end;
} lkv_layer_span;

/* Whether lkv_schedule would run any eviction for the listed sequences at
 * their steps in those layers. */
int lkv_schedule_due(const lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                     lkv_layer_span span, lkv_due due);

/* Runs the evictions due now of the listed sequences (each at its step
 * steps[i]) in the span's layers, all due pairs that share a plan batched
 * into one pass: on the cache's lane when it has one (core/lane.h), else
 * here and now (lkv_schedule_here). */
lkv_status lkv_schedule(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                        lkv_layer_span span, lkv_due due);
lkv_status lkv_schedule_here(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                             lkv_layer_span span, lkv_due due);

/* The early eviction of a layer holding n slots: 1 and *plan when n is the
 * capacity and the policy can make room, else 0. */
int lkv_early_plan(const lkv_cache *c, int32_t n, lkv_evict_plan *plan);

/* lkv_cache_create for a cache that will never hold more than max_tokens
 * slots in a row (-1: no bound), such as a trace replay's: the policy is
 * checked against config->capacity, but only max_tokens + 1 slots a row are
 * allocated, so a generous budget costs no memory. */
lkv_status lkv_cache_create_holding(lkv_runtime *rt, const lkv_cache_config *config,
                                    int64_t max_tokens, lkv_cache **out_cache);

/* The batch calls' cores, shared by the public calls and trace replay.
 * `given_probs` ([heads][n + 1] f32 per head, n = slots before the append;
 * batches of one only) replaces computed attention, and then a full layer is
 * OUT_OF_MEMORY rather than evicted early (the rows are laid out for the
 * cache as it stands); `given_votes` ([heads][n_tokens], one sequence)
 * replaces the prompt queries' votes. `call` names the public call. */
lkv_status lkv_core_decode(lkv_cache *c, int32_t layer, const lkv_decode_batch_io *io,
                           const lkv_given *given, const char *call);
lkv_status lkv_core_prefill(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                            const lkv_given *given, const char *call);

/* lkv_engine_observe past its checks of io's rows: host rows in io, or the
 * device rows `dev` (a buffer of io->stride-float rows, per query head
 * unless io->rows says cache heads). */
lkv_status lkv_engine_observe_checked(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                                      const lkv_buffer *dev, const char *call);
/* The engine-owned decode observe after its caller's own checks: the
 * cache and list checks, the probabilities', then the step. */
lkv_status lkv_engine_observe(lkv_cache *c, int32_t layer, const lkv_observe_batch_io *io,
                              const char *call);

/* The cache kind and sequence-list checks every engine call starts with. */
lkv_status lkv_engine_check(lkv_cache *c, const void *io, int32_t layer, const int32_t *seqs,
                            int32_t n, const char *call);

/* The engine-owned prompt observe after its caller's own checks. */
lkv_status lkv_engine_prompt(lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io,
                             const char *call);
/* lkv_engine_prompt with the votes in device memory (`dev`: rows as io's
 * votes would hold them, io->votes NULL), read by reduce_rows. */
lkv_status lkv_engine_prompt_given(lkv_cache *c, int32_t layer, const lkv_observe_prompt_io *io,
                                   const lkv_buffer *dev, const char *call);

/* lkv_engine_check and n_tokens: present, each 1 .. capacity. */
lkv_status lkv_engine_check_prompt(lkv_cache *c, const void *io, int32_t layer,
                                   const int32_t *seqs, int32_t n, const int32_t *n_tokens,
                                   const char *call);

/* Whether sequence seq's next decode step at `layer` reads probabilities. */
int lkv_engine_observes(const lkv_cache *c, int32_t seq, int32_t layer);

/* The placeholder K/V an engine-owned cache's store reads (zeros, one
 * element per token and KV head): the cache's rows keep a one-element f16
 * K/V so that every backend's store and compact serve it unchanged. */
lkv_status lkv_engine_zero_kv(lkv_cache *c, int32_t tokens, const lkv_buffer **out);

/* Writes the given probabilities of the listed sequences that observe at
 * their step (c->seq_steps) into c->probs, each over its layer's length. */
lkv_status lkv_given_write(lkv_cache *c, const lkv_given *g, const int32_t *seqs, int32_t n,
                           int32_t layer);

/* The voting queries of a prompt chunk of n tokens after `prefix` earlier
 * ones (more: chunks follow): 1 with the policy's plan and the chunk's first
 * voter as a prompt index in *out_first, or 0 (then *out_first is not
 * written). prefill.c's rule, shared with engine-owned prompts. */
int lkv_chunk_votes(const lkv_cache *c, int32_t prefix, int32_t n, int more,
                    lkv_vote_plan *plan, int32_t *out_first);

/* The engine-owned prompt's votes: round by round, like an owned cache's
 * voting queries (core/prefill.c), from the engine's rows. */
lkv_status lkv_engine_votes(lkv_cache *c, int32_t layer, const lkv_prefill_batch_io *io,
                            const lkv_given *g);

/* Empties the plan: a call that may evict starts with it. */
void lkv_plan_reset(lkv_plan_store *p);
/* The plan of the cache's last call as the public calls give it: its rows,
 * identity and the cache's geometry (lkv_eviction_plan). */
lkv_eviction_plan lkv_plan_of(const lkv_cache *c);
/* The kept lists of the plan's rows read back to the host, where they are
 * not yet (lkv_cache_get_plan). */
lkv_status lkv_plan_read(lkv_cache *c);
/* Appends every head of the listed pairs to the plan (rows of c->rows,
 * keep slots each, their lists left in c->kept; n_before from row_n). */
lkv_status lkv_plan_record(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                           int32_t keep);

/* lkv_placement (core/placement.c): the config's placement is valid and the
 * backend can serve it; a paged cache's block size and pool resolved from
 * their defaults and checked (heads: cache heads per layer); the hole map's
 * rows start as the identity (nothing to do without a map, or in a paged
 * cache, whose rows take places with their blocks). */
lkv_status lkv_placement_check(const lkv_cache_config *cfg, const lkv_backend_ops *ops);
lkv_status lkv_placement_resolve(lkv_cache_config *cfg, int32_t heads);
lkv_status lkv_placement_init(lkv_cache *c);

/* Gives every row of each decision group (lkv_granularity) the group's
 * highest score per slot, so that select keeps the same slots in all: on
 * the device through reduce_rows where the backend has it and each group's
 * rows are consecutive, else through the host (lkv_scores_unite_host,
 * which tests hold the device path to). */
lkv_status lkv_scores_unite(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs);
lkv_status lkv_scores_unite_host(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs);

#endif
