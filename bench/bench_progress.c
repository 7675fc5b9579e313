/* The progress line: "\r[ 12/150] vulkan:0 hq32/hkv8/d128 f16 64K attend + probs". */
#include "bench_progress.h"

#include <stdarg.h>
#include <stdio.h>

void lkv_bench_progress_start(lkv_bench_progress *p, int enabled, int total)
{
    p->enabled = enabled;
    p->done = 0;
    p->total = total;
    p->width = 0;
}

static void draw(lkv_bench_progress *p, const char *fmt, va_list ap)
{
    if (!p->enabled)
        return;
    char what[160];
    vsnprintf(what, sizeof what, fmt, ap);
    int width = fprintf(stderr, "\r[%3d/%d] %s", p->done, p->total, what);
    if (width < p->width) /* blank what is left of a longer previous line */
        fprintf(stderr, "%*s", p->width - width, "");
    p->width = width;
    fflush(stderr);
}

void lkv_bench_progress_step(lkv_bench_progress *p, const char *fmt, ...)
{
    p->done++;
    va_list ap;
    va_start(ap, fmt);
    draw(p, fmt, ap);
    va_end(ap);
}

void lkv_bench_progress_note(lkv_bench_progress *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    draw(p, fmt, ap);
    va_end(ap);
}

void lkv_bench_progress_end(lkv_bench_progress *p)
{
    if (p->enabled && p->width > 0)
        fprintf(stderr, "\r%*s\r", p->width, "");
    p->width = 0;
}
