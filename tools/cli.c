#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
        int32_t x = 0;
        int rc = cli_int(cmd, o->flag, v, (long)o->lo, (long)o->hi, &x);
        if (rc == 0)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    case CLI_REAL: {
        double x = 0.0;
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

/* The most bytes a text input may hold, in MiB: LAZYKV_MAX_TEXT_MB, else
 * CLI_MAX_TEXT_MB. 0 with a message when the knob is bad. */
static int text_limit_mb(const char *cmd, long *out_mb)
{
    const char *v = getenv("LAZYKV_MAX_TEXT_MB");
    *out_mb = CLI_MAX_TEXT_MB;
    if (!v || !*v)
        return 1;
    char *end = NULL;
    errno = 0;
    long mb = strtol(v, &end, 10);
    if (errno || *end || mb < 1 || mb > 65536) {
        cli_error(cmd, "LAZYKV_MAX_TEXT_MB '%s' is not an integer in 1..65536", v);
        return 0;
    }
    *out_mb = mb;
    return 1;
}

/* Opens `path` for reading without blocking on a FIFO, and only when it is
 * a regular file: a FIFO would block forever and a device (/dev/zero)
 * never ends. -1 after a message. */
static int open_regular(const char *cmd, const char *path, off_t *out_size)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(cmd, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        cli_error(cmd, "cannot stat '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        const char *kind = S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a directory"
                           : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                                                                         : "not a regular file";
        cli_error(cmd, "'%s' is %s: give a regular file, or - to read standard input", path, kind);
        close(fd);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *out_size = sb.st_size;
    return fd;
}

/* Reads fd to its end into a buffer of at most limit bytes; returns the
 * length, -1 on a read error (errno set), -2 past the limit. */
static long long read_all(int fd, size_t limit, size_t hint, char **out_buf)
{
    size_t cap = hint + 1 < (1u << 16) ? (1u << 16) : hint + 2, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            return -3;
        if (len + 1 == cap) {
            if (len > limit)
                break;
            /* cap <= limit + 1 here: one more byte than the limit shows it is passed */
            size_t grown = cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            char *b = realloc(buf, grown);
            if (!b) {
                free(buf);
                return -3;
            }
            buf = b;
            cap = grown;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return -1;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    if (len > limit) {
        free(buf);
        return -2;
    }
    buf[len] = '\0';
    *out_buf = buf;
    return (long long)len;
}

int cli_read_text(const char *cmd, const char *path, const char *what, char **out_text)
{
    long mb;
    if (!text_limit_mb(cmd, &mb))
        return 2;
    size_t limit = (size_t)mb << 20;
    off_t size = 0;
    int fd = strcmp(path, "-") == 0 ? 0 : open_regular(cmd, path, &size);
    if (fd < 0)
        return 2;
    if ((uint64_t)size > limit) {
        close(fd);
        return cli_error(cmd, "'%s' is %lld bytes, over the limit of %ld MiB for %s (raise "
                              "LAZYKV_MAX_TEXT_MB)", path, (long long)size, mb, what);
    }
    char *buf = NULL;
    long long len = read_all(fd, limit, (size_t)size, &buf);
    int err = errno;
    if (fd != 0)
        close(fd);
    if (len == -3)
        return cli_error(cmd, "out of memory reading '%s'", path);
    if (len == -2)
        return cli_error(cmd, "'%s' holds more than the limit of %ld MiB for %s (raise "
                              "LAZYKV_MAX_TEXT_MB)", path, mb, what);
    if (len < 0)
        return cli_error(cmd, "cannot read '%s': %s", path, strerror(err));
    size_t text_len = strlen(buf);
    if (text_len != (size_t)len) {
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
