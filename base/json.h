/* A small strict JSON reader for trace lines: whole values, numbers keep
 * their source text (so "1e-4" reaches lkv_policy_set unchanged). */
#ifndef LKV_JSON_H
#define LKV_JSON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

typedef enum lkv_json_type {
    LKV_JSON_NULL,
    LKV_JSON_BOOL,
    LKV_JSON_NUMBER,
    LKV_JSON_STRING,
    LKV_JSON_ARRAY,
    LKV_JSON_OBJECT
} lkv_json_type;

typedef struct lkv_json {
    lkv_json_type type;
    double number;         /* NUMBER; BOOL as 0/1 */
    char *text;            /* NUMBER: source text; STRING: decoded UTF-8 */
    struct lkv_json *items; /* ARRAY elements, OBJECT values */
    char **keys;           /* OBJECT keys, parallel to items */
    int count;
    int cap;               /* allocated items */
} lkv_json;

/* Parses exactly one value (surrounding whitespace allowed). On failure
 * returns -1 and writes a message with the byte offset to `err`. */
int lkv_json_parse(const char *text, size_t len, lkv_json *out, char *err, size_t err_len);
void lkv_json_free(lkv_json *v);

/* Key comparisons the duplicate-key check has made, in this process: the
 * tests hold it to n log n. */
extern atomic_size_t lkv_json_key_compares;

/* Member `key` of an object, or NULL. */
const lkv_json *lkv_json_get(const lkv_json *obj, const char *key);

/* Writes `s` (NULL as "") as a JSON string: quotes, backslashes and control
 * characters escaped, and each ill-formed UTF-8 sequence (a character cut
 * between two tokens, say) written as \ufffd, so the output is always valid
 * JSON. For the tools' JSON and JSONL output. */
void lkv_json_write_string(FILE *f, const char *s);

#endif
