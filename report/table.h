/* Tables for people: fixed-width text columns (the bench and conformance
 * reports, read in a terminal or a log) and markdown rows (the eval report). */
#ifndef LKV_TABLE_H
#define LKV_TABLE_H

#include <stdio.h>

typedef struct lkv_table_column {
    int width; /* a shorter cell is padded to it; a longer one is written whole */
    int left;  /* aligned left (names, words) instead of right (numbers) */
} lkv_table_column;

/* n cells, each padded to its column, one space between two; no newline, so
 * a caller can add separators or a trailing note. */
void lkv_table_cells(FILE *f, const lkv_table_column *cols, int n, const char *const *cells);

/* One markdown row, "| a | b |\n"; an empty cell is written "| |". */
void lkv_table_markdown_row(FILE *f, int n, const char *const *cells);

/* The rule under a markdown header: per column, "---" or, where `align` has
 * 'r', "---:" (right-aligned). */
void lkv_table_markdown_rule(FILE *f, const char *align);

#endif
