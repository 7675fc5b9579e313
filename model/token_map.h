/* Token text -> id, for building the tokenizer: the keys are the GGUF's own
 * strings (byte-level form), borrowed, so the map lives no longer than the
 * open file. A text given twice keeps the later id, as llama.cpp does. */
#ifndef LKV_TOKEN_MAP_H
#define LKV_TOKEN_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lazykv.h"

typedef struct lkv_token_map {
    const lkv_gguf_str *texts;
    int32_t *slots; /* id, or -1 where empty */
    uint32_t *hashes;
    size_t mask;    /* slot count - 1, a power of two */
} lkv_token_map;

lkv_status lkv_token_map_build(const lkv_gguf_str *texts, int32_t n, lkv_token_map *out);
void lkv_token_map_free(lkv_token_map *m);

/* The id whose text is a followed by b (b may be empty), or -1. */
int32_t lkv_token_map_find2(const lkv_token_map *m, const char *a, size_t alen, const char *b,
                            size_t blen);

#endif
