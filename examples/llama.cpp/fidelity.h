/* --eval: how far lazykv's decisions move llama.cpp from its own full cache.
 *
 * Per prompt, plain llama.cpp (no callback, no lazykv) first decodes greedily:
 * the reference R of G tokens and its logits. Then every lane runs through a
 * bridge: the full cache (policy full: must give plain llama.cpp's logits
 * bit for bit and R itself), then each policy x budget. A lane reads R
 * teacher-forced (KL(p_full || p_lane) in double and top-1 agreement at each
 * of the G positions), then decodes greedily from the prompt until it leaves
 * R (the common prefix). Budgets are shares of the full sequence T = P + G
 * (ceil, as `lazykv eval`), windows min(default, B / 2) unless given; the
 * peak cells of every lane must be within lkv_policy_peak_slots' bound. */
#ifndef LKV_LLAMA_FIDELITY_H
#define LKV_LLAMA_FIDELITY_H

#include <stdio.h>

#include "lazykv.h"
#include "prompts.h"

typedef struct fidelity_settings {
    struct llama_model *model;
    const char *backend;
    int threads;
    int32_t max_tokens;
    int ignore_eos;
    const char *const *policies; /* lazykv policy names */
    int n_policies;
    const double *shares;        /* budgets as shares of T, in (0, 1] */
    int n_shares;
    int32_t window;              /* lazy's W when > 0 */
} fidelity_settings;

/* Runs every lane on every prompt and prints a Markdown table to stdout,
 * and to `markdown` unless NULL (progress to stderr). 0 when every check held; 1 otherwise (the
 * reason on stderr). */
int fidelity_run(const fidelity_settings *s, llama_token *const *prompts, const int32_t *lens,
                 int n_prompts, FILE *markdown);

/* B and W as the lanes set them: B = ceil(share x total) in 1 .. total,
 * W = `window` for lazy when > 0, else min(the policy's default, max(1,
 * B / 2)) for lazy and snapkv. */
void fidelity_budget(lkv_policy_params *p, double share, int32_t total, int32_t window);
/* The same with B given in slots. */
void fidelity_set_budget(lkv_policy_params *p, int32_t budget, int32_t window);

#endif
