/* Byte-level BPE: the ranked merges of tokenizer.ggml.merges as a table of
 * (left id, right id) -> (rank, merged id), and the encoding of one
 * pre-tokenized piece: start from one token per byte, then merge the
 * lowest-ranked adjacent pair (the leftmost among equals) until no pair has
 * a rank, as llama.cpp and Hugging Face's tokenizers do. */
#ifndef LKV_BPE_H
#define LKV_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lazykv.h"
#include "token_map.h"

typedef struct lkv_bpe lkv_bpe;

/* A growing list of token ids. */
typedef struct lkv_ids {
    int32_t *v;
    size_t n, cap;
} lkv_ids;

lkv_status lkv_ids_push(lkv_ids *ids, int32_t id);

/* `merges` are "left right" in the vocabulary's byte-level form; left, right
 * and their concatenation must all be tokens. Every byte's token is looked
 * up too; a byte without one can still be loaded but not encoded. */
lkv_status lkv_bpe_create(const lkv_gguf_str *merges, uint64_t n_merges, const lkv_token_map *map,
                          lkv_bpe **out_bpe);
void lkv_bpe_free(lkv_bpe *bpe);

/* The offset of the first byte of text that has no token, or len. */
size_t lkv_bpe_untokenizable(const lkv_bpe *bpe, const char *text, size_t len);

/* Scratch space reused across pieces; zero-initialize, free when done. */
typedef struct lkv_bpe_work {
    struct lkv_bpe_symbol *sym;
    struct lkv_bpe_pair *heap;
    size_t cap;
} lkv_bpe_work;

void lkv_bpe_work_free(lkv_bpe_work *w);

/* Appends the ids of `piece` to `out`. A byte without a token is
 * INVALID_ARGUMENT naming it. */
lkv_status lkv_bpe_encode(const lkv_bpe *bpe, lkv_bpe_work *w, const char *piece, size_t len,
                          lkv_ids *out);

#endif
