/* A small streaming JSON writer: nesting, commas and escaping handled here so
 * the results schema (bench_json.c) reads as a list of fields. */
#ifndef LKV_BENCH_JSON_WRITER_H
#define LKV_BENCH_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

#define LKV_JW_MAX_DEPTH 16

typedef struct lkv_jw {
    FILE *f;
    int depth;
    int count[LKV_JW_MAX_DEPTH];   /* members written at each level */
    int one_line[LKV_JW_MAX_DEPTH]; /* level written on one line */
    int overflow;                   /* nesting deeper than LKV_JW_MAX_DEPTH */
} lkv_jw;

void lkv_jw_init(lkv_jw *w, FILE *f);

/* `key` names the member inside an object and is NULL elsewhere. A container
 * begun `one_line` keeps itself and its children on one line. */
void lkv_jw_begin_object(lkv_jw *w, const char *key, int one_line);
void lkv_jw_end_object(lkv_jw *w);
void lkv_jw_begin_array(lkv_jw *w, const char *key, int one_line);
void lkv_jw_end_array(lkv_jw *w);

void lkv_jw_string(lkv_jw *w, const char *key, const char *value);
/* Six significant digits; NaN and infinities, which JSON lacks, are null. */
void lkv_jw_number(lkv_jw *w, const char *key, double value);
void lkv_jw_int(lkv_jw *w, const char *key, int64_t value);
void lkv_jw_bool(lkv_jw *w, const char *key, int value);
void lkv_jw_null(lkv_jw *w, const char *key);

/* Ends the document with a newline; 0, or -1 when the stream failed or the
 * nesting was unbalanced. */
int lkv_jw_finish(lkv_jw *w);

#endif
