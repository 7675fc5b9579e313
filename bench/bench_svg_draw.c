/* SVG primitives. Coordinates are printed with one decimal: enough for a
 * screen, and the file stays small. */
#include "bench_svg_draw.h"

#include <math.h>
#include <string.h>

static void escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void lkv_svg_text(FILE *f, double x, double y, const char *anchor, int size, int bold,
                  const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s>", x, y,
            anchor, size, bold ? " font-weight=\"bold\"" : "");
    escaped(f, text);
    fputs("</text>\n", f);
}

static void marker(FILE *f, double x, double y, const lkv_svg_style *s)
{
    switch (s->marker) {
    case LKV_SVG_SQUARE:
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\"/>\n",
                x - 3.5, y - 3.5, s->color);
        break;
    case LKV_SVG_TRIANGLE:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>\n", x, y - 4.5,
                x + 4.5, y + 3.5, x - 4.5, y + 3.5, s->color);
        break;
    case LKV_SVG_DIAMOND:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>\n", x,
                y - 5, x + 5, y, x, y + 5, x - 5, y, s->color);
        break;
    default:
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, s->color);
    }
}

static void stroke_attrs(FILE *f, const lkv_svg_style *s)
{
    fprintf(f, " fill=\"none\" stroke=\"%s\" stroke-width=\"2\"", s->color);
    if (s->dash)
        fprintf(f, " stroke-dasharray=\"%s\"", s->dash);
}

void lkv_svg_series_draw(FILE *f, const lkv_svg_panel *p, const int32_t *lengths,
                         int n_lengths, const lkv_svg_series *s)
{
    int pen_down = 0, any = 0;
    for (int i = 0; i < n_lengths; i++) {
        if (!isfinite(s->y[i]) || (p->ay.log && s->y[i] <= 0.0)) {
            pen_down = 0; /* a failed measurement breaks the line */
            continue;
        }
        if (!any)
            fputs("<path d=\"", f);
        fprintf(f, "%c%.1f %.1f", pen_down ? 'L' : 'M', lkv_svg_map(&p->ax, lengths[i]),
                lkv_svg_map(&p->ay, s->y[i]));
        pen_down = any = 1;
    }
    if (!any)
        return;
    fputc('"', f);
    stroke_attrs(f, &s->style);
    fputs("/>\n", f);
    for (int i = 0; i < n_lengths; i++)
        if (isfinite(s->y[i]) && !(p->ay.log && s->y[i] <= 0.0))
            marker(f, lkv_svg_map(&p->ax, lengths[i]), lkv_svg_map(&p->ay, s->y[i]), &s->style);
}

void lkv_svg_legend_entry(FILE *f, double x, double y, const lkv_svg_style *style,
                          const char *text)
{
    fprintf(f, "<path d=\"M%.1f %.1fH%.1f\"", x, y - 4, x + 28);
    stroke_attrs(f, style);
    fputs("/>\n", f);
    marker(f, x + 14, y - 4, style);
    lkv_svg_text(f, x + 34, y, "start", 12, 0, text);
}

/* Range of the finite (and, for a log axis, positive) values; 0 if none. */
static int value_range(const lkv_svg_series *s, int n_series, int n, int log, double *lo,
                       double *hi)
{
    int any = 0;
    for (int i = 0; i < n_series; i++)
        for (int j = 0; j < n; j++) {
            double v = s[i].y[j];
            if (!isfinite(v) || (log && v <= 0.0))
                continue;
            *lo = any && *lo < v ? *lo : v;
            *hi = any && *hi > v ? *hi : v;
            any = 1;
        }
    return any;
}

static void fit_y(lkv_svg_panel *p, const lkv_svg_series *s, int n_series, int n)
{
    int log = p->units != LKV_SVG_RATIO;
    /* the range shown when no measurement succeeded */
    double lo = p->units == LKV_SVG_SECONDS ? 1e-6 : p->units == LKV_SVG_PERCENT ? 1.0 : 0.9;
    double hi = p->units == LKV_SVG_SECONDS ? 1e-3 : p->units == LKV_SVG_PERCENT ? 100.0 : 1.1;
    double step;
    value_range(s, n_series, n, log, &lo, &hi);
    p->ay = (lkv_svg_axis){.log = log, .px0 = p->y + p->h, .px1 = p->y};
    if (p->units == LKV_SVG_PERCENT) /* up to the roofline, however far below it */
        hi = hi > 100.0 ? hi : 100.0;
    if (log) {
        lkv_svg_log_range(lo, hi, &p->ay.lo, &p->ay.hi);
        return;
    }
    lo = lo < 1.0 ? lo : 1.0; /* keep 1x, the no-cost line, in view */
    hi = hi > 1.0 ? hi : 1.0;
    lkv_svg_linear_range(lo, hi, 5, &p->ay.lo, &p->ay.hi, &step);
}

/* "100 us" for a decade tick, "1.25x", "50%". */
static void tick_label(lkv_svg_units units, double v, char *buf, size_t len)
{
    if (units == LKV_SVG_SECONDS) {
        static const char *const unit[] = {"ns", "us", "ms", "s"};
        int k = (int)floor(log10(v) / 3.0 + 1e-9) + 3;
        k = k < 0 ? 0 : k > 3 ? 3 : k;
        snprintf(buf, len, "%g %s", v / pow(1000.0, k - 3), unit[k]);
    } else if (units == LKV_SVG_RATIO) {
        snprintf(buf, len, "%gx", round(v * 1000.0) / 1000.0);
    } else {
        snprintf(buf, len, "%g%%", round(v * 1000.0) / 1000.0);
    }
}

static void y_tick(FILE *f, const lkv_svg_panel *p, double v)
{
    char label[32];
    double y = lkv_svg_map(&p->ay, v);
    fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#e4e4e4\"/>\n", p->x, y, p->x + p->w);
    tick_label(p->units, v, label, sizeof label);
    lkv_svg_text(f, p->x - 6, y + 4, "end", 11, 0, label);
}

static void y_ticks(FILE *f, const lkv_svg_panel *p)
{
    if (p->ay.log) {
        for (double v = p->ay.lo; v <= p->ay.hi * 1.001; v *= 10.0)
            y_tick(f, p, v);
        return;
    }
    double step = lkv_svg_nice_step(p->ay.hi - p->ay.lo, 5);
    for (double v = p->ay.lo; v <= p->ay.hi + step * 1e-6; v += step)
        y_tick(f, p, v);
}

static void x_ticks(FILE *f, const lkv_svg_panel *p, const int32_t *lengths, int n)
{
    for (int i = 0; i < n; i++) {
        char label[16];
        double x = lkv_svg_map(&p->ax, lengths[i]);
        fprintf(f, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#e4e4e4\"/>\n", x, p->y, p->y + p->h);
        lkv_bench_format_length(lengths[i], label, sizeof label);
        lkv_svg_text(f, x, p->y + p->h + 16, "middle", 11, 0, label);
    }
}

void lkv_svg_panel_draw(FILE *f, lkv_svg_panel *p, const char *title, const char *ylabel,
                        const int32_t *lengths, int n_lengths, const lkv_svg_series *series,
                        int n_series)
{
    /* log2 x axis, half a step of margin beyond the first and last length */
    p->ax = (lkv_svg_axis){.lo = lengths[0] / 1.4142, .hi = lengths[n_lengths - 1] * 1.4142,
                           .log = 1, .px0 = p->x, .px1 = p->x + p->w};
    fit_y(p, series, n_series, n_lengths);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fbfbfb\" "
               "stroke=\"#999\"/>\n", p->x, p->y, p->w, p->h);
    y_ticks(f, p);
    x_ticks(f, p, lengths, n_lengths);
    lkv_svg_text(f, p->x + p->w / 2, p->y - 10, "middle", 14, 1, title);
    lkv_svg_text(f, p->x + p->w / 2, p->y + p->h + 34, "middle", 12, 0,
                 "cache length (slots, log scale)");
    fprintf(f, "<g transform=\"translate(%.1f %.1f) rotate(-90)\">", p->x - 58, p->y + p->h / 2);
    lkv_svg_text(f, 0, 0, "middle", 12, 0, ylabel);
    fputs("</g>\n", f);
    for (int i = 0; i < n_series; i++)
        lkv_svg_series_draw(f, p, lengths, n_lengths, &series[i]);
}

void lkv_svg_reference(FILE *f, const lkv_svg_panel *p, double v, const char *label)
{
    if (v < p->ay.lo || v > p->ay.hi)
        return;
    double y = lkv_svg_map(&p->ay, v);
    fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#666\" stroke-dasharray=\"3,3\"/>\n", p->x,
            y, p->x + p->w);
    /* the label goes below a line that runs along the top of the frame */
    lkv_svg_text(f, p->x + p->w - 4, y - p->y < 16 ? y + 13 : y - 4, "end", 10, 0, label);
}
