/* A bounds-checked little-endian reader over the bytes of a GGUF file. Each
 * read checks the bytes it needs against what is left before touching them,
 * and a failed read leaves the position where it was, with a message naming
 * the field, its byte offset and the sizes involved. */
#ifndef LKV_GGUF_CURSOR_H
#define LKV_GGUF_CURSOR_H

#include <stdint.h>

#include "gguf.h"
#include "le.h"

typedef struct lkv_gguf_cursor {
    const uint8_t *base;
    uint64_t size; /* bytes in the file */
    uint64_t pos;  /* next byte to read, <= size */
} lkv_gguf_cursor;

static inline uint64_t lkv_gguf_cur_left(const lkv_gguf_cursor *c) { return c->size - c->pos; }

/* INVALID_ARGUMENT unless `n` more bytes are there for `what`. */
lkv_status lkv_gguf_cur_need(const lkv_gguf_cursor *c, uint64_t n, const char *what);

/* The next `n` bytes for `what` (*out points into the file), moving past them. */
lkv_status lkv_gguf_cur_take(lkv_gguf_cursor *c, uint64_t n, const char *what,
                             const uint8_t **out);

lkv_status lkv_gguf_cur_u32(lkv_gguf_cursor *c, const char *what, uint32_t *out);
lkv_status lkv_gguf_cur_u64(lkv_gguf_cursor *c, const char *what, uint64_t *out);

/* A u64 length then that many bytes; *out points into the file. */
lkv_status lkv_gguf_cur_str(lkv_gguf_cursor *c, const char *what, lkv_gguf_str *out);

#endif
