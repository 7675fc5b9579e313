/* Eviction off the step: what the background eviction of a decode step
 * hides, measured through the public API on caches of several layers, so
 * that a lane's eviction of one layer has the later layers' attention to
 * run beside (core/lane.h) and a helper thread has the next calls. */
#ifndef LKV_BENCH_OVERLAP_H
#define LKV_BENCH_OVERLAP_H

#include <stdio.h>

#include "bench.h"
#include "bench_inputs.h"
#include "json_writer.h"
#include "runtime.h"

#define LKV_BENCH_OVERLAP_LAYERS 4
/* A short window: a run is cheap and its eviction a large share of it. */
#define LKV_BENCH_OVERLAP_WINDOW 16
/* Larger batches are not measured (their caches would take GiBs). */
#define LKV_BENCH_OVERLAP_MAX_SEQUENCES 8

/* n sequences of settings->batch_slots slots, lazy at budget batch_slots
 * (lkv_bench_batch_config) with LKV_BENCH_OVERLAP_LAYERS layers and a
 * window of LKV_BENCH_OVERLAP_WINDOW, stepped through the window (the last
 * step evicts) and one step past it, then drained; the evicting step, the
 * one after and the drain are timed, inline and in the background, each
 * the median of a few runs on fresh caches; inputs from `in` (max_len >=
 * batch_slots, steps >= LKV_BENCH_OVERLAP_WINDOW + n). UNSUPPORTED past
 * LKV_BENCH_OVERLAP_MAX_SEQUENCES. */
void lkv_bench_overlap_run(lkv_runtime *rt, const lkv_bench_settings *s,
                           const lkv_bench_decode_inputs *in, int32_t n, lkv_bench_overlap *out);

/* The table section: per backend and batch size measured, inline against
 * background and the share of the eviction hidden. */
void lkv_bench_print_overlap(FILE *f, const lkv_bench_results *r);

/* The batch result's JSON object "eviction_overlap". */
void lkv_bench_json_overlap(lkv_jw *w, const lkv_bench_batch *b);

/* A note (lkv_bench_note) for a failed overlap run. */
void lkv_bench_note_overlap(FILE *f, const lkv_bench_batch *b, const char *label, int *count);

#endif
