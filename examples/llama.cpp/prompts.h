/* Prompts for the llama.cpp example: GSM8K questions or a given text, in
 * SmolLM2's chat format, tokenized by llama.cpp. */
#ifndef LKV_LLAMA_PROMPTS_H
#define LKV_LLAMA_PROMPTS_H

#include <stddef.h>
#include <stdint.h>

#include "llama.h"

/* The instruction `lazykv eval` appends to every GSM8K question (on a line
 * of its own), so both programs read the same prompts. */
#define PROMPT_GSM8K_INSTRUCTION \
    "Solve the problem step by step, then give the final answer as a number on the last line."

/* The "question" strings of JSONL lines skip .. skip + count - 1 of `path`,
 * each followed by "\n" and PROMPT_GSM8K_INSTRUCTION. *out_n says how many
 * (fewer when the file ends). 0 on success; 1 with `err` filled. */
int prompts_read_gsm8k(const char *path, int skip, int count, char ***out, int *out_n,
                       char *err, size_t err_len);
void prompts_free(char **texts, int n);

/* `user` as one user turn in the model's chat template, with the system turn
 * SmolLM2's own template adds when none is given (what `lazykv generate
 * --chat` renders), then tokenized with special tokens parsed. 0 on
 * success; 1 with `err` filled. *out_ids is malloc'd. */
int prompts_encode_chat(const struct llama_model *model, const char *user, llama_token **out_ids,
                        int32_t *out_n, char *err, size_t err_len);

#endif
