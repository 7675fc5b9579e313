/* `--plot FILE.svg`: two panels against the K/V memory each lane really
 * held (its peak, as a share of the full cache of the whole sequence): the
 * mean KL from the full cache (log scale) and the top-1 agreement. One colour
 * per policy; solid circles for grouped GQA, dashed squares for expanded.
 * The x axis reaches past 100% when a lane held more than the full cache
 * (expanded GQA keeps q_heads / kv_heads copies). KL 0 (the full caches) has
 * no place on a log axis, so full caches appear in the agreement panel only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "eval.h"

#define WIDTH 1000
#define HEIGHT 520
#define PANEL_W 380
#define PANEL_H 300
#define PANEL_Y 90

static const char *const colors[LKV_POLICY_COUNT_] = {
    "#444444", "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

/* A lane's colour: its policy's; lazy-peak its own. */
static const char *color_of(lkv_policy_kind kind, lkv_lazy_schedule schedule)
{
    return kind == LKV_POLICY_LAZY && schedule == LKV_LAZY_PEAK ? "#e377c2" : colors[kind];
}

typedef struct axis {
    double lo, hi;
    int log;
    double px0, px1;
} axis;

typedef struct panel {
    double x, y;
    axis ax, ay;
} panel;

static double map(const axis *a, double v)
{
    double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                      : (v - a->lo) / (a->hi - a->lo);
    if (t < 0.0)
        t = 0.0;
    if (t > 1.0)
        t = 1.0;
    return a->px0 + t * (a->px1 - a->px0);
}

static void text(FILE *f, double x, double y, const char *anchor, int size, int bold,
                 const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s>", x, y, anchor,
            size, bold ? " font-weight=\"bold\"" : "");
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
    fputs("</text>\n", f);
}

static void marker(FILE *f, double x, double y, const char *color, int square)
{
    if (square)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>\n", x - 4,
                y - 4, color);
    else
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x, y, color);
}

/* Frame, title, x ticks (every 25% up to 150%, then coarser) and y ticks
 * (decades on a log axis). */
static void frame(FILE *f, const panel *p, const char *title, const char *ylabel, double ystep)
{
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
               "stroke=\"#333\"/>\n", (int)p->x, p->y, PANEL_W, PANEL_H);
    text(f, p->x + PANEL_W / 2.0, p->y - 12, "middle", 14, 1, title);
    double xstep = p->ax.hi <= 1.5 ? 0.25 : p->ax.hi <= 3.0 ? 0.5 : 1.0;
    for (int i = 0; i * xstep <= p->ax.hi + 1e-9; i++) {
        double x = map(&p->ax, i * xstep);
        char label[16];
        snprintf(label, sizeof label, "%.0f%%", i * xstep * 100.0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
                p->y, x, p->y + PANEL_H);
        text(f, x, p->y + PANEL_H + 16, "middle", 11, 0, label);
    }
    text(f, p->x + PANEL_W / 2.0, p->y + PANEL_H + 36, "middle", 12, 0,
         "peak K/V memory held / full cache of the sequence (T tokens)");
    double v = p->ay.lo;
    for (int i = 0; i < 40 && v <= p->ay.hi * (1 + 1e-9); i++) {
        double y = map(&p->ay, v);
        char label[24];
        snprintf(label, sizeof label, p->ay.log ? "%.0e" : "%.2f", v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                p->x, y, p->x + PANEL_W, y);
        text(f, p->x - 6, y + 4, "end", 11, 0, label);
        v = p->ay.log ? v * 10.0 : p->ay.lo + (i + 1) * ystep;
    }
    fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" "
               "font-size=\"12\">%s</text>\n", p->x - 52, p->y + PANEL_H / 2.0, ylabel);
}

typedef double (*value_fn)(const lkv_eval_summary *s);
static double kl_of(const lkv_eval_summary *s) { return s->kl_mean; }
static double top1_of(const lkv_eval_summary *s) { return s->top1; }

typedef struct point {
    double x, y;
} point;

static int by_x(const void *a, const void *b)
{
    double d = ((const point *)a)->x - ((const point *)b)->x;
    return (d > 0) - (d < 0);
}

/* One line per (policy, GQA mode) through its budgets; full caches are a
 * lone marker. */
static void series(FILE *f, const panel *p, const lkv_eval_results *r, value_fn value)
{
    point pts[LKV_EVAL_MAX_BUDGETS];
    for (int k = 1; k < r->n_lanes; k++) {
        const lkv_eval_lane_spec *spec = &r->lanes[k];
        if (spec->budget != 0)
            continue; /* drawn from its first budget's lane; full caches elsewhere */
        int n = 0;
        for (int j = k; j < r->n_lanes && n < LKV_EVAL_MAX_BUDGETS; j++) {
            const lkv_eval_lane_spec *o = &r->lanes[j];
            if (o->policy != spec->policy || o->schedule != spec->schedule ||
                o->gqa != spec->gqa || o->granularity != spec->granularity)
                continue;
            lkv_eval_summary s;
            lkv_eval_summarize(r, j, &s);
            double y = value(&s);
            if (s.prompts && isfinite(y) && (!p->ay.log || y > 0.0))
                pts[n++] = (point){s.memory_mean, y};
        }
        qsort(pts, (size_t)n, sizeof pts[0], by_x);
        const char *color = color_of(spec->policy, spec->schedule);
        int expanded = spec->gqa == LKV_GQA_EXPANDED;
        if (n > 1) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                    color, expanded ? " stroke-dasharray=\"7,4\"" : "");
            for (int i = 0; i < n; i++)
                fprintf(f, "%.1f,%.1f ", map(&p->ax, pts[i].x), map(&p->ay, pts[i].y));
            fputs("\"/>\n", f);
        }
        for (int i = 0; i < n; i++)
            marker(f, map(&p->ax, pts[i].x), map(&p->ay, pts[i].y), color, expanded);
    }
}

/* The y range of a panel from the lanes' finite values (positive on a log
 * axis); *out_n says how many there were. */
static void value_range(const lkv_eval_results *r, value_fn value, int log_axis, double *lo,
                        double *hi, int *out_n)
{
    int n = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int k = 1; k < r->n_lanes; k++) {
        lkv_eval_summary s;
        lkv_eval_summarize(r, k, &s);
        double y = value(&s);
        if (!s.prompts || !isfinite(y) || (log_axis && y <= 0.0))
            continue;
        n++;
        if (y < *lo)
            *lo = y;
        if (y > *hi)
            *hi = y;
    }
    *out_n = n;
}

/* The x axis's end: 100%, or the largest memory share drawn, rounded up to
 * the next 25%. */
static double memory_axis_end(const lkv_eval_results *r)
{
    double hi = 1.0;
    for (int k = 1; k < r->n_lanes; k++) {
        lkv_eval_summary s;
        lkv_eval_summarize(r, k, &s);
        if (s.prompts && isfinite(s.memory_mean) && s.memory_mean > hi)
            hi = s.memory_mean;
    }
    return ceil(hi * 4.0 - 1e-9) / 4.0;
}

static void kl_panel(FILE *f, const lkv_eval_results *r, double xhi)
{
    panel p = {80, PANEL_Y, {0, xhi, 0, 80, 80 + PANEL_W},
               {1e-3, 1, 1, PANEL_Y + PANEL_H, PANEL_Y}};
    double lo, hi;
    int n;
    value_range(r, kl_of, 1, &lo, &hi, &n);
    if (n) {
        p.ay.lo = pow(10.0, floor(log10(lo)));
        p.ay.hi = pow(10.0, ceil(log10(hi)));
        if (p.ay.hi <= p.ay.lo)
            p.ay.hi = p.ay.lo * 10.0;
    }
    frame(f, &p, "KL(p_full || p_lane), mean over positions", "KL in nats (log scale)", 0.0);
    if (!n)
        text(f, p.x + PANEL_W / 2.0, p.y + PANEL_H / 2.0, "middle", 12, 0, "no KL above 0");
    series(f, &p, r, kl_of);
}

static void top1_panel(FILE *f, const lkv_eval_results *r, double xhi)
{
    double x0 = 80 + PANEL_W + 120;
    panel p = {x0, PANEL_Y, {0, xhi, 0, x0, x0 + PANEL_W}, {0, 1, 0, PANEL_Y + PANEL_H, PANEL_Y}};
    double lo, hi;
    int n;
    value_range(r, top1_of, 0, &lo, &hi, &n);
    if (n)
        p.ay.lo = lo > 0.0 ? floor(lo * 10.0 - 1e-9) / 10.0 : 0.0;
    if (p.ay.lo < 0.0)
        p.ay.lo = 0.0;
    double step = 1.0 - p.ay.lo <= 0.3 ? 0.05 : 0.1;
    frame(f, &p, "top-1 agreement with the full cache", "share of positions", step);
    double y = map(&p.ay, 1.0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
               "stroke-dasharray=\"3,3\"/>\n", p.x, y, p.x + PANEL_W, y);
    text(f, p.x + 6, y + 14, "start", 11, 0, "full cache");
    series(f, &p, r, top1_of);
    for (int k = 1; k < r->n_lanes; k++)
        if (r->lanes[k].policy == LKV_POLICY_FULL) {
            lkv_eval_summary s;
            lkv_eval_summarize(r, k, &s);
            if (s.prompts)
                marker(f, map(&p.ax, s.memory_mean), map(&p.ay, s.top1), colors[LKV_POLICY_FULL],
                       r->lanes[k].gqa == LKV_GQA_EXPANDED);
        }
}

static void legend(FILE *f, const lkv_eval_results *r)
{
    double x = 80, y = PANEL_Y + PANEL_H + 70;
    for (int i = 0; i < r->settings.n_policies; i++, x += 120) {
        lkv_policy_kind kind = r->settings.policies[i];
        const char *color = color_of(kind, r->settings.schedules[i]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>\n", x, y - 4, x + 24, y - 4, color);
        marker(f, x + 12, y - 4, color, 0);
        text(f, x + 30, y, "start", 12, 0, lkv_eval_policy_name(kind, r->settings.schedules[i]));
    }
    text(f, 80, y + 26, "start", 12, 0,
         r->settings.n_gqa > 1 || r->settings.gqa[0] == LKV_GQA_EXPANDED
             ? "solid, circles: grouped GQA; dashed, squares: expanded GQA (B x kv/q per head)"
             : "grouped GQA");
}

int lkv_eval_write_svg(FILE *f, const lkv_eval_results *r)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    char line[320];
    int64_t positions = 0;
    for (int i = 0; i < r->n_prompts; i++)
        positions += r->prompts[i].generated;
    snprintf(line, sizeof line, "lazykv eval: %s", r->model);
    text(f, WIDTH / 2.0, 28, "middle", 18, 1, line);
    snprintf(line, sizeof line, "%d prompt(s), %lld reference positions, teacher-forced against "
             "the full cache; %s K/V, backend %s", r->n_prompts, (long long)positions,
             lkv_dtype_name(r->settings.dtype), r->backend);
    text(f, WIDTH / 2.0, 50, "middle", 12, 0, line);
    double xhi = memory_axis_end(r);
    kl_panel(f, r, xhi);
    top1_panel(f, r, xhi);
    legend(f, r);
    fputs("</svg>\n", f);
    fflush(f);
    return ferror(f) ? -1 : 0;
}
