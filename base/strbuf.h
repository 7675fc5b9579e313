/* A growable text buffer filled printf-style, for output built line by line
 * (trace replay's JSONL, the conformance suite's generated traces). */
#ifndef LKV_STRBUF_H
#define LKV_STRBUF_H

#include <stddef.h>

#include "error.h"

typedef struct lkv_strbuf {
    char *s;     /* NUL-terminated once anything is written; caller frees */
    size_t len, cap;
    int failed;  /* out of memory: later writes are dropped */
} lkv_strbuf;

/* Appends printf-style output, growing the buffer; on allocation failure
 * sets `failed` and keeps what was there. */
void lkv_strbuf_printf(lkv_strbuf *b, const char *fmt, ...) LKV_PRINTF(2, 3);

#endif
