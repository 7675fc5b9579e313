/* One line on stderr, redrawn in place, that says what is running. */
#ifndef LKV_BENCH_PROGRESS_H
#define LKV_BENCH_PROGRESS_H

#include "bench.h"

typedef struct lkv_bench_progress {
    int enabled;
    int done;
    int total;
    int width; /* of the last line drawn, to blank it */
} lkv_bench_progress;

void lkv_bench_progress_start(lkv_bench_progress *p, int enabled, int total);

/* Counts one measurement and shows it as running. */
void lkv_bench_progress_step(lkv_bench_progress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Shows what runs without counting it (input making, say). */
void lkv_bench_progress_note(lkv_bench_progress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Blanks the line so the table starts clean. */
void lkv_bench_progress_end(lkv_bench_progress *p);

#endif
