#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void lkv_strbuf_printf(lkv_strbuf *b, const char *fmt, ...)
{
    while (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        int n = b->s ? vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (n >= 0 && cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}
