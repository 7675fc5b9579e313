/* The redraw: "\r" and the text, then spaces over the rest of a longer
 * previous line (PAD), or "\r", a clear-to-end and the text (ANSI). */
#include "progress_line.h"

#include <stdarg.h>

void lkv_progress_line_init(lkv_progress_line *p, FILE *f, int tty, lkv_progress_erase erase)
{
    p->f = f;
    p->tty = tty;
    p->erase = erase;
    p->width = 0;
}

void lkv_progress_line_show(lkv_progress_line *p, const char *fmt, ...)
{
    if (!p->f || !p->tty)
        return;
    fputs(p->erase == LKV_PROGRESS_ANSI ? "\r\033[K" : "\r", p->f);
    va_list ap;
    va_start(ap, fmt);
    int text = vfprintf(p->f, fmt, ap);
    va_end(ap);
    int width = 1 + (text > 0 ? text : 0); /* "\r" counted in: one blank too many is harmless */
    if (p->erase == LKV_PROGRESS_PAD && width < p->width)
        fprintf(p->f, "%*s", p->width - width, "");
    p->width = width;
    fflush(p->f);
}

void lkv_progress_line_log(lkv_progress_line *p, const char *fmt, ...)
{
    if (!p->f || p->tty)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->f, fmt, ap);
    va_end(ap);
    fputc('\n', p->f);
    fflush(p->f);
}

void lkv_progress_line_end(lkv_progress_line *p)
{
    if (!p->f || !p->tty)
        return;
    if (p->erase == LKV_PROGRESS_ANSI)
        fputs("\r\033[K", p->f);
    else if (p->width > 0)
        fprintf(p->f, "\r%*s\r", p->width, "");
    p->width = 0;
    fflush(p->f);
}
