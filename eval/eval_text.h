/* Generated tokens as text, and the final answer read from them. */
#ifndef LKV_EVAL_TEXT_H
#define LKV_EVAL_TEXT_H

#include "eval.h"

/* The tokens' pieces concatenated (control tokens left out), malloc'd. */
lkv_status lkv_eval_decode(const lkv_tokenizer *tok, const int32_t *ids, int32_t n,
                           char **out_text);

/* The final answer of a generation: the last number of its text, or, for a
 * model without a tokenizer (text NULL), its last token id; "" when none. */
void lkv_eval_final_answer(const char *text, const int32_t *ids, int32_t n, char *out,
                           size_t cap);

#endif
