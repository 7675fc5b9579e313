/* The Llama forward pass on the CPU, whose every attention goes through a
 * lazykv cache: RMSNorm, Q/K/V projections, RoPE, attention by
 * lkv_cache_prefill_batch / lkv_cache_decode_batch (the cache evicts by its
 * policy), the output projection, SwiGLU, the final norm and the (tied)
 * classifier.
 *
 * Several lanes (each a cache and sequence, e.g. one per policy) may step
 * together; their matmuls share one pass over the weights, and the lanes
 * that are sequences of one cache share one batch call per layer. */
#ifndef LKV_FORWARD_H
#define LKV_FORWARD_H

#include <stdint.h>

#include "lazykv.h"
#include "model.h"
#include "pool.h"

/* One sequence being decoded: where its K/V live and the position of its next
 * token (advanced by the calls below). The cache must have the model's shape
 * (lkv_model_cache_shape). */
typedef struct lkv_lane {
    lkv_cache *cache;
    int32_t sequence;
    int32_t position;
} lkv_lane;

typedef struct lkv_forward lkv_forward;

/* Scratch for up to `max_lanes` lanes per step and prompts of up to
 * `max_prompt` tokens. The pool is borrowed. */
lkv_status lkv_forward_create(const lkv_model *m, lkv_pool *pool, int32_t max_lanes,
                              int32_t max_prompt, lkv_forward **out_fw);
/* Seconds the decode steps so far spent inside lazykv's cache calls
 * (store, attention, observation, evictions): the share of a step that is
 * lazykv's, the rest being the model's matmuls. */
double lkv_forward_cache_seconds(const lkv_forward *fw);
void lkv_forward_free(lkv_forward *fw);

/* Runs a prompt. Every lane gets the same tokens; since prefill attention is
 * causal over the whole prompt whatever the policy, the hidden states are
 * computed once, attending through lane 0's cache, and each layer's K/V (and
 * Q, for the policies that vote with the prompt's queries) go to every lane's
 * cache. So every lane's cache must store K/V as lane 0's does: the same
 * dtype and softmax scale (INVALID_ARGUMENT naming both otherwise; the gqa
 * mode may differ, as it does not change the values). Their caches should
 * also come from one runtime: a cache does not say which runtime it belongs
 * to, so this cannot be checked, and a lane on another backend would take
 * lane 0's backend's arithmetic for its prompt. out_logits (may be NULL):
 * [vocab], after the last token. Lanes' positions advance by n_tokens. */
lkv_status lkv_forward_prefill(lkv_forward *fw, lkv_lane *lanes, int32_t n_lanes,
                               const int32_t *tokens, int32_t n_tokens, float *out_logits);

/* One token per lane (tokens[i] for lanes[i]); out_logits: [n_lanes][vocab].
 * On failure (e.g. OUT_OF_MEMORY from a full cache, with its message) the
 * lanes' positions are unchanged, but caches of layers already stepped have
 * the token: reset the sequences before reuse. */
lkv_status lkv_forward_step(lkv_forward *fw, lkv_lane *lanes, int32_t n_lanes,
                            const int32_t *tokens, float *out_logits);

#endif
