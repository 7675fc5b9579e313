/* A bounds-checked little-endian reader over the bytes of a GGUF file. Each
 * read checks the bytes it needs against what is left before touching them,
 * and a failed read leaves the position where it was, with a message naming
 * the field, its byte offset and the sizes involved. */
#ifndef LKV_GGUF_CURSOR_H
#define LKV_GGUF_CURSOR_H

#include <stdint.h>

#include "gguf.h"

typedef struct lkv_gguf_cursor {
    const uint8_t *base;
    uint64_t size; /* bytes in the file */
    uint64_t pos;  /* next byte to read, <= size */
} lkv_gguf_cursor;

static inline uint64_t lkv_gguf_cur_left(const lkv_gguf_cursor *c) { return c->size - c->pos; }

/* INVALID_ARGUMENT unless `n` more bytes are there for `what`. */
lkv_status lkv_gguf_cur_need(const lkv_gguf_cursor *c, uint64_t n, const char *what);

lkv_status lkv_gguf_cur_skip(lkv_gguf_cursor *c, uint64_t n, const char *what);
lkv_status lkv_gguf_cur_u8(lkv_gguf_cursor *c, const char *what, uint8_t *out);
lkv_status lkv_gguf_cur_u16(lkv_gguf_cursor *c, const char *what, uint16_t *out);
lkv_status lkv_gguf_cur_u32(lkv_gguf_cursor *c, const char *what, uint32_t *out);
lkv_status lkv_gguf_cur_u64(lkv_gguf_cursor *c, const char *what, uint64_t *out);

/* A u64 length then that many bytes; *out points into the file. */
lkv_status lkv_gguf_cur_str(lkv_gguf_cursor *c, const char *what, lkv_gguf_str *out);

/* Little-endian loads from memory already checked to hold them. */
static inline uint16_t lkv_gguf_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t lkv_gguf_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t lkv_gguf_le64(const uint8_t *p)
{
    return (uint64_t)lkv_gguf_le32(p) | ((uint64_t)lkv_gguf_le32(p + 4) << 32);
}

#endif
