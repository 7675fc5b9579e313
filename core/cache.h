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
    int in_prefill;        /* some layers prefilled, not all */
    int prefilled;
    int32_t prompt_tokens; /* what layer 0's prefill set, for the other layers */
    int32_t first_position;
    int32_t next_position; /* position of the next decoded token */
} lkv_sequence;

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
    lkv_buffer *q_dev, *out_dev;       /* [q_heads][head_dim] f32 staging */
    lkv_sequence *seqs;
    int32_t *rows, *row_n, *row_k;     /* [layers * heads] batch lists */
    lkv_evict_plan *plans;             /* [layers] scheduler scratch */
    int32_t *layer_list;
    unsigned char *due;
    lkv_cache_stats stats;
};

static inline int32_t lkv_row_of(const lkv_cache *c, int32_t seq, int32_t layer, int32_t head)
{
    return (seq * c->cfg.layers + layer) * c->heads + head;
}

/* Writes `count` tokens' K/V ([count][kv_heads][head_dim] f32, converted to
 * the storage type and copied per cache head), positions and zeroed state
 * (state_a = last_init) at slots len .. len + count of every head of the
 * layer, then advances len. Capacity is the caller's to check. */
lkv_status lkv_cache_append(lkv_cache *c, int32_t seq, int32_t layer, int32_t count,
                            const float *k, const float *v, int32_t first_position,
                            int32_t last_init);

/* Copies host rows src[heads][n] to the first n slots of every head of
 * (seq, layer) in a [rows][capacity] f32 buffer (probs, state_f). */
lkv_status lkv_cache_write_rows(lkv_cache *c, int32_t seq, int32_t layer, lkv_buffer *dst,
                                const float *src, int32_t n);

/* Undoes lkv_cache_append's length and counters (the bytes stay, unreachable). */
void lkv_cache_unappend(lkv_cache *c, int32_t seq, int32_t layer, int32_t count);

/* Attention of one query vector set ([q_heads][head_dim]) over the first n
 * slots of every head of (seq, layer); out and/or probs as wanted. */
lkv_status lkv_cache_attend(lkv_cache *c, int32_t seq, int32_t layer, int32_t n,
                            const float *q, float *out, int want_probs);

lkv_status lkv_cache_observe(lkv_cache *c, int32_t seq, int32_t layer, int32_t n,
                             lkv_observe_kind kind, int32_t t);

/* The checks every per-layer call shares: non-NULL cache and io, sequence
 * and layer in range, host memory. `call` names the API call. */
lkv_status lkv_check_call(const lkv_cache *c, const void *io, const char *call, int32_t seq,
                          int32_t layer, lkv_memory memory);

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

/* Runs the evictions of `seq` due now, for layers first_layer .. layers - 1,
 * all due layers batched into one pass. */
lkv_status lkv_schedule(lkv_cache *c, int32_t seq, int32_t first_layer, int32_t t, lkv_due due);

/* The early eviction of a layer holding n slots: 1 and *plan when n is the
 * capacity and the policy can make room, else 0. */
int lkv_early_plan(const lkv_cache *c, int32_t n, lkv_evict_plan *plan);

/* lkv_cache_create for a cache that will never hold more than max_tokens
 * slots in a row (-1: no bound), such as a trace replay's: the policy is
 * checked against config->capacity, but only max_tokens + 1 slots a row are
 * allocated, so a generous budget costs no memory. */
lkv_status lkv_cache_create_holding(lkv_runtime *rt, const lkv_cache_config *config,
                                    int64_t max_tokens, lkv_cache **out_cache);

/* Internal entry points shared by the public calls and trace replay.
 * `given_probs` ([heads][n + 1] f32 per head, n = slots before the append)
 * replaces computed attention, and then a full layer is OUT_OF_MEMORY rather
 * than evicted early (the rows are laid out for the cache as it stands);
 * `given_votes` ([heads][n_tokens]) replaces the prompt queries' votes. */
lkv_status lkv_core_decode(lkv_cache *c, int32_t seq, int32_t layer, const lkv_decode_io *io,
                           const float *given_probs);
lkv_status lkv_core_prefill(lkv_cache *c, int32_t seq, int32_t layer, const lkv_prefill_io *io,
                            const float *given_votes);

#endif
