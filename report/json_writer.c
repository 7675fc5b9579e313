/* Streaming JSON: two-space indentation, one member per line except inside
 * one-line containers; an empty container stays "{}" or "[]". */
#include "json_writer.h"

#include <math.h>
#include <string.h>

#include "json.h"

void lkv_jw_init(lkv_jw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->digits = 6;
}

static int inline_level(const lkv_jw *w)
{
    return w->depth > 0 && w->one_line[w->depth - 1];
}

/* The separator, indentation and key that come before every value. */
static void before_value(lkv_jw *w, const char *key)
{
    if (w->depth > 0) {
        int n = w->count[w->depth - 1]++;
        if (inline_level(w)) {
            fputs(n ? ", " : "", w->f);
        } else {
            fputs(n ? ",\n" : "\n", w->f);
            fprintf(w->f, "%*s", 2 * w->depth, "");
        }
    }
    if (key) {
        lkv_json_write_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void begin(lkv_jw *w, const char *key, int one_line, char open)
{
    before_value(w, key);
    fputc(open, w->f);
    if (w->depth >= LKV_JW_MAX_DEPTH) {
        w->overflow = 1;
        return;
    }
    w->one_line[w->depth] = one_line || inline_level(w);
    w->count[w->depth] = 0;
    w->depth++;
}

static void end(lkv_jw *w, char close)
{
    if (w->depth == 0) {
        w->overflow = 1;
        return;
    }
    w->depth--;
    if (w->count[w->depth] > 0 && !w->one_line[w->depth])
        fprintf(w->f, "\n%*s", 2 * w->depth, "");
    fputc(close, w->f);
}

void lkv_jw_begin_object(lkv_jw *w, const char *key, int one_line) { begin(w, key, one_line, '{'); }
void lkv_jw_end_object(lkv_jw *w) { end(w, '}'); }
void lkv_jw_begin_array(lkv_jw *w, const char *key, int one_line) { begin(w, key, one_line, '['); }
void lkv_jw_end_array(lkv_jw *w) { end(w, ']'); }

void lkv_jw_string(lkv_jw *w, const char *key, const char *value)
{
    before_value(w, key);
    if (value)
        lkv_json_write_string(w->f, value);
    else
        fputs("null", w->f);
}

/* `conversion` is 'g' (precision = significant digits) or 'f' (decimals). */
static void real(lkv_jw *w, const char *key, double value, int precision, char conversion)
{
    before_value(w, key);
    if (!isfinite(value))
        fputs("null", w->f);
    else if (conversion == 'f')
        fprintf(w->f, "%.*f", precision, value);
    else
        fprintf(w->f, "%.*g", precision, value);
}

void lkv_jw_number(lkv_jw *w, const char *key, double value)
{
    real(w, key, value, w->digits, 'g');
}

void lkv_jw_fixed(lkv_jw *w, const char *key, double value, int decimals)
{
    real(w, key, value, decimals, 'f');
}

void lkv_jw_int(lkv_jw *w, const char *key, int64_t value)
{
    before_value(w, key);
    fprintf(w->f, "%lld", (long long)value);
}

void lkv_jw_uint(lkv_jw *w, const char *key, uint64_t value)
{
    before_value(w, key);
    fprintf(w->f, "%llu", (unsigned long long)value);
}

void lkv_jw_bool(lkv_jw *w, const char *key, int value)
{
    before_value(w, key);
    fputs(value ? "true" : "false", w->f);
}

void lkv_jw_null(lkv_jw *w, const char *key)
{
    before_value(w, key);
    fputs("null", w->f);
}

int lkv_jw_finish(lkv_jw *w)
{
    fputc('\n', w->f);
    fflush(w->f);
    return ferror(w->f) || w->overflow || w->depth != 0 ? -1 : 0;
}
