/* Seeded inputs, made once on the host and uploaded to every backend so
 * each one runs on exactly the same data. */
#ifndef LKV_BENCH_INPUTS_H
#define LKV_BENCH_INPUTS_H

#include <stdint.h>

#include "bench.h"

/* The cache contents of one layer for the op timings, at the longest length;
 * a shorter length uses the first slots of every row. */
typedef struct lkv_bench_op_inputs {
    lkv_bench_shape shape;
    int32_t max_len;
    unsigned char *k, *v; /* [kv_heads][max_len][head_dim] in the storage type */
    int32_t *last, *mri;  /* [kv_heads][max_len] lazy state */
    float *q;             /* [q_heads][head_dim] */
} lkv_bench_op_inputs;

lkv_status lkv_bench_op_inputs_make(const lkv_bench_shape *s, int32_t max_len, uint64_t seed,
                                    lkv_bench_op_inputs *out);
void lkv_bench_op_inputs_free(lkv_bench_op_inputs *in);

/* The tokens of the public-API decode step, f32 as the API takes them:
 * a prompt of max_len tokens, then `steps` decoded tokens. */
typedef struct lkv_bench_decode_inputs {
    lkv_bench_shape shape;
    int32_t max_len;
    int32_t steps;
    float *k, *v; /* [max_len + steps][kv_heads][head_dim] */
    float *q;     /* [steps][q_heads][head_dim] */
} lkv_bench_decode_inputs;

lkv_status lkv_bench_decode_inputs_make(const lkv_bench_shape *s, int32_t max_len, int32_t steps,
                                        uint64_t seed, lkv_bench_decode_inputs *out);
void lkv_bench_decode_inputs_free(lkv_bench_decode_inputs *in);

#endif
