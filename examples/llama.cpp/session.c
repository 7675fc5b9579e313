/* Plain or bridged llama.cpp decoding behind one interface: session.h. */
#include "session.h"

#include <stdio.h>
#include <string.h>

int session_open(struct llama_model *model, const lkv_policy_params *policy,
                 const char *backend, int32_t n_ctx, int32_t capacity, int32_t max_prompt,
                 int n_threads, session *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (policy && bridge_open(model, backend, policy, capacity, &out->br, err, err_len))
        return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)(max_prompt > 32 ? max_prompt : 32);
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    if (out->br)
        bridge_context_params(out->br, &cp);
    out->ctx = llama_init_from_model(model, cp);
    if (!out->ctx) {
        snprintf(err, err_len, "llama_init_from_model failed (n_ctx %d)", n_ctx);
        session_close(out);
        return 1;
    }
    if (out->br)
        bridge_bind(out->br, out->ctx);
    out->vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    return 0;
}

void session_close(session *s)
{
    if (s->ctx)
        llama_free(s->ctx);
    bridge_close(s->br);
    memset(s, 0, sizeof *s);
}

static int plain_decode(session *s, const llama_token *tokens, int32_t n)
{
    int rc = bridge_llama_decode(s->ctx, tokens, n, s->next_pos);
    if (rc != 0) {
        snprintf(s->error, sizeof s->error, "llama_decode returned %d", rc);
        return 1;
    }
    s->next_pos += n;
    return 0;
}

int session_decode(session *s, const llama_token *tokens, int32_t n)
{
    if (!s->br)
        return plain_decode(s, tokens, n);
    if (bridge_decode(s->br, tokens, n) == 0)
        return 0;
    snprintf(s->error, sizeof s->error, "%s", bridge_error(s->br));
    return 1;
}

const float *session_logits(session *s) { return llama_get_logits_ith(s->ctx, -1); }

llama_token session_argmax(const float *logits, int32_t n)
{
    llama_token best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

int session_reset(session *s)
{
    s->error[0] = '\0';
    if (s->br) {
        if (bridge_reset(s->br) == 0)
            return 0;
        snprintf(s->error, sizeof s->error, "%s", bridge_error(s->br));
        return 1;
    }
    llama_memory_clear(llama_get_memory(s->ctx), true);
    s->next_pos = 0;
    return 0;
}

bridge_counts session_counts(const session *s)
{
    if (s->br)
        return bridge_get_counts(s->br);
    bridge_counts c = {.held = s->next_pos, .peak = s->next_pos};
    return c;
}
