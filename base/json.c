#include "json.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LKV_JSON_MAX_DEPTH 32

typedef struct reader {
    const char *s;
    size_t len, at;
    char *err;
    size_t err_len;
} reader;

static int fail(reader *r, const char *what)
{
    snprintf(r->err, r->err_len, "%s at byte %zu", what, r->at + 1);
    return -1;
}

static void skip_ws(reader *r)
{
    while (r->at < r->len && strchr(" \t\r\n", r->s[r->at]) && r->s[r->at])
        r->at++;
}

static int peek(const reader *r) { return r->at < r->len ? (unsigned char)r->s[r->at] : -1; }

static int parse_value(reader *r, lkv_json *out, int depth);

static int literal(reader *r, const char *word, lkv_json_type type, double value, lkv_json *out)
{
    size_t n = strlen(word);
    if (r->len - r->at < n || strncmp(r->s + r->at, word, n) != 0)
        return fail(r, "unexpected character");
    r->at += n;
    out->type = type;
    out->number = value;
    return 0;
}

static void skip_digits(reader *r)
{
    while (isdigit(peek(r)))
        r->at++;
}

static int parse_number(reader *r, lkv_json *out)
{
    size_t start = r->at;
    if (peek(r) == '-')
        r->at++;
    if (peek(r) == '0')
        r->at++;
    else if (isdigit(peek(r)))
        skip_digits(r);
    else
        return fail(r, "bad number");
    if (peek(r) == '.') {
        r->at++;
        if (!isdigit(peek(r)))
            return fail(r, "bad number: digits expected after '.'");
        skip_digits(r);
    }
    if (peek(r) == 'e' || peek(r) == 'E') {
        r->at++;
        if (peek(r) == '+' || peek(r) == '-')
            r->at++;
        if (!isdigit(peek(r)))
            return fail(r, "bad number: digits expected in exponent");
        skip_digits(r);
    }
    size_t n = r->at - start;
    out->text = malloc(n + 1);
    if (!out->text)
        return fail(r, "out of memory");
    memcpy(out->text, r->s + start, n);
    out->text[n] = '\0';
    out->type = LKV_JSON_NUMBER;
    out->number = strtod(out->text, NULL);
    return 0;
}

static size_t put_utf8(char *dst, unsigned cp)
{
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xc0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xe0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        dst[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    dst[0] = (char)(0xf0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Four hex digits after "\u"; -1 if malformed. */
static long hex4(reader *r)
{
    if (r->len - r->at < 4)
        return -1;
    long cp = 0;
    for (int i = 0; i < 4; i++) {
        int h = (unsigned char)r->s[r->at++];
        if (!isxdigit(h))
            return -1;
        cp = cp * 16 + (isdigit(h) ? h - '0' : tolower(h) - 'a' + 10);
    }
    return cp;
}

/* A \u escape (the "\u" already read), surrogate pairs joined. Rejects
 * U+0000, which would cut a C string (and could hide the rest of a key), and
 * lone surrogates, which are not UTF-8. Returns the code point or -1. */
static long unicode_escape(reader *r)
{
    long cp = hex4(r);
    if (cp <= 0 || (cp >= 0xdc00 && cp < 0xe000))
        return -1;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (r->len - r->at < 2 || r->s[r->at] != '\\' || r->s[r->at + 1] != 'u')
            return -1;
        r->at += 2;
        long low = hex4(r);
        if (low < 0xdc00 || low >= 0xe000)
            return -1;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    return cp;
}

/* Source bytes of the string that opens at r->at, quotes excluded, up to
 * the closing quote or the end of the input. The decoded text is never
 * longer (an escape shrinks or keeps its length), so the buffer is sized by
 * the string itself, not by the rest of the line. */
static size_t string_source_len(const reader *r)
{
    size_t i = r->at + 1;
    while (i < r->len && r->s[i] != '"' && r->s[i])
        i += r->s[i] == '\\' && i + 1 < r->len ? 2 : 1;
    return i - (r->at + 1);
}

static int parse_string(reader *r, char **out)
{
    size_t source = string_source_len(r);
    r->at++; /* opening quote */
    char *buf = malloc(source + 1);
    if (!buf)
        return fail(r, "out of memory");
    size_t n = 0;
    for (;;) {
        int c = peek(r);
        if (c < 0 || c < 0x20) {
            free(buf);
            return fail(r, c < 0 ? "unterminated string" : "control character in string");
        }
        r->at++;
        if (c == '"')
            break;
        if (c != '\\') {
            buf[n++] = (char)c;
            continue;
        }
        int e = peek(r);
        r->at++;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = e > 0 ? strchr(from, e) : NULL;
        if (hit && e) {
            buf[n++] = to[hit - from];
        } else if (e == 'u') {
            long cp = unicode_escape(r);
            if (cp < 0) {
                free(buf);
                return fail(r, "bad \\u escape (malformed, U+0000 or a lone surrogate)");
            }
            /* 6 source bytes give at most 3 out, 12 (a pair) give 4 */
            n += put_utf8(buf + n, (unsigned)cp);
        } else {
            free(buf);
            return fail(r, "bad escape in string");
        }
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int push(reader *r, lkv_json *v, lkv_json *item, char *key)
{
    if (v->count == v->cap) {
        int cap = v->cap ? 2 * v->cap : 8;
        lkv_json *items = realloc(v->items, sizeof *items * (size_t)cap);
        if (!items)
            return fail(r, "out of memory");
        v->items = items;
        if (v->type == LKV_JSON_OBJECT) {
            char **keys = realloc(v->keys, sizeof *keys * (size_t)cap);
            if (!keys)
                return fail(r, "out of memory");
            v->keys = keys;
        }
        v->cap = cap;
    }
    if (v->type == LKV_JSON_OBJECT)
        v->keys[v->count] = key;
    v->items[v->count++] = *item;
    return 0;
}

atomic_size_t lkv_json_key_compares;

static int key_order(const void *a, const void *b)
{
    atomic_fetch_add_explicit(&lkv_json_key_compares, 1, memory_order_relaxed);
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Which of two equal keys a reader would take is a guess, so an object
 * with one is refused. Sorted, not compared pair by pair: an object can
 * hold a line's worth of keys. */
static int check_unique_keys(reader *r, const lkv_json *obj)
{
    if (obj->count < 2)
        return 0;
    char **keys = malloc(sizeof *keys * (size_t)obj->count);
    if (!keys)
        return fail(r, "out of memory");
    memcpy(keys, obj->keys, sizeof *keys * (size_t)obj->count);
    qsort(keys, (size_t)obj->count, sizeof *keys, key_order);
    const char *twice = NULL;
    for (int i = 1; i < obj->count && !twice; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            twice = keys[i];
    int rc = 0;
    if (twice) {
        char what[96];
        snprintf(what, sizeof what, "key \"%.48s%s\" appears twice in the object ending",
                 twice, strlen(twice) > 48 ? "..." : "");
        rc = fail(r, what);
    }
    free(keys);
    return rc;
}

/* Arrays and objects share the loop; objects read "key": before each value. */
static int parse_container(reader *r, lkv_json *out, int depth, int object)
{
    out->type = object ? LKV_JSON_OBJECT : LKV_JSON_ARRAY;
    int close = object ? '}' : ']';
    r->at++;
    skip_ws(r);
    if (peek(r) == close) {
        r->at++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(r);
        if (object) {
            if (peek(r) != '"')
                return fail(r, "object key expected");
            if (parse_string(r, &key) != 0)
                return -1;
            skip_ws(r);
            if (peek(r) != ':') {
                free(key);
                return fail(r, "':' expected");
            }
            r->at++;
        }
        lkv_json item = {0};
        if (parse_value(r, &item, depth + 1) != 0 || push(r, out, &item, key) != 0) {
            lkv_json_free(&item);
            free(key);
            return -1;
        }
        skip_ws(r);
        int c = peek(r);
        r->at++;
        if (c == close)
            return object ? check_unique_keys(r, out) : 0;
        if (c != ',') {
            r->at--;
            return fail(r, object ? "',' or '}' expected" : "',' or ']' expected");
        }
    }
}

static int parse_value(reader *r, lkv_json *out, int depth)
{
    if (depth > LKV_JSON_MAX_DEPTH)
        return fail(r, "nesting too deep");
    skip_ws(r);
    int c = peek(r);
    switch (c) {
    case '{': return parse_container(r, out, depth, 1);
    case '[': return parse_container(r, out, depth, 0);
    case '"': out->type = LKV_JSON_STRING; return parse_string(r, &out->text);
    case 't': return literal(r, "true", LKV_JSON_BOOL, 1, out);
    case 'f': return literal(r, "false", LKV_JSON_BOOL, 0, out);
    case 'n': return literal(r, "null", LKV_JSON_NULL, 0, out);
    case -1: return fail(r, "unexpected end of input");
    default:
        if (c == '-' || isdigit(c))
            return parse_number(r, out);
        return fail(r, "unexpected character");
    }
}

int lkv_json_parse(const char *text, size_t len, lkv_json *out, char *err, size_t err_len)
{
    reader r = {text, len, 0, err, err_len};
    memset(out, 0, sizeof *out);
    if (parse_value(&r, out, 0) != 0) {
        lkv_json_free(out);
        return -1;
    }
    skip_ws(&r);
    if (r.at != r.len) {
        lkv_json_free(out);
        return fail(&r, "trailing characters after the value");
    }
    return 0;
}

void lkv_json_free(lkv_json *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->count; i++) {
        lkv_json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    memset(v, 0, sizeof *v);
}

const lkv_json *lkv_json_get(const lkv_json *obj, const char *key)
{
    if (!obj || obj->type != LKV_JSON_OBJECT)
        return NULL;
    for (int i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

/* Length (1..4) of the well-formed UTF-8 character at p, or 0 when there is
 * none: then *skip is the length of its longest well-formed start (at least
 * 1), which one U+FFFD replaces, as Unicode recommends. */
static int utf8_char(const unsigned char *p, int *skip)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    int need;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlong forms */
        hi = c == 0xED ? 0x9F : 0xBF; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* nothing above U+10FFFF */
    } else {
        *skip = 1;
        return 0;
    }
    for (int i = 1; i <= need; i++, lo = 0x80, hi = 0xBF)
        if (p[i] < lo || p[i] > hi) { /* the terminating NUL stops here too */
            *skip = i;
            return 0;
        }
    return need + 1;
}

void lkv_json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int skip = 0, n = utf8_char(p, &skip);
        if (n == 0) {
            fputs("\\ufffd", f);
            p += skip;
            continue;
        }
        if (n > 1)
            fwrite(p, 1, (size_t)n, f);
        else if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
        p += n;
    }
    fputc('"', f);
}
