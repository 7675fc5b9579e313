/* GGUF v3 reader: the header, the metadata key/value table, the tensor table
 * and the aligned data section of a memory-mapped file. Every length, count
 * and offset is checked against the file's size before it is used, so a
 * truncated or corrupted file is an INVALID_ARGUMENT naming what is wrong,
 * never a read past the end. */
#ifndef LKV_GGUF_H
#define LKV_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"

/* Metadata value types (the GGUF spec's numbering). */
typedef enum lkv_gguf_kind {
    LKV_GGUF_U8 = 0,
    LKV_GGUF_I8 = 1,
    LKV_GGUF_U16 = 2,
    LKV_GGUF_I16 = 3,
    LKV_GGUF_U32 = 4,
    LKV_GGUF_I32 = 5,
    LKV_GGUF_F32 = 6,
    LKV_GGUF_BOOL = 7,
    LKV_GGUF_STRING = 8,
    LKV_GGUF_ARRAY = 9,
    LKV_GGUF_U64 = 10,
    LKV_GGUF_I64 = 11,
    LKV_GGUF_F64 = 12
} lkv_gguf_kind;

/* Tensor element types (ggml's numbering); dequant.h says which are read. */
typedef enum lkv_ggml_type {
    LKV_GGML_F32 = 0,
    LKV_GGML_F16 = 1,
    LKV_GGML_Q4_0 = 2,
    LKV_GGML_Q4_1 = 3,
    LKV_GGML_Q5_0 = 6,
    LKV_GGML_Q5_1 = 7,
    LKV_GGML_Q8_0 = 8,
    LKV_GGML_Q8_1 = 9,
    LKV_GGML_Q2_K = 10,
    LKV_GGML_Q3_K = 11,
    LKV_GGML_Q4_K = 12,
    LKV_GGML_Q5_K = 13,
    LKV_GGML_Q6_K = 14,
    LKV_GGML_Q8_K = 15,
    LKV_GGML_BF16 = 30
} lkv_ggml_type;

/* A string inside the mapped file: not NUL-terminated. */
typedef struct lkv_gguf_str {
    const char *ptr;
    uint64_t len;
} lkv_gguf_str;

/* One metadata value. Scalars are decoded; an array keeps its element kind,
 * its count, and either its packed little-endian elements (`data`) or, for
 * an array of strings, an index built at open (`strings`). */
typedef struct lkv_gguf_value {
    lkv_gguf_kind kind;
    union {
        uint64_t u;  /* U8 U16 U32 U64 BOOL */
        int64_t i;   /* I8 I16 I32 I64 */
        double f;    /* F32 F64 */
        lkv_gguf_str s;
    } as;
    lkv_gguf_kind elem_kind; /* ARRAY only */
    uint64_t count;          /* ARRAY only */
    const void *data;        /* ARRAY of numbers or bools */
    const lkv_gguf_str *strings; /* ARRAY of strings */
} lkv_gguf_value;

typedef struct lkv_gguf_tensor {
    char name[96];
    int32_t n_dims;
    int64_t ne[4];       /* ne[0] is the contiguous dimension; unused dims are 1 */
    lkv_ggml_type type;
    uint64_t offset;     /* from the start of the data section */
    uint64_t bytes;      /* ne[0..3] in blocks of `type` */
    const void *data;    /* inside the mapping */
} lkv_gguf_tensor;

typedef struct lkv_gguf lkv_gguf;

/* Maps and validates `path`: magic "GGUF", version 3 (2 is read too), every
 * key and string within the file, known value and tensor types, dimensions
 * that multiply without overflow and fit the type's block size, tensor data
 * aligned to general.alignment (32 by default) and inside the file. On
 * failure *out is untouched and lkv_last_error() says what and where
 * ("tensor 12 'blk.0.attn_q.weight': data ends at byte 1234 past the end of
 * the file (1000 bytes)"). */
lkv_status lkv_gguf_open(const char *path, lkv_gguf **out);
void lkv_gguf_close(lkv_gguf *g);

uint32_t lkv_gguf_version(const lkv_gguf *g);
uint64_t lkv_gguf_file_bytes(const lkv_gguf *g);

/* NULL when absent. */
const lkv_gguf_value *lkv_gguf_find(const lkv_gguf *g, const char *key);

/* The key/values in file order, for listing them: NULL when i is out of
 * range, else the value, with its key in *out_key (when not NULL). */
int64_t lkv_gguf_kv_count(const lkv_gguf *g);
const lkv_gguf_value *lkv_gguf_kv_at(const lkv_gguf *g, int64_t i, lkv_gguf_str *out_key);

/* Typed lookups: NOT_FOUND-like absence and wrong kinds are INVALID_ARGUMENT
 * naming the key; integers of any width are accepted when the value fits. */
lkv_status lkv_gguf_get_int(const lkv_gguf *g, const char *key, int64_t lo, int64_t hi,
                            int64_t *out);
lkv_status lkv_gguf_get_real(const lkv_gguf *g, const char *key, double *out);
lkv_status lkv_gguf_get_str(const lkv_gguf *g, const char *key, lkv_gguf_str *out);
/* An array of `elem_kind` (any kind when elem_kind is LKV_GGUF_ARRAY). */
lkv_status lkv_gguf_get_array(const lkv_gguf *g, const char *key, lkv_gguf_kind elem_kind,
                              const lkv_gguf_value **out);

int64_t lkv_gguf_tensor_count(const lkv_gguf *g);
const lkv_gguf_tensor *lkv_gguf_tensor_at(const lkv_gguf *g, int64_t i);
const lkv_gguf_tensor *lkv_gguf_find_tensor(const lkv_gguf *g, const char *name);

#endif
