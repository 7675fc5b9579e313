/* SVG drawing primitives for the plot: escaped text, a panel with its axes
 * and ticks, a data series with gaps and markers. */
#ifndef LKV_BENCH_SVG_DRAW_H
#define LKV_BENCH_SVG_DRAW_H

#include <stdio.h>

#include "bench.h"
#include "bench_svg_scale.h"

typedef enum lkv_svg_marker {
    LKV_SVG_CIRCLE = 0,
    LKV_SVG_SQUARE,
    LKV_SVG_TRIANGLE,
    LKV_SVG_DIAMOND
} lkv_svg_marker;

typedef enum lkv_svg_units {
    LKV_SVG_SECONDS = 0, /* log axis, ticks "1 us", "10 ms" */
    LKV_SVG_RATIO,       /* linear axis, ticks "1.2x" */
    LKV_SVG_PERCENT      /* log axis up to 100% at least, ticks "1%" */
} lkv_svg_units;

typedef struct lkv_svg_style {
    const char *color;
    const char *dash;    /* stroke-dasharray, NULL for solid */
    lkv_svg_marker marker;
} lkv_svg_style;

/* One line: y[i] at length i; NaN leaves a gap. */
typedef struct lkv_svg_series {
    double y[LKV_BENCH_MAX_LENGTHS];
    lkv_svg_style style;
} lkv_svg_series;

typedef struct lkv_svg_panel {
    double x, y, w, h; /* plot area */
    lkv_svg_axis ax, ay;
    lkv_svg_units units;
} lkv_svg_panel;

/* Text with XML escaping; anchor "start", "middle" or "end". */
void lkv_svg_text(FILE *f, double x, double y, const char *anchor, int size, int bold,
                  const char *text);

/* Fits the y axis to the series' finite values (log for seconds and percent) and
 * draws frame, title, axis labels, grid and ticks; x ticks at the lengths. */
void lkv_svg_panel_draw(FILE *f, lkv_svg_panel *p, const char *title, const char *ylabel,
                        const int32_t *lengths, int n_lengths, const lkv_svg_series *series,
                        int n_series);

/* A dashed grey horizontal reference line at y = v, labelled. */
void lkv_svg_reference(FILE *f, const lkv_svg_panel *p, double v, const char *label);

void lkv_svg_series_draw(FILE *f, const lkv_svg_panel *p, const int32_t *lengths,
                         int n_lengths, const lkv_svg_series *s);

/* A legend entry: a short line with its marker, then the text. */
void lkv_svg_legend_entry(FILE *f, double x, double y, const lkv_svg_style *style,
                          const char *text);

#endif
