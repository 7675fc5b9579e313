/* The pieces of `lazykv generate` (tools/cmd_generate.c): the prompt as
 * token ids, the cache a run gets, the sampler, and the text stream. Each
 * helper that can fail on input prints its one-line error and returns the
 * exit code 2, else 0. */
#ifndef LKV_GEN_H
#define LKV_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lazykv.h"
#include "model.h"
#include "policy_budget.h"
#include "tokenizer.h"

/* ---- gen_prompt.c: the prompt ---- */

/* Exactly one of text, chat, file, ids is set; system goes with chat. */
typedef struct gen_prompt_spec {
    const char *text;      /* raw text; control-token text becomes the token */
    const char *chat;      /* one user turn through the model's chat template */
    const char *system;    /* system message of the chat (template default if NULL) */
    const char *file;      /* raw text read from a file */
    const char *file_text; /* its contents, once gen_prompt_read_file has run */
    const char *ids;       /* "1,2,3": ids, for models without a tokenizer */
} gen_prompt_spec;

/* Exactly one source, and --system only with --chat. */
int gen_prompt_check(const gen_prompt_spec *spec);

/* Reads --prompt-file (before the model loads, so a bad file fails fast)
 * into *out_buf (malloc'd, NULL without a file) and spec->file_text. */
int gen_prompt_read_file(gen_prompt_spec *spec, char **out_buf);

/* The prompt's ids (malloc'd) and, for a text prompt, the text that was
 * encoded (malloc'd, NULL for ids). `tok` may be NULL (llama2.c models):
 * then only ids are accepted. Ids must lie in 0 .. vocab - 1. */
int gen_prompt_ids(const gen_prompt_spec *spec, const lkv_model *m, const lkv_tokenizer *tok,
                   int32_t **out_ids, int32_t *out_n, char **out_text);

/* ---- gen_cache.c: the cache of a run ---- */

/* A policy parameter given on the command line (--window, --alpha, --param). */
typedef struct gen_param {
    char key[32];
    const char *value;
    const char *flag; /* the flag it came from, for the error */
} gen_param;

typedef struct gen_cache_spec {
    const char *policy;
    lkv_budget budget;   /* a count, or a share of prompt + max_tokens */
    int budget_given;    /* --budget on the command line */
    const gen_param *params;
    int n_params;
    lkv_dtype dtype;
    lkv_gqa_mode gqa;
    lkv_eviction_timing eviction;
    lkv_placement placement;
    int32_t block_size;  /* paged: slots per block (0: the library's 16) */
} gen_cache_spec;

/* The policy name and parameters alone, before the model is loaded. */
int gen_cache_check(const gen_cache_spec *spec);

/* The configuration for a prompt of `prompt` tokens followed by at most
 * `max_tokens` generated ones: the model's shape; the policy with its budget
 * and, unless given, its window (policy_budget.h's rules); the parameters
 * given by name; and the smallest capacity the policy can never overflow on
 * that sequence (whose last token is never fed back) and that
 * lkv_cache_create accepts. */
int gen_cache_config(const gen_cache_spec *spec, const lkv_model *m, int32_t prompt,
                     int32_t max_tokens, lkv_cache_config *out_cfg);

/* 1 when the window was given (--window, --param window=). */
int gen_cache_window_given(const gen_cache_spec *spec);

/* One line naming the policy and the parameters it reads ("lazy: budget 148,
 * window 74 (default), alpha 0.0001, group reduce max"), from a resolved
 * config; `window_given` 0 marks the window as the default rule's. */
void gen_policy_line(const lkv_cache_config *cfg, int window_given, char *buf, size_t len);

/* ---- gen_sample.c: choosing the next token ---- */

typedef struct gen_candidate {
    double p; /* unnormalised probability */
    int32_t id;
} gen_candidate;

typedef struct gen_sampler {
    int32_t vocab;
    double temperature;     /* 0: greedy */
    double top_p;           /* 1: no nucleus cut */
    uint64_t state;         /* splitmix64 */
    gen_candidate *cands;   /* [vocab] */
} gen_sampler;

int gen_sampler_init(gen_sampler *s, int32_t vocab, double temperature, double top_p,
                     uint64_t seed);
void gen_sampler_free(gen_sampler *s);

/* The next token from `logits` [vocab]: the argmax (lowest id on a tie) when
 * greedy, else a draw from softmax(logits / T) cut to the top-p nucleus. */
int32_t gen_sample(gen_sampler *s, const float *logits);

/* ---- gen_stream.c: text out as it comes ---- */

/* Writes token pieces to `f`, flushing after each, holding back the bytes of
 * a UTF-8 character whose remaining bytes have not come yet. */
typedef struct gen_stream {
    FILE *f;
    char held[4];
    size_t n_held;
    int last; /* last byte written, -1 before any */
} gen_stream;

void gen_stream_init(gen_stream *s, FILE *f);
void gen_stream_put(gen_stream *s, const char *bytes, size_t n);
/* Writes whatever is held (an incomplete character stays incomplete). */
void gen_stream_finish(gen_stream *s);

#endif
