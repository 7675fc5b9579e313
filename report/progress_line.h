/* A status line for long runs. On a terminal one line is redrawn in place;
 * a log (CI, a pipe) would keep every redraw, so there the caller writes
 * whole lines, fewer of them, instead. */
#ifndef LKV_PROGRESS_LINE_H
#define LKV_PROGRESS_LINE_H

#include <stdio.h>

#include "error.h"

/* How a redraw wipes the line before it. */
typedef enum lkv_progress_erase {
    LKV_PROGRESS_PAD,  /* spaces over what a longer line left: works on any terminal */
    LKV_PROGRESS_ANSI  /* ESC [ K: the line is cleared before each draw */
} lkv_progress_erase;

typedef struct lkv_progress_line {
    FILE *f;   /* NULL: nothing is written */
    int tty;   /* redraw in place; otherwise only lkv_progress_line_log writes */
    lkv_progress_erase erase;
    int width; /* of the last line drawn, to blank it */
} lkv_progress_line;

void lkv_progress_line_init(lkv_progress_line *p, FILE *f, int tty, lkv_progress_erase erase);

/* On a terminal, replaces the line with the printf-style text. */
void lkv_progress_line_show(lkv_progress_line *p, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Not on a terminal, writes the text as a line of its own. */
void lkv_progress_line_log(lkv_progress_line *p, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Blanks the line, the cursor at its start, so what follows starts clean.
 * ANSI erasing sends its clear even when no line is up. */
void lkv_progress_line_end(lkv_progress_line *p);

#endif
