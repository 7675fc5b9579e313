/* SmolLM2's tokenizer from GGUF metadata: byte-level BPE (GPT-2 byte map,
 * ranked merges), the pre-tokenizer of tokenizer.ggml.pre, control tokens, and
 * the chat template. */
#ifndef LKV_TOKENIZER_H
#define LKV_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lazykv.h"

typedef struct lkv_tokenizer lkv_tokenizer;

/* Needs tokenizer.ggml.model "gpt2", tokens, merges (token_type optional);
 * UNSUPPORTED names another model or pre-tokenizer. */
lkv_status lkv_tokenizer_from_gguf(const lkv_gguf *g, lkv_tokenizer **out_tok);
void lkv_tokenizer_free(lkv_tokenizer *tok);

int32_t lkv_tokenizer_vocab(const lkv_tokenizer *tok);
int32_t lkv_tokenizer_bos(const lkv_tokenizer *tok); /* -1 when none */
int32_t lkv_tokenizer_eos(const lkv_tokenizer *tok); /* -1 when none */
/* True for the tokens that end a reply: eos, eot_token_id, and the tokens
 * <|im_end|> (ChatML's end of turn) and <|endoftext|>, which llama.cpp also
 * ends generation on. */
int lkv_tokenizer_is_end(const lkv_tokenizer *tok, int32_t id);

/* Text (any bytes; invalid UTF-8 goes through byte by byte) to ids, in a
 * malloc'd array. With parse_special, the text of a control token
 * ("<|im_start|>") becomes that token; without, it is ordinary text. A byte
 * the vocabulary has no token for (SmolLM2 lacks 0xC0, 0xC1, 0xF5..0xFF and a
 * few controls such as 0x04) is INVALID_ARGUMENT naming its offset. */
lkv_status lkv_tokenizer_encode(const lkv_tokenizer *tok, const char *text, size_t len,
                                int parse_special, int32_t **out_ids, int32_t *out_n);

/* The bytes of one token (a piece of UTF-8, possibly a partial character).
 * Control tokens give their text only with show_special. Writes at most cap
 * bytes; *out_len is the full length. */
lkv_status lkv_tokenizer_piece(const lkv_tokenizer *tok, int32_t id, int show_special,
                               char *buf, size_t cap, size_t *out_len);

/* Renders a one-turn chat with the model's template: the template's default
 * system message unless `system` is given, the user's message, and the
 * assistant prefix (ChatML, the format of tokenizer.chat_template; another
 * template is UNSUPPORTED). malloc'd NUL-terminated text, to be encoded with
 * parse_special. */
lkv_status lkv_chat_render(const lkv_tokenizer *tok, const char *system, const char *user,
                           char **out_text);

#endif
