#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int cli_dtype(const char *cmd, const char *flag, const char *text, lkv_dtype *out)
{
    if (lkv_dtype_from_name(text, out) != LKV_OK)
        return cli_error(cmd, "%s '%s' is not f32, f16 or bf16", flag, text);
    return 0;
}

/* One value into its field. */
static int set_value(const char *cmd, const cli_option *o, const char *v, void *opts)
{
    unsigned char *field = (unsigned char *)opts + o->at;
    switch (o->kind) {
    case CLI_TEXT:
        memcpy(field, &v, sizeof v);
        return 0;
    case CLI_INT: {
        int32_t x;
        int rc = cli_int(cmd, o->flag, v, (long)o->lo, (long)o->hi, &x);
        if (rc == 0)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    case CLI_REAL: {
        double x;
        int rc = cli_real(cmd, o->flag, v, o->lo, o->hi, &x);
        if (rc == 0)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    default:
        return o->call(opts, o->flag, v);
    }
}

static const cli_option *find_option(const cli_option *table, size_t n, const char *flag)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(table[i].flag, flag))
            return &table[i];
    return NULL;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_option *table, size_t n,
              void *opts, const char *help)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        const cli_option *o = find_option(table, n, a);
        if (!o)
            return cli_error(cmd, a[0] == '-' ? "unknown option '%s' (see --help)"
                                              : "unexpected argument '%s' (see --help)", a);
        if (o->kind == CLI_SWITCH) {
            const int on = 1;
            memcpy((unsigned char *)opts + o->at, &on, sizeof on);
            continue;
        }
        if (i + 1 >= argc)
            return cli_error(cmd, "%s needs a value (see --help)", a);
        int rc = set_value(cmd, o, argv[++i], opts);
        if (rc)
            return rc;
    }
    return 0;
}

int cli_read_file(const char *cmd, const char *path, char **out_text)
{
    return cli_read_text(cmd, path, "a text trace", out_text);
}

int cli_read_text(const char *cmd, const char *path, const char *what, char **out_text)
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
    size_t text_len = strlen(buf);
    if (text_len != len) {
        free(buf);
        return cli_error(cmd, "'%s' contains a NUL byte (at offset %zu): not %s", path, text_len,
                         what);
    }
    *out_text = buf;
    return 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int cli_model_path(const char *cmd, const char *given, char *buf, size_t len)
{
    int n;
    if (given)
        n = snprintf(buf, len, "%s", given);
    else if (env("LAZYKV_MODEL_DIR"))
        n = snprintf(buf, len, "%s/%s", env("LAZYKV_MODEL_DIR"), CLI_DEFAULT_MODEL);
    else if (env("XDG_CACHE_HOME"))
        n = snprintf(buf, len, "%s/lazykv/models/%s", env("XDG_CACHE_HOME"), CLI_DEFAULT_MODEL);
    else if (env("HOME"))
        n = snprintf(buf, len, "%s/.cache/lazykv/models/%s", env("HOME"), CLI_DEFAULT_MODEL);
    else
        return cli_error(cmd, "no --model given and none of LAZYKV_MODEL_DIR, XDG_CACHE_HOME, "
                              "HOME is set to find " CLI_DEFAULT_MODEL);
    if (n < 0 || (size_t)n >= len)
        return cli_error(cmd, "model path '%.64s...' is too long", buf);
    struct stat sb;
    if (stat(buf, &sb) != 0)
        return cli_error(cmd, "model file '%s': %s: run scripts/fetch-model.sh to fetch "
                              CLI_DEFAULT_MODEL ", or pass --model PATH", buf, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return cli_error(cmd, "model '%s' is not a regular file (--model takes the path of a "
                              ".gguf or llama2.c .bin)", buf);
    return 0;
}

void cli_format_bytes(double bytes, char *buf, size_t len)
{
    if (bytes >= 1048576.0)
        snprintf(buf, len, "%.2f MiB", bytes / 1048576.0);
    else
        snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
}
