/* The progress line of a run, counting the measurements done (its drawing
 * is report/progress_line.c). */
#ifndef LKV_BENCH_PROGRESS_H
#define LKV_BENCH_PROGRESS_H

#include "bench.h"
#include "progress_line.h"

typedef struct lkv_bench_progress {
    lkv_progress_line line;
    int done;
    int total;
} lkv_bench_progress;

/* `enabled`: stderr is a terminal; otherwise nothing is drawn. */
void lkv_bench_progress_start(lkv_bench_progress *p, int enabled, int total);

/* Counts one measurement and shows it as running. */
void lkv_bench_progress_step(lkv_bench_progress *p, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Shows what runs without counting it (input making, say). */
void lkv_bench_progress_note(lkv_bench_progress *p, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Blanks the line so the table starts clean. */
void lkv_bench_progress_end(lkv_bench_progress *p);

#endif
