/* The backend benchmark behind `lazykv bench`.
 *
 * Every selected backend runs the same measurements on the same inputs (made
 * once on the host, uploaded to each): the five backend ops timed one at a
 * time at several cache lengths and head shapes, each backend's own device
 * copy bandwidth (the roofline of these memory-bound ops), a whole decode
 * step through the public API with LazyEviction against the full cache, and
 * the batched decode step of many sequences against per-sequence calls.
 * Results are plain data; the table, JSON and SVG writers only read them.
 *
 * Times are host-observed: a monotonic clock around (issue the op, sync), so
 * they include submission and launch cost, which is what a decode step pays.
 */
#ifndef LKV_BENCH_H
#define LKV_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lazykv.h"

#define LKV_BENCH_MAX_DEVICES 8
#define LKV_BENCH_MAX_LENGTHS 16
#define LKV_BENCH_MAX_SHAPES 4
#define LKV_BENCH_MAX_SAMPLES 64
#define LKV_BENCH_SPEC_LEN 64
#define LKV_BENCH_MAX_BATCHES 8
#define LKV_BENCH_MAX_BATCH 1024 /* sequences in one batch */

/* ---- what is timed ---- */

typedef enum lkv_bench_op {
    LKV_BENCH_ATTEND_PROBS = 0, /* attend writing out and the probabilities */
    LKV_BENCH_ATTEND_PLAIN,     /* attend writing out only (probs NULL) */
    LKV_BENCH_OBSERVE,          /* observe, lazy kind */
    LKV_BENCH_SCORE,            /* score, lazy kind */
    LKV_BENCH_SELECT,
    LKV_BENCH_COMPACT,
    LKV_BENCH_ATTEND_OBSERVE, /* attend and the lazy observe: one op where the backend fuses
                               * them (attend_observes), else attend + probs then observe,
                               * as core runs them */
    LKV_BENCH_OP_COUNT
} lkv_bench_op;

/* Stable identifier ("attend_probs") for JSON, and a label ("attend + probs")
 * for the table and plot. */
const char *lkv_bench_op_id(lkv_bench_op op);
const char *lkv_bench_op_label(lkv_bench_op op);
/* The bytes model of the op as a formula ("20 R n"); the letters are
 * explained by LKV_BENCH_BYTES_LEGEND. */
const char *lkv_bench_op_formula(lkv_bench_op op);
#define LKV_BENCH_BYTES_LEGEND                                                                   \
    "R = cache rows (kv_heads), n = slots, k = slots kept, d = head_dim, "                      \
    "e = bytes per K/V element, H = q_heads"

typedef struct lkv_bench_shape {
    const char *like; /* the model whose attention has this shape */
    int32_t q_heads;
    int32_t kv_heads;
    int32_t head_dim;
    lkv_dtype dtype;
} lkv_bench_shape;

/* "hq32/hkv8/d128 f16" */
void lkv_bench_shape_label(const lkv_bench_shape *s, char *buf, size_t len);

/* Bytes one op moves between the device's memory and its cores, for one layer
 * of one sequence (cache rows = kv_heads) holding `length` slots of which
 * `keep` survive an eviction. The model is written out in bench/README.md and
 * bench_bytes.c; effective bandwidth is these bytes over the measured time. */
double lkv_bench_op_bytes(lkv_bench_op op, const lkv_bench_shape *s, int32_t length, int32_t keep);

/* ---- settings ---- */

typedef struct lkv_bench_settings {
    int n_specs;                  /* 0: every available device */
    char specs[LKV_BENCH_MAX_DEVICES][LKV_BENCH_SPEC_LEN];
    int n_lengths;                /* ascending, distinct */
    int32_t lengths[LKV_BENCH_MAX_LENGTHS];
    int n_shapes;
    lkv_bench_shape shapes[LKV_BENCH_MAX_SHAPES];
    lkv_bench_shape decode_shape; /* the public-API decode step */
    int quick;
    int max_warmup;               /* warm-up runs before timing (fewer for slow ops) */
    int min_reps;                 /* timed runs at least ... */
    int max_reps;                 /* ... and at most (<= LKV_BENCH_MAX_SAMPLES) */
    double target_s;              /* timed runs stop once they add up to this */
    size_t copy_bytes;            /* buffer size of the copy-bandwidth roofline */
    int32_t keep_percent;         /* select/compact keep and the decode budget, % of length */
    int32_t window;               /* lazy eviction period W of the decode step */
    int32_t decode_budget;        /* the decode step's lazy budget B; 0: keep_percent */
    int32_t full_steps;           /* timed decode steps of the full cache */
    int n_batches;                /* batched decode step: sequences per batch, */
    int32_t batches[LKV_BENCH_MAX_BATCHES]; /* ascending, distinct */
    int32_t batch_slots;          /* ... each standing at this many slots */
    int progress;                 /* draw a progress line on stderr (a terminal) */
    uint64_t seed;
} lkv_bench_settings;

/* The default run, or the quick one (two short lengths, shorter timing). */
void lkv_bench_settings_init(lkv_bench_settings *s, int quick);

/* The cache the measurements at each batch size open (batched step, mixed
 * lengths, engine-owned): `sequences` sequences of the decode shape, lazy
 * at budget batch_slots and window W, capacity batch_slots + W. */
lkv_cache_config lkv_bench_batch_config(const lkv_bench_settings *s, int32_t sequences);

/* Slots kept by select/compact and the decode budget at `length`. */
int32_t lkv_bench_keep(const lkv_bench_settings *s, int32_t length);

/* ---- results ---- */

typedef struct lkv_bench_timing {
    lkv_status status; /* LKV_OK, or why there is no time (UNSUPPORTED: op missing) */
    int reps;          /* timed runs behind median and min */
    double median_s;
    double min_s;
    char error[160];
} lkv_bench_timing;

typedef struct lkv_bench_device {
    char label[40];       /* "vulkan:0" */
    char backend[16];
    int device;
    char name[128];
    char driver[128];
    int emulated;         /* a software device on the CPU (lavapipe, PoCL) */
    lkv_bench_timing copy;
    double copy_bytes_per_s; /* 2 x buffer / median: read + write, 0 when unmeasured */
} lkv_bench_device;

typedef struct lkv_bench_decode {
    lkv_status status;
    char error[160];
    int32_t length;       /* sequence length both caches stand at */
    int32_t budget;
    int32_t window;
    int lazy_steps;       /* timed steps: one whole eviction period */
    int full_steps;
    double lazy_ms;       /* mean per step, evictions included */
    double lazy_max_ms;   /* slowest step: usually, not always, the one that evicts */
    double lazy_evict_ms; /* the evicting step itself (0: none evicted) */
    /* The same lazy run with eviction = background: the evicting step's
     * call as the caller sees it, and the eviction it handed to the helper
     * thread (lkv_cache_stats.eviction_seconds per eviction), which overlaps
     * whatever the caller does before its next call on the cache. */
    double bg_evict_call_ms;
    double bg_eviction_ms;
    /* The same lazy run with placement = holes (no K/V moves at an
     * eviction): inline, its mean step and its evicting step; then with
     * eviction = background, the evicting step's call. 0 where the backend
     * cannot fill holes. */
    double holes_ms;
    double holes_evict_ms;
    double holes_bg_call_ms;
    /* The same with placement = paged (holes in a pool of 16-slot blocks),
     * inline: its evicting step and the K/V bytes of the blocks it held at
     * most (blocks_peak). 0 where the backend has no pool. */
    double paged_evict_ms;
    int64_t paged_kv_peak;
    double full_ms;
    double full_max_ms;
    int64_t lazy_kv_peak, lazy_kv_reserved; /* lkv_cache_get_stats */
    int64_t full_kv_peak, full_kv_reserved;
} lkv_bench_decode;

/* What one decode step cost the device, from lkv_runtime_get_counters
 * readings around the decode call(s): the mean over the steps issued. */
typedef struct lkv_bench_batch_counters {
    double launches;
    double h2d_copies, h2d_bytes;
    double d2h_copies, d2h_bytes;
    double syncs;
} lkv_bench_batch_counters;

typedef struct lkv_bench_batch_side {
    lkv_bench_timing step;            /* one step of every sequence, then sync */
    lkv_bench_batch_counters counters; /* per step */
} lkv_bench_batch_side;

/* The same n sequences at mixed lengths (bench_pool.h): K/V memory and the
 * mean step per sequence, every row reserved at capacity against paged. */
typedef struct lkv_bench_pool {
    lkv_status status;
    char error[160];
    double compact_step_s, paged_step_s; /* per sequence-step, mean of W */
    int64_t compact_kv_bytes; /* kv_bytes_reserved: every row at capacity */
    int64_t paged_kv_bytes;   /* the blocks held at the peak */
    int64_t live_kv_bytes;    /* the most valid slots' K/V at once (kv_bytes_peak) */
    int64_t peak_blocks;
    int sized_ok;             /* the run again in a pool of peak_blocks served */
} lkv_bench_pool;

/* Eviction off the step (bench_overlap.h): n sequences of
 * LKV_BENCH_OVERLAP_LAYERS layers stepped through one eviction period and
 * one step past it, evictions inline against in the background (a lane
 * where the backend has one, else the helper thread). */
typedef struct lkv_bench_overlap {
    lkv_status status;
    char error[160];
    int32_t layers;
    int lane;           /* the background cache evicted on a lane (else a thread) */
    double inline_s;    /* the steps and the final drain, evictions inline (median) */
    double background_s; /* the same in the background */
    double evict_s;     /* inline: the evicting step less the mean other step */
    /* (inline_s - background_s) / evict_s: the share of the eviction taken
     * off the steps (0: none, 1: all; noise can take it past either) */
    double hidden;
} lkv_bench_overlap;

/* n sequences stepped by one lkv_cache_decode_batch call per step, and by n
 * lkv_cache_decode calls, on caches in the same state. */
typedef struct lkv_bench_batch {
    lkv_status status;
    char error[160];
    int32_t sequences;
    int32_t slots;                    /* each sequence's length */
    int counted;                      /* the backend keeps counters (else they read 0) */
    lkv_bench_batch_side batched;
    lkv_bench_batch_side per_sequence;
    lkv_bench_pool pool;
    lkv_bench_overlap overlap;
} lkv_bench_batch;

/* An engine-owned cache of n sequences standing at `slots` slots (lazy at
 * budget slots, window W), stepped through one eviction period with host
 * probabilities, then that eviction's plan applied to the engine's paged
 * f16 K/V (blocks of LKV_BENCH_ENGINE_BLOCK slots) two ways. Host times are
 * the median of their runs; the steps are each timed once. */
#define LKV_BENCH_ENGINE_BLOCK 16
typedef struct lkv_bench_engine {
    lkv_status status;
    char error[160];
    int32_t sequences;
    int32_t slots;
    int32_t window;
    double observe_s;        /* mean lkv_cache_observe_batch step that only observes */
    double evict_s;          /* the step that evicts: observe, score, select, plan */
    double observe_qk_s;     /* mean observe-only step from q and the engine's K, no lse */
    double observe_qk_dev_s; /* ... from device q, K and lse; < 0: not measured */
    double apply_lists_s;    /* lkv_cache_apply_plan_device of the plan; < 0: not measured */
    double compact_s;        /* lkv_plan_apply of its plan */
    double holes_s;          /* lkv_slot_map_apply of the same plan */
    int64_t moved_slots;     /* head slots compaction moved */
    int32_t blocks_compact;  /* blocks held after the eviction, compacted */
    int32_t blocks_holes;    /* ... and with holes */
    double live_holes;       /* share of the held cells that are live, with holes */
    double attend_dense_s;   /* host attention of every query head over the kept slots */
    double attend_holes_s;   /* ... the same slots read through the hole map */
} lkv_bench_engine;

typedef struct lkv_bench_machine {
    char cpu[128];
    int cores;
    uint64_t memory_bytes;
    char os[160];
    char date[32];        /* UTC, ISO 8601 */
} lkv_bench_machine;

typedef struct lkv_bench_results {
    lkv_bench_settings settings;
    lkv_bench_machine machine;
    int n_devices;
    lkv_bench_device devices[LKV_BENCH_MAX_DEVICES];
    lkv_bench_timing *ops;     /* [device][shape][length][op] */
    lkv_bench_decode *decode;  /* [device][length] */
    lkv_bench_batch *batch;    /* [device][batch size] */
    lkv_bench_engine *engine;  /* [device][batch size] */
    int64_t peak_rss_bytes;    /* getrusage of the whole run, host side */
    double wall_s;
} lkv_bench_results;

/* Allocates the result arrays for the settings' devices, shapes and lengths,
 * every measurement marked not run. `n_devices` and `devices` are filled by
 * the caller (lkv_bench_run does it). */
lkv_status lkv_bench_results_init(lkv_bench_results *r, const lkv_bench_settings *s,
                                  int n_devices);
void lkv_bench_results_free(lkv_bench_results *r);

lkv_bench_timing *lkv_bench_op_at(const lkv_bench_results *r, int device, int shape, int length,
                                  lkv_bench_op op);
lkv_bench_decode *lkv_bench_decode_at(const lkv_bench_results *r, int device, int length);
lkv_bench_batch *lkv_bench_batch_at(const lkv_bench_results *r, int device, int batch);
lkv_bench_engine *lkv_bench_engine_at(const lkv_bench_results *r, int device, int batch);

/* Index of the cpu backend among the devices, -1 if it was not run. */
int lkv_bench_cpu_index(const lkv_bench_results *r);

/* Runs the whole benchmark. Fails only when a named backend cannot be opened
 * or memory runs out; an op that fails is recorded in its timing. */
lkv_status lkv_bench_run(const lkv_bench_settings *s, lkv_bench_results *out);

/* 1 when some measurement failed for a reason other than a missing op. */
int lkv_bench_any_failure(const lkv_bench_results *r);

/* ---- output ---- */

void lkv_bench_print_table(FILE *f, const lkv_bench_results *r);
/* One line of the table's notes for a measurement with no figure; *count
 * counts them, and "notes" heads the first. */
void lkv_bench_note(FILE *f, int *count, const char *what, lkv_status st, const char *error);

/* Return 0, or -1 when writing failed. */
int lkv_bench_write_json(FILE *f, const lkv_bench_results *r);
int lkv_bench_write_svg(FILE *f, const lkv_bench_results *r);

/* "812 ns", "12.3 us", "1.23 ms", "2.05 s": three significant digits. */
void lkv_bench_format_time(double seconds, char *buf, size_t len);
/* "512 KiB", "1.25 MiB", "3.00 GiB" */
void lkv_bench_format_bytes(double bytes, char *buf, size_t len);
/* "1K", "128K" for multiples of 1024, else the number */
void lkv_bench_format_length(int32_t length, char *buf, size_t len);

#endif
