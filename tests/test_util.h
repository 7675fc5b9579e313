/* Shared test helpers: a CPU runtime, seeded data, cache set-up. */
#ifndef LKV_TEST_UTIL_H
#define LKV_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lazykv.h"

/* Asserts a call succeeded, printing lkv_last_error() if not. */
#define TU_OK(call)                                                                              \
    do {                                                                                         \
        lkv_status tu_st_ = (call);                                                              \
        cr_assert_eq(tu_st_, LKV_OK, "%s failed: %s: %s", #call, lkv_status_name(tu_st_),        \
                     lkv_last_error());                                                          \
    } while (0)

/* A float's bits and back, for tests that check exact encodings. */
static inline float tu_float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t tu_bits_of_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* What a 16-bit pattern means, by the formats' definitions in double
 * (sign, exponent, fraction; subnormals, inf and NaN), independent of the
 * conversions in core/ and backends/gpu/kernels/ that the tests check. */
double tu_half_value(uint16_t h); /* IEEE binary16: 5 exponent, 10 fraction bits */
double tu_bf16_value(uint16_t b); /* bfloat16: 8 exponent, 7 fraction bits */

/* The cpu runtime (the oracle), opened once per test process and left open. */
lkv_runtime *tu_runtime(void);

/* A runtime of `backend` to close after use, or NULL where it cannot open
 * (no driver or device here); fails the test instead where
 * LAZYKV_REQUIRE_BACKENDS names it, as CI does for vulkan and opencl. */
lkv_runtime *tu_open_backend(const char *backend);

/* Deterministic standard normal / uniform draws. */
double tu_normal(uint64_t *state);
double tu_uniform(uint64_t *state);
void tu_fill_normal(float *x, size_t n, uint64_t *state, double scale);
float *tu_alloc_normal(size_t n, uint64_t *state, double scale);

/* A cache config with the given shape and policy "full", capacity `cap`. */
lkv_cache_config tu_config(int32_t layers, int32_t q_heads, int32_t kv_heads, int32_t dim,
                           int32_t cap);

/* Creates a cache, asserting success. */
lkv_cache *tu_cache(const lkv_cache_config *cfg);

/* One decode step of every layer of sequence 0 with seeded random q/k/v. */
void tu_decode_random(lkv_cache *c, uint64_t *state);

/* Positions of one cache head (caller frees); *out_n gets the count. */
int32_t *tu_positions(const lkv_cache *c, int32_t seq, int32_t layer, int32_t head, int32_t *out_n);
/* Sequence 0 of `dev` (on `backend`) holds exactly the positions `ref`
 * (on the cpu oracle) holds, in every layer and head. */
void tu_expect_same_positions(const lkv_cache *ref, const lkv_cache *dev, const char *backend);

/* Runs fn(arg) on a new thread and waits for it: the thread-affinity tests of
 * the GPU backends (a device opened on one thread, used from another). */
void tu_run_on_a_thread(void *(*fn)(void *), void *arg);

/* Path under the shared folder (LKV_SHARED_DIR), in a static buffer. */
const char *tu_shared_path(const char *rel);

/* Whole file into a malloc'd NUL-terminated string, or NULL. */
char *tu_read_file(const char *path);



/* A runtime on the CPU backend whose eviction ops (and attend) count their
 * calls in tu_counted: the scheduler's batching tests. Opening one resets
 * the counts; rows_seen is the last score call's row count. */
typedef struct tu_op_counts {
    int attend, score, select, compact, rows_seen;
} tu_op_counts;
extern tu_op_counts tu_counted;
lkv_runtime *tu_counting_runtime(void);
void tu_counting_close(lkv_runtime *rt);

/* Replays a JSONL trace on the cpu backend; returns the output lines (caller
 * frees) or NULL with *out_status set. */
char *tu_replay(const char *trace_text, const char *policy, lkv_status *out_status);
#endif
