/* K/V storage types for core and backends: element loads and stores in the
 * storage type, and the range checks inputs pass before they are stored.
 * The public names and sizes are lkv_dtype_name/size in lazykv.h. */
#ifndef LKV_DTYPE_H
#define LKV_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bf16.h"
#include "fp16.h"
#include "lazykv.h"

/* How many lkv_dtype values there are: a table indexed by dtype asserts it
 * has this many rows, so a new type cannot reach a missing row. */
#define LKV_DTYPE_COUNT 3

/* The largest finite value the type stores; inputs above it are refused. */
float lkv_dtype_largest(lkv_dtype dtype);

/* OK for an lkv_dtype; otherwise INVALID_ARGUMENT naming the value, the
 * backend and the op ("vulkan attend: K/V dtype 7 is not ..."). Backends
 * check before they plan on the element size. */
lkv_status lkv_dtype_check(lkv_dtype dtype, const char *backend, const char *op);

/* Element i of a row stored as `dtype`, widened to float (exact). */
static inline float lkv_dtype_load(lkv_dtype dtype, const void *row, size_t i)
{
    const unsigned char *p = (const unsigned char *)row;
    if (dtype == LKV_DTYPE_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return dtype == LKV_DTYPE_BF16 ? lkv_bf16_to_float(h) : lkv_half_to_float(h);
}

/* Stores x as element i of a row of `dtype`, rounded to nearest even. */
static inline void lkv_dtype_store(lkv_dtype dtype, void *row, size_t i, float x)
{
    unsigned char *p = (unsigned char *)row;
    if (dtype == LKV_DTYPE_F32) {
        memcpy(p + 4 * i, &x, 4);
        return;
    }
    uint16_t h = dtype == LKV_DTYPE_BF16 ? lkv_float_to_bf16(x) : lkv_float_to_half(x);
    memcpy(p + 2 * i, &h, 2);
}

#endif
