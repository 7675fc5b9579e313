#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lazykv %s: error: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int cli_lib_error(const char *cmd, lkv_status st)
{
    return cli_error(cmd, "%s: %s", lkv_status_name(st), lkv_last_error());
}

int cli_int(const char *cmd, const char *flag, const char *text, long lo, long hi, int32_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return cli_error(cmd, "%s '%s' is not an integer in %ld..%ld", flag, text, lo, hi);
    *out = (int32_t)v;
    return 0;
}

int cli_real(const char *cmd, const char *flag, const char *text, double lo, double hi,
             double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno == ERANGE && fabs(v) < 1.0)
        errno = 0; /* underflow to (almost) zero is a value */
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi)
        return cli_error(cmd, "%s '%s' is not a number in [%g, %g]", flag, text, lo, hi);
    *out = v;
    return 0;
}

int cli_read_file(const char *cmd, const char *path, char **out_text)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return cli_error(cmd, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf)
        return cli_error(cmd, "out of memory reading '%s'", path);
    if (bad) {
        free(buf);
        return cli_error(cmd, "cannot read '%s'", path);
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return cli_error(cmd, "'%s' contains a NUL byte: not a text trace", path);
    }
    *out_text = buf;
    return 0;
}
