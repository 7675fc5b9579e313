/* The bridge between one llama.cpp context and an engine-owned lazykv cache.
 *
 * llama.cpp keeps K/V in cells, one cell per token for every layer and head,
 * and runs its own attention. The bridge reads each layer's attention
 * probabilities from llama.cpp's eval callback (the "kq_soft_max-<layer>"
 * node of a graph built with flash attention off), hands them to lazykv's
 * observe-and-plan mode, and after the step applies lazykv's plan with
 * llama.cpp's memory API: every evicted position of the sequence is removed
 * (llama_memory_seq_rm), the kept ones stay where they are, positions
 * unchanged (no shift), and llama.cpp fills the freed cells with new tokens.
 *
 * lazykv numbers a row's slots oldest first; llama.cpp's cells are in no
 * such order once it refills holes. The bridge keeps the map slot -> cell,
 * learnt from the attention mask the callback sees beside the
 * probabilities: a token's cell is the one its mask row shows that the
 * previous row (or the cells held before the step) did not. Every step
 * checks that llama.cpp attends exactly the cells lazykv holds.
 *
 * One sequence (id 0), per-token granularity: llama.cpp's memory API removes
 * a position from every layer and head at once, so one decision covers them
 * all (LKV_GRANULARITY_TOKEN); a per-layer or per-head decision has no
 * llama.cpp call that could apply it. */
#ifndef LKV_LLAMA_BRIDGE_H
#define LKV_LLAMA_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "lazykv.h"
#include "llama.h"

typedef struct bridge bridge;

/* What the bridge counts over its life (since bridge_reset). */
typedef struct bridge_counts {
    int32_t held;        /* cells the sequence holds now */
    int32_t peak;        /* the most it held at once (after a step's token) */
    int64_t evicted;     /* positions removed from llama.cpp */
    int64_t plans;       /* steps whose plan evicted */
    double seconds;      /* host time in lazykv calls and plan application */
} bridge_counts;

/* A bridge for `model` whose cache runs `policy` on lazykv's backend
 * `backend` ("auto", "cpu", ...), with room for `capacity` slots (a prompt
 * plus every step: lkv_policy_peak_slots). 0 on success; otherwise 1 and
 * `err` says why. */
int bridge_open(const struct llama_model *model, const char *backend,
                const lkv_policy_params *policy, int32_t capacity, bridge **out,
                char *err, size_t err_len);
void bridge_close(bridge *b);

/* Sets the context parameters the bridge needs: its eval callback and flash
 * attention off (the fused kernel keeps no probabilities). Call before
 * llama_init_from_model, then bridge_bind with the context made. */
void bridge_context_params(bridge *b, struct llama_context_params *params);
void bridge_bind(bridge *b, struct llama_context *ctx);

/* One llama_decode of sequence 0 through the bridge: a prompt of n tokens at
 * positions 0 .. n-1 when the sequence is empty, else one token (n == 1) at
 * the next position. Logits are computed for the last token. Applies the
 * step's plan before returning. 0 on success; otherwise 1 with the reason
 * in bridge_error (llama.cpp's or lazykv's, or a cell map that disagrees). */
int bridge_decode(bridge *b, const llama_token *tokens, int32_t n);

/* llama_decode of `n` tokens of sequence 0 at positions first_pos ..,
 * logits for the last one: what bridge_decode runs, without the bridge. */
int bridge_llama_decode(struct llama_context *ctx, const llama_token *tokens, int32_t n,
                        int32_t first_pos);

/* Empties the sequence in llama.cpp and in lazykv, counters included. */
int bridge_reset(bridge *b);

bridge_counts bridge_get_counts(const bridge *b);
const char *bridge_error(const bridge *b);
lkv_cache *bridge_cache(const bridge *b);
/* lazykv's backend and device ("cpu:0 AMD EPYC"). */
const char *bridge_backend(const bridge *b);

#endif
