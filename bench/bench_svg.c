/* The plot (`lazykv bench --plot FILE.svg`), hand-written SVG. A panel per
 * op and three more, three to a row, each against cache length on a log
 * axis: the ops' median time (log),
 * then the decode step lazy vs full, the observation cost ratio and attend's
 * share of the copy roofline. Colour = backend; in the op panels the line
 * style and marker = head shape; in the decode panel solid = lazy, dashed =
 * full. A failed measurement leaves a gap in its line. */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "bench_svg_draw.h"

#define WIDTH 1280
#define PANEL_W 320
#define PANEL_H 200
#define PITCH_X 420
#define PITCH_Y 290
#define FIRST_X 85
#define FIRST_Y 150
/* the op panels, then the decode, observation-cost and roofline panels */
enum { PANEL_DECODE = LKV_BENCH_OP_COUNT, PANEL_RATIO, PANEL_ROOFLINE, PANELS };

static const char *const colors[LKV_BENCH_MAX_DEVICES] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static const lkv_svg_style shape_styles[LKV_BENCH_MAX_SHAPES] = {
    {NULL, NULL, LKV_SVG_CIRCLE},
    {NULL, "7,4", LKV_SVG_SQUARE},
    {NULL, "2,3", LKV_SVG_TRIANGLE},
    {NULL, "9,3,2,3", LKV_SVG_DIAMOND},
};

static lkv_svg_style style_of(int device, int shape)
{
    lkv_svg_style s = shape_styles[shape];
    s.color = colors[device];
    return s;
}

static lkv_svg_panel panel_at(int index, lkv_svg_units units)
{
    return (lkv_svg_panel){.x = FIRST_X + PITCH_X * (index % 3),
                           .y = FIRST_Y + PITCH_Y * (index / 3),
                           .w = PANEL_W, .h = PANEL_H, .units = units};
}

static double median_or_nan(const lkv_bench_timing *t)
{
    return t->status == LKV_OK && t->median_s > 0.0 ? t->median_s : NAN;
}

/* One series per (device, shape) of `value(r, d, sh, l)`. */
typedef double (*cell_value)(const lkv_bench_results *r, int d, int sh, int l, int op);

static int gather(const lkv_bench_results *r, cell_value value, int op,
                  lkv_svg_series out[LKV_BENCH_MAX_DEVICES * LKV_BENCH_MAX_SHAPES])
{
    int n = 0;
    for (int d = 0; d < r->n_devices; d++)
        for (int sh = 0; sh < r->settings.n_shapes; sh++, n++) {
            out[n].style = style_of(d, sh);
            for (int l = 0; l < r->settings.n_lengths; l++)
                out[n].y[l] = value(r, d, sh, l, op);
        }
    return n;
}

static double op_time(const lkv_bench_results *r, int d, int sh, int l, int op)
{
    return median_or_nan(lkv_bench_op_at(r, d, sh, l, (lkv_bench_op)op));
}

static double observation_ratio(const lkv_bench_results *r, int d, int sh, int l, int op)
{
    (void)op;
    return op_time(r, d, sh, l, LKV_BENCH_ATTEND_PROBS) /
           op_time(r, d, sh, l, LKV_BENCH_ATTEND_PLAIN);
}

static double copy_percent(const lkv_bench_results *r, int d, int sh, int l, int op)
{
    const lkv_bench_settings *s = &r->settings;
    double roof = r->devices[d].copy_bytes_per_s;
    double bytes = lkv_bench_op_bytes((lkv_bench_op)op, &s->shapes[sh], s->lengths[l],
                                      lkv_bench_keep(s, s->lengths[l]));
    return roof > 0.0 ? 100.0 * bytes / op_time(r, d, sh, l, op) / roof : NAN;
}

static void op_panels(FILE *f, const lkv_bench_results *r)
{
    lkv_svg_series series[LKV_BENCH_MAX_DEVICES * LKV_BENCH_MAX_SHAPES];
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++) {
        lkv_svg_panel p = panel_at(op, LKV_SVG_SECONDS);
        int n = gather(r, op_time, op, series);
        lkv_svg_panel_draw(f, &p, lkv_bench_op_label((lkv_bench_op)op),
                           "median time per op (log scale)", r->settings.lengths,
                           r->settings.n_lengths, series, n);
    }
}

static void decode_panel(FILE *f, const lkv_bench_results *r)
{
    lkv_svg_series series[2 * LKV_BENCH_MAX_DEVICES];
    int n = 0;
    for (int d = 0; d < r->n_devices; d++)
        for (int full = 0; full < 2; full++, n++) {
            series[n].style = (lkv_svg_style){colors[d], full ? "7,4" : NULL,
                                              full ? LKV_SVG_SQUARE : LKV_SVG_CIRCLE};
            for (int l = 0; l < r->settings.n_lengths; l++) {
                const lkv_bench_decode *dc = lkv_bench_decode_at(r, d, l);
                double ms = full ? dc->full_ms : dc->lazy_ms;
                series[n].y[l] = dc->status == LKV_OK ? ms / 1e3 : NAN;
            }
        }
    lkv_svg_panel p = panel_at(PANEL_DECODE, LKV_SVG_SECONDS);
    lkv_svg_panel_draw(f, &p, "decode step: lazy vs full cache", "mean time per step (log scale)",
                       r->settings.lengths, r->settings.n_lengths, series, n);
    char lazy[64];
    snprintf(lazy, sizeof lazy, "lazy, budget %d%%, W %d", r->settings.keep_percent,
             r->settings.window);
    lkv_svg_style solid = {"#444", NULL, LKV_SVG_CIRCLE}, dashed = {"#444", "7,4", LKV_SVG_SQUARE};
    lkv_svg_legend_entry(f, p.x + 8, p.y + 18, &solid, lazy);
    lkv_svg_legend_entry(f, p.x + 8, p.y + 36, &dashed, "full cache");
}

static void ratio_panels(FILE *f, const lkv_bench_results *r)
{
    lkv_svg_series series[LKV_BENCH_MAX_DEVICES * LKV_BENCH_MAX_SHAPES];
    int n = gather(r, observation_ratio, 0, series);
    lkv_svg_panel p = panel_at(PANEL_RATIO, LKV_SVG_RATIO);
    lkv_svg_panel_draw(f, &p, "observation cost", "attend + probs time / plain time",
                       r->settings.lengths, r->settings.n_lengths, series, n);
    lkv_svg_reference(f, &p, 1.0, "no cost");
    n = gather(r, copy_percent, LKV_BENCH_ATTEND_PROBS, series);
    p = panel_at(PANEL_ROOFLINE, LKV_SVG_PERCENT);
    lkv_svg_panel_draw(f, &p, "attend + probs vs the copy roofline",
                       "% of copy bandwidth (log scale)", r->settings.lengths,
                       r->settings.n_lengths, series, n);
    lkv_svg_reference(f, &p, 100.0, "copy bandwidth");
}

static void header(FILE *f, const lkv_bench_results *r)
{
    char line[512];
    lkv_svg_text(f, WIDTH / 2.0, 28, "middle", 20, 1,
                 "lazykv bench: time per op vs cache length, every backend on the same inputs");
    snprintf(line, sizeof line, "%s, %d cores; %s. Host-observed times (issue the op, then sync), "
             "median of timed runs; one layer of one sequence.", r->machine.cpu, r->machine.cores,
             r->machine.date);
    lkv_svg_text(f, WIDTH / 2.0, 48, "middle", 12, 0, line);
    for (int d = 0; d < r->n_devices; d++) {
        const lkv_bench_device *dv = &r->devices[d];
        lkv_svg_style s = {colors[d], NULL, LKV_SVG_CIRCLE};
        /* A legend entry has 400 px, about 60 characters at this size:
         * long driver names (PoCL's) are cut to keep the columns apart. */
        snprintf(line, sizeof line, "%s  %.38s%s", dv->label, dv->name,
                 dv->emulated ? " (emulated)" : "");
        lkv_svg_legend_entry(f, 40 + 400 * (d % 3), 78 + 18 * (d / 3), &s, line);
    }
    int rows = (r->n_devices + 2) / 3;
    for (int sh = 0; sh < r->settings.n_shapes; sh++) {
        const lkv_bench_shape *shape = &r->settings.shapes[sh];
        lkv_svg_style s = style_of(0, sh);
        s.color = "#444";
        char label[48];
        lkv_bench_shape_label(shape, label, sizeof label);
        snprintf(line, sizeof line, "%s (%s)", label, shape->like);
        lkv_svg_legend_entry(f, 40 + 400 * sh, 84 + 18 * rows, &s, line);
    }
}

int lkv_bench_write_svg(FILE *f, const lkv_bench_results *r)
{
    int height = FIRST_Y + (PANELS + 2) / 3 * PITCH_Y;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, height, WIDTH, height);
    header(f, r);
    op_panels(f, r);
    decode_panel(f, r);
    ratio_panels(f, r);
    fputs("</svg>\n", f);
    fflush(f);
    return ferror(f) ? -1 : 0;
}
