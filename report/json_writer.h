/* A small streaming JSON writer for the tools' output files (bench, eval,
 * the conformance JSONL): nesting, commas, indentation and escaping are
 * handled here, so each schema reads as a list of fields. */
#ifndef LKV_JSON_WRITER_H
#define LKV_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

#define LKV_JW_MAX_DEPTH 16

typedef struct lkv_jw {
    FILE *f;
    int digits;                     /* significant digits of lkv_jw_number */
    int depth;
    int count[LKV_JW_MAX_DEPTH];    /* members written at each level */
    int one_line[LKV_JW_MAX_DEPTH]; /* level written on one line */
    int overflow;                   /* nesting deeper than LKV_JW_MAX_DEPTH */
} lkv_jw;

/* Numbers get six significant digits unless `digits` is changed after. */
void lkv_jw_init(lkv_jw *w, FILE *f);

/* `key` names the member inside an object and is NULL elsewhere. A container
 * begun `one_line` keeps itself and its children on one line; elsewhere each
 * member goes on its own line, indented two spaces a level. */
void lkv_jw_begin_object(lkv_jw *w, const char *key, int one_line);
void lkv_jw_end_object(lkv_jw *w);
void lkv_jw_begin_array(lkv_jw *w, const char *key, int one_line);
void lkv_jw_end_array(lkv_jw *w);

/* A NULL value is written as null. */
void lkv_jw_string(lkv_jw *w, const char *key, const char *value);
/* `digits` significant digits (%g); NaN and infinities, which JSON lacks,
 * are null. */
void lkv_jw_number(lkv_jw *w, const char *key, double value);
/* `decimals` digits after the point (%f), for durations; null as above. */
void lkv_jw_fixed(lkv_jw *w, const char *key, double value, int decimals);
void lkv_jw_int(lkv_jw *w, const char *key, int64_t value);
void lkv_jw_uint(lkv_jw *w, const char *key, uint64_t value);
void lkv_jw_bool(lkv_jw *w, const char *key, int value);
void lkv_jw_null(lkv_jw *w, const char *key);

/* Ends the document with a newline and flushes; 0, or -1 when the stream
 * failed or the nesting was unbalanced. */
int lkv_jw_finish(lkv_jw *w);

#endif
