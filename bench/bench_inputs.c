/* Inputs for the benchmark. Keys and values are uniform in [-1, 1); queries
 * are scaled so the logits have a spread of about 2, which gives a softmax
 * with a tail: one query head's probabilities pass the lazy threshold
 * alpha = 1e-4 at about half the slots at 1K and one in a hundred at 128K,
 * so observe takes both of its paths. */
#include "bench_inputs.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float symmetric(uint64_t *s)
{
    return (float)((double)(next_u64(s) >> 40) / 8388608.0 - 1.0);
}

static void fill_f32(float *x, size_t n, float scale, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * symmetric(s);
}

/* The draws fill_f32 makes at scale 1, rounded to the storage type: every
 * storage type holds the same values up to its rounding. */
static void fill_storage(unsigned char *x, size_t n, lkv_dtype dtype, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        lkv_dtype_store(dtype, x, i, symmetric(s));
}

/* q . k / sqrt(d) with both uniform has standard deviation a / 3 for q in
 * [-a, a): a = 6 gives logits of spread 2. */
static const float query_scale = 6.0f;

lkv_status lkv_bench_op_inputs_make(const lkv_bench_shape *sh, int32_t max_len, uint64_t seed,
                                    lkv_bench_op_inputs *out)
{
    memset(out, 0, sizeof *out);
    out->shape = *sh;
    out->max_len = max_len;
    size_t slots = (size_t)sh->kv_heads * (size_t)max_len;
    size_t elems = slots * (size_t)sh->head_dim;
    size_t elem = lkv_dtype_size(sh->dtype);
    if (elem == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "bench shape dtype %d is not f32, f16 or bf16",
                        (int)sh->dtype);
    out->k = malloc(elems * elem);
    out->v = malloc(elems * elem);
    out->last = malloc(slots * sizeof(int32_t));
    out->mri = malloc(slots * sizeof(int32_t));
    out->q = malloc((size_t)sh->q_heads * (size_t)sh->head_dim * sizeof(float));
    if (!out->k || !out->v || !out->last || !out->mri || !out->q) {
        lkv_bench_op_inputs_free(out);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %zu bench slots of head_dim %d",
                        slots, sh->head_dim);
    }
    uint64_t s = seed * 0x100000001B3ull + 0xBE4Cull;
    fill_storage(out->k, elems, sh->dtype, &s);
    fill_storage(out->v, elems, sh->dtype, &s);
    fill_f32(out->q, (size_t)sh->q_heads * (size_t)sh->head_dim, query_scale, &s);
    /* Lazy state as after a long decode (bench_ops.c observes and scores at
     * step 2048): last important steps in [0, 1024), recurrence intervals up
     * to 400, so the scores spread and select has real ordering to do. */
    for (size_t i = 0; i < slots; i++) {
        out->last[i] = (int32_t)(next_u64(&s) % 1024);
        out->mri[i] = (int32_t)(next_u64(&s) % 400);
    }
    return LKV_OK;
}

void lkv_bench_op_inputs_free(lkv_bench_op_inputs *in)
{
    free(in->k);
    free(in->v);
    free(in->last);
    free(in->mri);
    free(in->q);
    memset(in, 0, sizeof *in);
}

lkv_status lkv_bench_decode_inputs_make(const lkv_bench_shape *sh, int32_t max_len, int32_t steps,
                                        uint64_t seed, lkv_bench_decode_inputs *out)
{
    memset(out, 0, sizeof *out);
    out->shape = *sh;
    out->max_len = max_len;
    out->steps = steps;
    size_t kv = ((size_t)max_len + (size_t)steps) * (size_t)sh->kv_heads * (size_t)sh->head_dim;
    size_t q = (size_t)steps * (size_t)sh->q_heads * (size_t)sh->head_dim;
    out->k = malloc(kv * sizeof(float));
    out->v = malloc(kv * sizeof(float));
    out->q = malloc(q * sizeof(float));
    if (!out->k || !out->v || !out->q) {
        lkv_bench_decode_inputs_free(out);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d decode tokens",
                        max_len + steps);
    }
    uint64_t s = seed * 0x100000001B3ull + 0xDEC0DEull;
    fill_f32(out->k, kv, 1.0f, &s);
    fill_f32(out->v, kv, 1.0f, &s);
    fill_f32(out->q, q, query_scale, &s);
    return LKV_OK;
}

void lkv_bench_decode_inputs_free(lkv_bench_decode_inputs *in)
{
    free(in->k);
    free(in->v);
    free(in->q);
    memset(in, 0, sizeof *in);
}
