/* Axis arithmetic for the plot: value to pixel on linear and log axes, and
 * tick positions a person reads without effort. */
#ifndef LKV_BENCH_SVG_SCALE_H
#define LKV_BENCH_SVG_SCALE_H

typedef struct lkv_svg_axis {
    double lo, hi;   /* data range shown; both > 0 on a log axis */
    int log;         /* 1: logarithmic */
    double px0, px1; /* pixels of lo and hi (px1 < px0 for a y axis) */
} lkv_svg_axis;

/* Pixel of `v` (clamped to the range). */
double lkv_svg_map(const lkv_svg_axis *a, double v);

/* The decades enclosing [min, max] (min > 0): lo = 10^floor(log10 min),
 * hi = 10^ceil(log10 max), at least one decade apart. */
void lkv_svg_log_range(double min, double max, double *out_lo, double *out_hi);

/* A step of 1, 2, 2.5 or 5 times a power of ten giving about `ticks` ticks
 * over `span`. */
double lkv_svg_nice_step(double span, int ticks);

/* [min, max] widened outward to multiples of the nice step. */
void lkv_svg_linear_range(double min, double max, int ticks, double *out_lo, double *out_hi,
                          double *out_step);

#endif
