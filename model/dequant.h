/* ggml tensor types to f32: the block layouts and their dequantization, one
 * reference implementation each, in the order ggml defines them. */
#ifndef LKV_DEQUANT_H
#define LKV_DEQUANT_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct lkv_ggml_type_info {
    const char *name;       /* "q4_1" */
    int32_t block_elems;    /* elements per block (1 for f32/f16/bf16) */
    int32_t block_bytes;    /* bytes per block */
    int readable;           /* lkv_dequant_row supports it */
} lkv_ggml_type_info;

/* NULL for a type number ggml does not define. */
const lkv_ggml_type_info *lkv_ggml_type_get(uint32_t type);

/* Bytes taken by `n` elements of `type`; 0 with INVALID_ARGUMENT when n is not
 * a whole number of blocks, the type is unknown, or the bytes overflow 64 bits. */
lkv_status lkv_ggml_row_bytes(uint32_t type, int64_t n, uint64_t *out_bytes);

/* Dequantizes `n` elements (a whole number of blocks) from `src` into `dst`.
 * Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
 * UNSUPPORTED names the type otherwise. */
lkv_status lkv_dequant_row(uint32_t type, const void *src, float *dst, int64_t n);

#endif
