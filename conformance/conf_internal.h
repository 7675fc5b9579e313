/* The suite's internals: seeded inputs, case buffers with guard regions,
 * comparisons, per-case verdicts and their reporting. */
#ifndef LKV_CONF_INTERNAL_H
#define LKV_CONF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "conformance.h"
#include "progress_line.h"
#include "runtime.h"

#if defined(__GNUC__)
#define CONF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CONF_PRINTF(a, b)
#endif

/* ---- deterministic inputs (conf_rng.c) --------------------------------- */

/* splitmix64: tiny, fast, and the same sequence on every host. */
typedef struct conf_rng {
    uint64_t state;
} conf_rng;

/* A stream per (seed, case name): cases draw independent data, and the same
 * case and seed always draw the same. */
void conf_rng_init(conf_rng *r, uint64_t seed, const char *stream);
uint64_t conf_rng_next(conf_rng *r);
double conf_rng_uniform(conf_rng *r);           /* in (0, 1) */
double conf_rng_normal(conf_rng *r);            /* standard normal */
int32_t conf_rng_below(conf_rng *r, int32_t n); /* in 0 .. n-1; 0 when n <= 0 */
/* The non-finite values NaN/Inf parity is checked with: 0 NaN, 1 +inf, 2 -inf. */
float conf_special(int which);
void conf_rng_shuffle(conf_rng *r, int32_t *x, int32_t n);
/* k distinct values of 0 .. n-1, ascending, into out[0..k). */
void conf_rng_subset(conf_rng *r, int32_t n, int32_t k, int32_t *out);

/* ---- case buffers (conf_buffers.c) ------------------------------------- */

#define CONF_MAX_IMAGES 10
#define CONF_PAD_BYTES 256 /* guard after every buffer: catches writes past the end */

enum { CONF_ORACLE = 0, CONF_TESTED = 1 };

typedef enum conf_elem {
    CONF_ELEM_F32,
    CONF_ELEM_I32,
    CONF_ELEM_F16,
    CONF_ELEM_BF16
} conf_elem;

/* One device buffer of a case, laid out [rows][capacity][slot] plus a
 * trailing pad. `host` is what both runtimes start with: inputs where the op
 * reads, the sentinel everywhere else. The op may write slots
 * [0, writable[r]) of row r and nothing else. */
typedef struct conf_image {
    const char *name;
    conf_elem elem;
    int32_t rows, capacity;
    size_t slot_bytes;
    size_t bytes;           /* rows * capacity * slot_bytes, without the pad */
    unsigned char *host;    /* bytes + CONF_PAD_BYTES */
    int32_t *writable;      /* [rows], 0 at first */
    int read_back;          /* compared after the op */
    unsigned char *got[2];  /* what each side holds after the op, with the pad */
} conf_image;

typedef struct conf_case {
    lkv_runtime *rt[2];
    conf_image img[CONF_MAX_IMAGES];
    int count;
    int failed_alloc; /* a host allocation failed while building */
    lkv_buffer *dev[2][CONF_MAX_IMAGES];
} conf_case;

void conf_case_init(conf_case *c, lkv_runtime *oracle, lkv_runtime *tested);
void conf_case_free(conf_case *c);

/* Adds a buffer filled with the sentinel and returns its index (-1 and
 * failed_alloc set when host memory runs out; later calls then do nothing). */
int conf_add_image(conf_case *c, const char *name, conf_elem elem, int32_t rows,
                   int32_t capacity, size_t slot_bytes);

/* Typed host views of an image (NULL for index -1). */
void *conf_host(conf_case *c, int idx);
void *conf_slot(conf_case *c, int idx, int32_t row, int32_t slot);

/* The op may write slots [0, slots) of `row`; the image is then read back. */
void conf_allow(conf_case *c, int idx, int32_t row, int32_t slots);
/* Read back and guard-checked although the op must not write it at all. */
void conf_watch(conf_case *c, int idx);

lkv_buffer *conf_dev(const conf_case *c, int side, int idx);

/* The sentinel word at byte offset `off` of any buffer: a pattern that varies
 * along the buffer, so a kernel that copies guard words around is caught too. */
uint32_t conf_sentinel(size_t off);

/* The six cache buffers k, v, pos, state_a, state_b, state_f at indices
 * base .. base + 5, as the op arguments want them. */
enum { CONF_K, CONF_V, CONF_POS, CONF_STATE_A, CONF_STATE_B, CONF_STATE_F, CONF_CACHE_IMAGES };
int conf_add_cache(conf_case *c, int32_t rows, int32_t capacity, int32_t head_dim,
                   lkv_dtype dtype);
lkv_cache_buffers conf_cache_view(const conf_case *c, int side, int base, int32_t capacity,
                                  int32_t head_dim, lkv_dtype dtype);

/* ---- storage types (conf_report.c) ------------------------------------ */

/* Every K/V storage type, in the order each family runs them. */
extern const lkv_dtype conf_dtypes[];
extern const size_t conf_dtype_count;

const char *conf_dtype_name(lkv_dtype dtype);

/* Which of its family's modes a grid shape also runs in bf16: bit m for mode
 * m, a family without modes having mode 0 only. f32 and f16 run in every mode
 * of every shape; bf16 loads differ from f16 ones only in how an element
 * widens, so a quick grid spends bf16 on the few shapes that reach each load
 * path. */
typedef unsigned conf_bf16_modes;
#define CONF_BF16_NONE 0u
#define CONF_BF16_ALL (~0u)
#define CONF_BF16_MODE(m) (1u << (m))

/* 1 when a shape whose bf16 modes are `bf16` runs storage `dtype` in mode
 * `mode`. */
int conf_runs_dtype(conf_bf16_modes bf16, lkv_dtype dtype, size_t mode);

/* ---- verdicts (conf_verdict.c) ----------------------------------------- */

typedef struct conf_verdict {
    lkv_conformance_outcome outcome;
    const char *metric_name;
    double metric, threshold; /* NAN when nothing was measured */
    int checks;
    char detail[640];
} conf_verdict;

void conf_verdict_init(conf_verdict *v);
/* Records one check. The first failing check is what the case reports;
 * while everything passes, the first check is the headline. */
void conf_verdict_check(conf_verdict *v, int failed, const char *metric_name, double metric,
                        double threshold, const char *fmt, ...) CONF_PRINTF(6, 7);
/* Appends a remark ("near tie ...") to the detail. */
void conf_verdict_note(conf_verdict *v, const char *fmt, ...) CONF_PRINTF(2, 3);
/* An outcome without a measurement (SKIP, or FAIL before comparing). */
void conf_verdict_set(conf_verdict *v, lkv_conformance_outcome outcome, const char *fmt, ...)
    CONF_PRINTF(3, 4);

/* ---- running a case (conf_execute.c) ----------------------------------- */

typedef struct conf_run conf_run;

typedef lkv_status (*conf_invoke_fn)(const conf_case *c, int side, const void *params);

/* Uploads the images to both runtimes, runs `invoke` on the oracle and on
 * the backend, syncs, and reads back what is to be compared. Returns 1 when
 * both ran; 0 when *v already holds the outcome: SKIP when the backend says
 * UNSUPPORTED or OUT_OF_MEMORY, FAIL for any other error. */
int conf_execute(conf_case *c, conf_invoke_fn invoke, const void *params, conf_verdict *v);

/* What a family of op cases plugs into conf_case_seed. The family's case
 * struct (`size` bytes) starts with a `const conf_family *` pointing here. */
typedef struct conf_family {
    size_t size;
    /* Adds the images and fills the inputs; 0 when host memory ran out. */
    int (*build)(conf_case *c, void *params, conf_rng *rng);
    conf_invoke_fn invoke;
    /* Compares what came back (guard bytes included) into *v. */
    void (*check)(const conf_case *c, const void *params, conf_verdict *v);
} conf_family;

/* One seed of one case (a conf_seed_fn): a copy of the prototype is built
 * from the seed, run on both sides, checked and reported. */
void conf_case_seed(conf_run *r, const void *proto, uint64_t seed);

/* ---- comparisons (conf_compare.c), oracle got[0] against got[1] -------- */

/* Every image read back: bytes outside the writable region unchanged. */
void conf_check_guards(const conf_case *c, conf_verdict *v);
/* Normalised mean squared error sum (x - y)^2 / sum y^2 over the writable
 * region (f32), after NaN/Inf parity. */
void conf_check_nmse(const conf_case *c, int idx, double threshold, conf_verdict *v);
/* |x - y| <= atol + rtol |y| element-wise (f32), NaN where the oracle has
 * NaN, the same infinity where it has one. */
void conf_check_close(const conf_case *c, int idx, double atol, double rtol, conf_verdict *v);
/* Bit-exact over the writable region (f32 NaNs compare equal). */
void conf_check_exact(const conf_case *c, int idx, conf_verdict *v);

/* ---- one backend's run and its report (conf_report.c) ------------------ */

typedef struct conf_run {
    const lkv_conformance_options *opt;
    lkv_runtime *rt[2];
    const char *label, *backend, *device;
    /* What lkv_list_devices says of the device ("Vulkan 1.3, f32 scores"):
     * known deviations can hinge on a capability named there. */
    char traits[256];
    lkv_conformance_summary *sum;
    int seeds;
    double started;
    /* the group being reported: one case name over its seeds */
    char name[192];
    const char *op, *dtype;
    int runs, bad;
    lkv_conformance_outcome worst;
    conf_verdict shown;
    double worst_ratio;
    double mark;       /* when the current seed started */
    lkv_progress_line progress; /* on opt->progress */
} conf_run;


void conf_group_begin(conf_run *r, const char *name, const char *op, const char *dtype);
/* One seed's verdict: XFAIL applied, JSON written, counted. */
void conf_group_result(conf_run *r, uint64_t seed, const conf_verdict *v);
/* The table line for the group. */
void conf_group_end(conf_run *r);
/* A group that cannot run on this backend: one SKIP row. */
void conf_group_skip(conf_run *r, const char *name, const char *op, const char *dtype,
                     const char *fmt, ...) CONF_PRINTF(5, 6);
/* Shows case `index` of `count` in `family` on the progress line. */
void conf_progress(conf_run *r, const char *family, int index, int count);
/* A line of the case table without its newline: outcome, case name, seeds
 * passed of run, the measure padded to `measure_width` (0: none). */
void conf_table_row(FILE *t, const char *outcome, const char *name, const char *seeds,
                    int measure_width, const char *measure);

/* One case name over every seed: `one` builds, runs, checks and reports a
 * seed; a backend without the op (`supported` 0) gets one SKIP row instead. */
typedef void (*conf_seed_fn)(conf_run *r, const void *proto, uint64_t seed);
void conf_group_run(conf_run *r, const char *name, const char *op, const char *dtype,
                    int supported, conf_seed_fn one, const void *proto);

/* 1 when `name` matches one of the '|'-separated patterns, where '*' matches
 * any run of characters (conf_glob.c). */
int conf_glob_match(const char *patterns, const char *name);

/* Why the backend of `ops` is expected to fail `case_name` on a device with
 * `traits`, or NULL (conf_xfail.c). */
const char *conf_xfail_reason(const lkv_backend_ops *ops, const char *traits,
                              const char *case_name);

/* ---- the case families (one file each) --------------------------------- */

void conf_run_attend(conf_run *r);
void conf_run_observe(conf_run *r);
void conf_run_score(conf_run *r);
void conf_run_redundancy(conf_run *r);
void conf_run_select(conf_run *r);
void conf_run_compact(conf_run *r);
void conf_run_store(conf_run *r);
void conf_run_replay(conf_run *r);
void conf_run_batch(conf_run *r);
void conf_run_chunked(conf_run *r);
void conf_run_lifecycle(conf_run *r);

/* ---- the engine API's families: shared harness (conf_engine.c) --------- */

#define CONF_ENGINE_HEAD_DIM 16

/* A cache of `seqs` sequences under one policy, with budgets of a few dozen
 * tokens (conf_engine.c says which). */
typedef struct conf_engine_shape {
    lkv_policy_kind policy;
    int32_t seqs, layers, q_heads, kv_heads;
    lkv_gqa_mode gqa;
    lkv_dtype dtype;
} conf_engine_shape;

/* A cache config of the shape (layers, heads, head_dim, sequences, dtype,
 * gqa) with the policy's defaults; capacity and budgets are the caller's. */
lkv_status conf_engine_config(const conf_engine_shape *shape, lkv_cache_config *cfg);
lkv_status conf_engine_cache(lkv_runtime *rt, const conf_engine_shape *shape, lkv_cache **out);
int32_t conf_engine_longest(lkv_policy_kind p);  /* the longest prompt the families use */
int32_t conf_engine_budget(lkv_policy_kind p);   /* 0: no budget */
int32_t conf_engine_capacity(lkv_policy_kind p);
float conf_engine_spread(lkv_policy_kind p);     /* logit noise of the inputs */

/* Token `index` of input stream `stream` at `layer`: q [q_heads][16] (may
 * be NULL), k and v [kv_heads][16], the same on every host. */
void conf_engine_token(const conf_engine_shape *shape, uint64_t seed, int32_t stream,
                       int32_t layer, int32_t index, float *q, float *k, float *v);

/* Differences between two runs, counted as they are found; the first kept. */
typedef struct conf_diff {
    int64_t compared, mismatches, nonfinite;
    char first[480];
    double num, den, worst; /* output NMSE parts, largest difference */
    char out_where[200];
    lkv_status failed;      /* a call failed: the comparison stopped */
    char error[400];
} conf_diff;

void conf_diff_init(conf_diff *d);
/* Records the first failed call (`what` names it) with lkv_last_error(). */
void conf_diff_fail(conf_diff *d, const char *what, lkv_status st);
/* One sequence as lkv_cache_read_slots shows it: every layer's and head's
 * kept positions and, with `states`, the policy's state (lazy: state_a and
 * state_b; the others: state_f), plus its length and step. Every row read
 * is a device read-back, the cost of these families on a software GPU:
 * positions are compared after every step, states at checkpoints. */
typedef struct conf_snapshot {
    int32_t seq, length, step, layers, heads, cap;
    int states, ints;
    int32_t *n;           /* [layers * heads] */
    int32_t *pos, *a, *b; /* [layers * heads][cap] */
    float *f;
} conf_snapshot;

/* 0 (with *d failed) when a call fails. Frees what *s held first. */
int conf_snapshot_take(conf_snapshot *s, conf_diff *d, const lkv_cache *c, int32_t seq,
                       int states);
void conf_snapshot_free(conf_snapshot *s);
/* 1 when `got` differs from `want` (the states only when both hold them). */
int conf_snapshot_compare(conf_diff *d, const conf_snapshot *want, const conf_snapshot *got,
                          const char *when);
/* Sequence gs of `got` against ws of `want`: both taken, then compared. */
int conf_engine_compare_seq(conf_diff *d, const lkv_cache *want, int32_t ws,
                            const lkv_cache *got, int32_t gs, int states, const char *when);
/* slots in use, evictions, tokens evicted. */
void conf_engine_compare_stats(conf_diff *d, const lkv_cache *want, const lkv_cache *got,
                               const char *when);
void conf_engine_compare_out(conf_diff *d, const float *want, const float *got, size_t n,
                             const char *when);
/* The checks of a run compared against `what` ("per-sequence calls"). */
void conf_engine_verdict(const conf_diff *d, const char *what, conf_verdict *v);

/* ---- random traces (conf_trace.c) -------------------------------------- */

typedef struct conf_trace_shape {
    lkv_policy_kind policy;
    int32_t prompt, heads, steps;
} conf_trace_shape;

/* A trace in the format of spec/policies.md section 4 with the policy's
 * parameters in the header and, for the policies that vote at prefill, a
 * {"prefill": ...} line, as malloc'd text (the caller frees). */
lkv_status conf_trace_make(const conf_trace_shape *shape, uint64_t seed, char **out_text);

#endif
