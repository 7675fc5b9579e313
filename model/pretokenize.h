/* Pre-tokenizers: the split of text into the pieces BPE encodes one by one,
 * by the rules llama.cpp gives each tokenizer.ggml.pre (llama-vocab.cpp),
 * written as scanners rather than regular expressions. */
#ifndef LKV_PRETOKENIZE_H
#define LKV_PRETOKENIZE_H

#include <stddef.h>

#include "lazykv.h"

typedef enum lkv_pretok_kind {
    /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    LKV_PRETOK_GPT2 = 0,
    /* \p{N} first (each digit a piece of its own), then GPT-2's rule inside the
     * text between digits. */
    LKV_PRETOK_SMOLLM
} lkv_pretok_kind;

/* The kind for a tokenizer.ggml.pre value (`name`, `len` bytes); UNSUPPORTED
 * names any other. */
lkv_status lkv_pretok_from_name(const char *name, size_t len, lkv_pretok_kind *out_kind);

/* Called once per piece, in order; the pieces cover the text exactly. A
 * status other than OK stops the split and is returned. */
typedef lkv_status (*lkv_pretok_emit)(void *ctx, const char *piece, size_t len);

/* Invalid UTF-8 bytes are units of their own outside every class, as
 * llama.cpp's U+FFFD replacement is, so they split the text the same way. */
lkv_status lkv_pretokenize(lkv_pretok_kind kind, const char *text, size_t len,
                           lkv_pretok_emit emit, void *ctx);

#endif
