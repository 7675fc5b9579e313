/* A roofline model of the CUDA/HIP kernels (backends/gpu/kernels/) on named
 * GPUs, for when no such GPU is at hand: each op's predicted time from the
 * bytes it moves, how many of them are in flight (blocks resident, threads,
 * loads a thread keeps in flight, memory latency: Little's law), the waves
 * its blocks take and the launches it makes. Estimates, marked as such
 * wherever they are printed.
 *
 * What the model takes from this source: the split plan (backends/plan/,
 * the same function the CUDA backend calls), the kernels' block sizes and
 * launches, and the resident blocks ptxas reports for the split kernels
 * (scripts/kernel-report.sh: two blocks of 256 threads, every one). What it assumes, per
 * device (lkv_bench_gpu): the copy bandwidth, the loads a split thread keeps
 * in flight in the compiled code, the memory latency, and the launch and
 * sync costs. */
#ifndef LKV_BENCH_MODEL_H
#define LKV_BENCH_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "bench.h"

typedef struct lkv_bench_gpu {
    const char *name;        /* "h200" */
    const char *label;       /* "NVIDIA H200 SXM (HBM3e)" */
    double copy_bytes_per_s; /* device-to-device copy, measured class */
    int sms;                 /* multiprocessors (CUs) */
    double latency_s;        /* a DRAM load under load */
    int split_loads;         /* 16-byte loads a split thread keeps in flight */
    double launch_s;         /* each launch of an op, back to back */
    double sync_s;           /* the op's final wait, host-observed */
    double combine_step_s;   /* the combine's serial loop, per split */
    double scan_step_s;      /* a step of select's block scan of its bins */
    double grid_sync_s;      /* a cooperative launch's wait for the other blocks */
} lkv_bench_gpu;

/* The named device ("h200", "h100", "a100", "mi300x"), or NULL. */
const lkv_bench_gpu *lkv_bench_gpu_named(const char *name);
/* "h200, h100, a100, mi300x" */
const char *lkv_bench_gpu_names(void);

typedef struct lkv_bench_model {
    double seconds;     /* predicted, launches and sync included */
    double bytes;       /* what the kernels move, logits included */
    double ideal_s;     /* lkv_bench_op_bytes at copy bandwidth */
    int launches;
    int64_t blocks;     /* of its main kernel */
    int64_t waves;      /* of its main kernel */
    int32_t splits;     /* attend: splits of a cache head's slots */
} lkv_bench_model;

/* One op of one layer of one sequence (batch 1) at `length` slots, `keep`
 * of them kept by select and compact. */
void lkv_bench_model_op(const lkv_bench_gpu *g, lkv_bench_op op, const lkv_bench_shape *s,
                        int32_t length, int32_t keep, lkv_bench_model *out);

/* The model's table for each named device over the settings' shapes and
 * lengths, labelled "model". */
void lkv_bench_model_print(FILE *f, const lkv_bench_settings *s, const lkv_bench_gpu *const *gpus,
                           int n_gpus);

#endif
