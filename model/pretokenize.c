#include "pretokenize.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "text_escape.h"
#include "unicode.h"

/* One code point (or invalid byte) of the text. u[n].off is the text's end. */
typedef struct unit {
    size_t off;
    uint32_t cp;
    unsigned char cls;
} unit;

typedef struct split {
    const char *text;
    const unit *u;
    lkv_pretok_emit emit;
    void *ctx;
} split;

lkv_status lkv_pretok_from_name(const char *name, size_t len, lkv_pretok_kind *out_kind)
{
    if (len == 6 && memcmp(name, "smollm", 6) == 0) {
        *out_kind = LKV_PRETOK_SMOLLM;
        return LKV_OK;
    }
    if (len == 4 && memcmp(name, "gpt2", 4) == 0) {
        *out_kind = LKV_PRETOK_GPT2;
        return LKV_OK;
    }
    char shown[LKV_ESCAPE_CAP];
    return lkv_fail(LKV_UNSUPPORTED,
                    "tokenizer.ggml.pre '%s' is not supported (known: 'smollm', 'gpt2')",
                    lkv_text_escape(name, len, shown, sizeof shown));
}

static lkv_status put(const split *s, size_t a, size_t b)
{
    return s->emit(s->ctx, s->text + s->u[a].off, s->u[b].off - s->u[a].off);
}

/* 's 't 'm 'd 're 've 'll: the length matched at pos, or 0. */
static size_t contraction(const unit *u, size_t pos, size_t hi)
{
    if (u[pos].cp != '\'' || pos + 1 >= hi) {
        return 0;
    }
    uint32_t a = u[pos + 1].cp;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        return 2;
    }
    if (pos + 2 >= hi) {
        return 0;
    }
    uint32_t b = u[pos + 2].cp;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        return 3;
    }
    return 0;
}

static size_t run_end(const unit *u, size_t pos, size_t hi, unsigned char cls)
{
    while (pos < hi && u[pos].cls == cls) {
        pos++;
    }
    return pos;
}

/* Where GPT-2's rule ends the piece that starts at pos (< hi). */
static size_t gpt2_piece_end(const unit *u, size_t pos, size_t hi)
{
    size_t c = contraction(u, pos, hi);
    if (c > 0) {
        return pos + c;
    }
    size_t p = pos;
    if (u[pos].cp == ' ' && pos + 1 < hi && u[pos + 1].cls != LKV_UCLASS_SPACE) {
        p = pos + 1; /* " ?" before letters, numbers or other */
    }
    if (u[p].cls != LKV_UCLASS_SPACE) {
        return run_end(u, p, hi, u[p].cls);
    }
    size_t e = run_end(u, pos, hi, LKV_UCLASS_SPACE);
    /* \s+(?!\S): a run before a non-space leaves its last space to that. */
    if (e - pos > 1 && e < hi) {
        return e - 1;
    }
    return e;
}

static lkv_status gpt2_split(const split *s, size_t lo, size_t hi)
{
    for (size_t pos = lo; pos < hi;) {
        size_t end = gpt2_piece_end(s->u, pos, hi);
        lkv_status st = put(s, pos, end);
        if (st != LKV_OK) {
            return st;
        }
        pos = end;
    }
    return LKV_OK;
}

static lkv_status smollm_split(const split *s, size_t n)
{
    for (size_t pos = 0; pos < n;) {
        size_t hi = pos;
        while (hi < n && s->u[hi].cls != LKV_UCLASS_NUMBER) {
            hi++;
        }
        lkv_status st = hi == pos ? put(s, pos, pos + 1) : gpt2_split(s, pos, hi);
        if (st != LKV_OK) {
            return st;
        }
        pos = hi == pos ? pos + 1 : hi;
    }
    return LKV_OK;
}

static size_t decode_units(const char *text, size_t len, unit *u)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t n = 0;
    for (size_t off = 0; off < len; n++) {
        uint32_t cp;
        size_t step = lkv_utf8_decode(p + off, len - off, &cp);
        u[n].off = off;
        u[n].cp = cp;
        u[n].cls = (unsigned char)lkv_unicode_classify(cp);
        off += step;
    }
    u[n].off = len;
    u[n].cp = 0;
    u[n].cls = LKV_UCLASS_OTHER;
    return n;
}

lkv_status lkv_pretokenize(lkv_pretok_kind kind, const char *text, size_t len,
                           lkv_pretok_emit emit, void *ctx)
{
    if (len == 0) {
        return LKV_OK;
    }
    if (len >= SIZE_MAX / sizeof(unit)) {
        return lkv_fail(LKV_OUT_OF_MEMORY, "text of %zu bytes is too long to pre-tokenize", len);
    }
    unit *u = malloc((len + 1) * sizeof *u);
    if (!u) {
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory to pre-tokenize %zu bytes", len);
    }
    size_t n = decode_units(text, len, u);
    split s = {text, u, emit, ctx};
    lkv_status st = kind == LKV_PRETOK_SMOLLM ? smollm_split(&s, n) : gpt2_split(&s, 0, n);
    free(u);
    return st;
}
