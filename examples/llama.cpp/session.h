/* One llama.cpp context decoding one sequence, either plain (llama.cpp's own
 * full cache, nothing of lazykv) or through a bridge (lazykv decides which
 * cells it keeps). The same calls drive both, so the example can compare
 * them token for token. */
#ifndef LKV_LLAMA_SESSION_H
#define LKV_LLAMA_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "bridge.h"

typedef struct session {
    struct llama_context *ctx;
    bridge *br;            /* NULL: plain llama.cpp */
    int32_t vocab;         /* logits per step */
    int32_t next_pos;      /* plain sessions count positions themselves */
    char error[512];
} session;

/* A context of n_ctx cells (llama.cpp rounds it up to its padding) with room
 * for a prompt of `max_prompt` tokens in one batch, flash attention off,
 * n_threads threads. policy NULL: plain llama.cpp; otherwise a bridge on
 * lazykv's `backend` with `capacity` slots. 0 on success; 1 with `err`. */
int session_open(struct llama_model *model, const lkv_policy_params *policy,
                 const char *backend, int32_t n_ctx, int32_t capacity, int32_t max_prompt,
                 int n_threads, session *out, char *err, size_t err_len);
void session_close(session *s);

/* Decodes a prompt (on an empty sequence) or one token; the logits of the
 * last token are then session_logits'. 0 on success; 1 with s->error. */
int session_decode(session *s, const llama_token *tokens, int32_t n);
const float *session_logits(session *s);
/* The greedy choice: the first largest of n logits. */
llama_token session_argmax(const float *logits, int32_t n);
int session_reset(session *s);

/* Cells the sequence holds and held at most; for a plain session every
 * token decoded. */
bridge_counts session_counts(const session *s);

#endif
