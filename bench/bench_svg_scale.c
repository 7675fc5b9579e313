/* Axis arithmetic: pure functions, tested in tests/test_bench.c. */
#include "bench_svg_scale.h"

#include <math.h>

double lkv_svg_map(const lkv_svg_axis *a, double v)
{
    double lo = a->lo, hi = a->hi;
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    double t = a->log ? (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) : (v - lo) / (hi - lo);
    return a->px0 + t * (a->px1 - a->px0);
}

void lkv_svg_log_range(double min, double max, double *out_lo, double *out_hi)
{
    double lo = floor(log10(min) + 1e-9), hi = ceil(log10(max) - 1e-9);
    if (hi <= lo)
        hi = lo + 1.0;
    *out_lo = pow(10.0, lo);
    *out_hi = pow(10.0, hi);
}

double lkv_svg_nice_step(double span, int ticks)
{
    if (!(span > 0.0) || ticks < 1)
        return 1.0;
    double raw = span / ticks, mag = pow(10.0, floor(log10(raw)));
    static const double steps[] = {1.0, 2.0, 2.5, 5.0, 10.0};
    for (int i = 0; i < 5; i++)
        if (raw <= steps[i] * mag * (1.0 + 1e-9))
            return steps[i] * mag;
    return 10.0 * mag;
}

void lkv_svg_linear_range(double min, double max, int ticks, double *out_lo, double *out_hi,
                          double *out_step)
{
    if (!(max > min)) { /* one value, or none: a unit band around it */
        min -= 0.5;
        max += 0.5;
    }
    double step = lkv_svg_nice_step(max - min, ticks);
    *out_lo = floor(min / step + 1e-9) * step;
    *out_hi = ceil(max / step - 1e-9) * step;
    *out_step = step;
}
