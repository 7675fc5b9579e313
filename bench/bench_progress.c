/* The progress line: "\r[ 12/150] vulkan:0 hq32/hkv8/d128 f16 64K attend + probs". */
#include "bench_progress.h"

#include <stdarg.h>
#include <stdio.h>

void lkv_bench_progress_start(lkv_bench_progress *p, int enabled, int total)
{
    lkv_progress_line_init(&p->line, enabled ? stderr : NULL, 1, LKV_PROGRESS_PAD);
    p->done = 0;
    p->total = total;
}

static void draw(lkv_bench_progress *p, const char *fmt, va_list ap)
{
    if (!p->line.f)
        return;
    char what[160]; /* a long device name is cut rather than wrapping the line */
    vsnprintf(what, sizeof what, fmt, ap);
    lkv_progress_line_show(&p->line, "[%3d/%d] %s", p->done, p->total, what);
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
    lkv_progress_line_end(&p->line);
}
