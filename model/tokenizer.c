/* The tokenizer from GGUF metadata. Encoding splits the text at control
 * tokens (longest match at each position), pre-tokenizes the text between
 * them and BPE-encodes each piece; every table it needs is copied out of the
 * file at load, so it outlives the lkv_gguf. */
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "chat.h"
#include "error.h"
#include "pretokenize.h"
#include "le.h"
#include "text_escape.h"
#include "token_map.h"
#include "unicode.h"

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum {
    TT_UNDEFINED = 0,
    TT_NORMAL = 1,
    TT_UNKNOWN = 2,
    TT_CONTROL = 3,
    TT_USER_DEFINED = 4,
    TT_UNUSED = 5,
    TT_BYTE = 6
};

#define MAX_ENDS 4

struct lkv_tokenizer {
    int32_t n_vocab;
    unsigned char *type;
    /* Each token's bytes, text[off[id] .. off[id + 1]): the byte-level text
     * decoded for normal tokens, the GGUF text as it is for the others. */
    char *text;
    uint32_t *off;
    lkv_bpe *bpe;
    lkv_pretok_kind pre;
    int32_t bos, eos;
    int32_t ends[MAX_ENDS];
    int n_ends;
    /* Control, user-defined and unknown tokens, grouped by first byte, the
     * longest first: specials[special_at[b] .. special_at[b + 1]). */
    int32_t *specials;
    uint32_t special_at[257];
    lkv_chat_template chat;
};

static int is_special_type(unsigned t)
{
    return t == TT_CONTROL || t == TT_USER_DEFINED || t == TT_UNKNOWN;
}

static const char *token_bytes(const lkv_tokenizer *tok, int32_t id, size_t *out_len)
{
    *out_len = tok->off[id + 1] - tok->off[id];
    return tok->text + tok->off[id];
}

/* ---- loading ------------------------------------------------------------- */

static lkv_status check_model(const lkv_gguf *g)
{
    lkv_gguf_str model;
    lkv_status st = lkv_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (st != LKV_OK)
        return st;
    char shown[LKV_ESCAPE_CAP];
    if (model.len != 4 || memcmp(model.ptr, "gpt2", 4) != 0)
        return lkv_fail(LKV_UNSUPPORTED,
                        "tokenizer.ggml.model '%s' is not supported: only 'gpt2' (byte-level "
                        "BPE) is",
                        lkv_text_escape(model.ptr, model.len, shown, sizeof shown));
    return LKV_OK;
}

static lkv_status read_pre(const lkv_gguf *g, lkv_pretok_kind *out)
{
    if (!lkv_gguf_find(g, "tokenizer.ggml.pre"))
        return lkv_fail(LKV_UNSUPPORTED,
                        "tokenizer.ggml.pre is missing (llama.cpp's 'default' rules): only "
                        "'smollm' and 'gpt2' are supported");
    lkv_gguf_str pre;
    lkv_status st = lkv_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (st != LKV_OK)
        return st;
    return lkv_pretok_from_name(pre.ptr, (size_t)pre.len, out);
}

static lkv_status read_tokens(const lkv_gguf *g, const lkv_gguf_value **out)
{
    lkv_status st = lkv_gguf_get_array(g, "tokenizer.ggml.tokens", LKV_GGUF_STRING, out);
    if (st != LKV_OK)
        return st;
    if ((*out)->count == 0 || (*out)->count > INT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tokenizer.ggml.tokens has %llu entries (1..%d)",
                        (unsigned long long)(*out)->count, INT32_MAX);
    return LKV_OK;
}

/* token_type is optional: without it every token is normal. */
static lkv_status read_types(const lkv_gguf *g, lkv_tokenizer *tok)
{
    tok->type = malloc((size_t)tok->n_vocab);
    if (!tok->type)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for %d token types", tok->n_vocab);
    memset(tok->type, TT_NORMAL, (size_t)tok->n_vocab);
    if (!lkv_gguf_find(g, "tokenizer.ggml.token_type"))
        return LKV_OK;
    const lkv_gguf_value *v;
    lkv_status st = lkv_gguf_get_array(g, "tokenizer.ggml.token_type", LKV_GGUF_I32, &v);
    if (st != LKV_OK)
        return st;
    if (v->count != (uint64_t)tok->n_vocab)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tokenizer.ggml.token_type has %llu entries but tokenizer.ggml.tokens %d",
                        (unsigned long long)v->count, tok->n_vocab);
    const uint8_t *p = v->data;
    for (int32_t i = 0; i < tok->n_vocab; i++) {
        int32_t t = lkv_le32_signed(p + 4 * (size_t)i);
        if (t < TT_UNDEFINED || t > TT_BYTE)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "tokenizer.ggml.token_type[%d] = %d is not a token type (0..6)", i, t);
        tok->type[i] = (unsigned char)t;
    }
    return LKV_OK;
}

/* Appends the bytes a byte-level text stands for; 0 on success, else the
 * offending code point (LKV_UNICODE_INVALID for bad UTF-8) + 1. */
static uint64_t decode_byte_level(const lkv_gguf_str *s, const int16_t *cp_to_byte, char *out,
                                  size_t *out_len)
{
    const unsigned char *p = (const unsigned char *)s->ptr;
    size_t n = 0;
    for (size_t i = 0; i < s->len;) {
        uint32_t cp;
        i += lkv_utf8_decode(p + i, (size_t)s->len - i, &cp);
        if (cp >= 0x144 || cp_to_byte[cp] < 0)
            return (uint64_t)cp + 1;
        out[n++] = (char)cp_to_byte[cp];
    }
    *out_len = n;
    return 0;
}

static lkv_status bad_token_char(const lkv_gguf_str *s, int32_t id, uint64_t bad)
{
    char shown[LKV_ESCAPE_CAP];
    lkv_text_escape(s->ptr, s->len, shown, sizeof shown);
    if (bad - 1 == LKV_UNICODE_INVALID)
        return lkv_fail(LKV_INVALID_ARGUMENT, "token %d '%s' is not valid UTF-8", id, shown);
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "token %d '%s' holds U+%04llX, which stands for no byte in the "
                    "byte-level alphabet",
                    id, shown, (unsigned long long)(bad - 1));
}

static lkv_status copy_texts(lkv_tokenizer *tok, const lkv_gguf_str *texts)
{
    uint64_t total = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        total += texts[i].len;
    if (total >= UINT32_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tokenizer.ggml.tokens holds %llu bytes of text",
                        (unsigned long long)total);
    tok->text = malloc((size_t)total + 1);
    tok->off = malloc(((size_t)tok->n_vocab + 1) * sizeof *tok->off);
    if (!tok->text || !tok->off)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for %llu bytes of token text",
                        (unsigned long long)total);
    int16_t cp_to_byte[0x144];
    memset(cp_to_byte, 0xFF, sizeof cp_to_byte);
    for (int b = 0; b < 256; b++)
        cp_to_byte[lkv_byte_to_unicode((uint8_t)b)] = (int16_t)b;
    uint32_t at = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++) {
        tok->off[i] = at;
        size_t n = (size_t)texts[i].len;
        if (is_special_type(tok->type[i]) || tok->type[i] == TT_UNUSED) {
            if (n)
                memcpy(tok->text + at, texts[i].ptr, n);
        } else {
            uint64_t bad = decode_byte_level(&texts[i], cp_to_byte, tok->text + at, &n);
            if (bad)
                return bad_token_char(&texts[i], i, bad);
        }
        at += (uint32_t)n;
    }
    tok->off[tok->n_vocab] = at;
    return LKV_OK;
}

static lkv_status optional_id(const lkv_gguf *g, const char *key, int32_t n_vocab,
                              int32_t *out)
{
    *out = -1;
    if (!lkv_gguf_find(g, key))
        return LKV_OK;
    int64_t v;
    lkv_status st = lkv_gguf_get_int(g, key, 0, n_vocab - 1, &v);
    if (st != LKV_OK)
        return st;
    *out = (int32_t)v;
    return LKV_OK;
}

static void add_end(lkv_tokenizer *tok, int32_t id)
{
    if (id < 0 || tok->n_ends == MAX_ENDS)
        return;
    for (int i = 0; i < tok->n_ends; i++)
        if (tok->ends[i] == id)
            return;
    tok->ends[tok->n_ends++] = id;
}

/* eos, eot, and the end-of-turn and end-of-text tokens llama.cpp also ends
 * generation on (found by their text). */
static lkv_status read_ends(const lkv_gguf *g, const lkv_token_map *map, lkv_tokenizer *tok)
{
    int32_t eot;
    lkv_status st = optional_id(g, "tokenizer.ggml.bos_token_id", tok->n_vocab, &tok->bos);
    if (st == LKV_OK)
        st = optional_id(g, "tokenizer.ggml.eos_token_id", tok->n_vocab, &tok->eos);
    if (st == LKV_OK)
        st = optional_id(g, "tokenizer.ggml.eot_token_id", tok->n_vocab, &eot);
    if (st != LKV_OK)
        return st;
    add_end(tok, tok->eos);
    add_end(tok, eot);
    add_end(tok, lkv_token_map_find2(map, "<|im_end|>", 10, NULL, 0));
    add_end(tok, lkv_token_map_find2(map, "<|endoftext|>", 13, NULL, 0));
    return LKV_OK;
}

typedef struct special_key {
    unsigned char first;
    uint32_t len;
    int32_t id;
} special_key;

static int special_cmp(const void *pa, const void *pb)
{
    const special_key *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : 1;
}

static lkv_status index_specials(lkv_tokenizer *tok)
{
    size_t n = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        n += is_special_type(tok->type[i]) && tok->off[i + 1] > tok->off[i];
    special_key *keys = malloc((n ? n : 1) * sizeof *keys);
    tok->specials = malloc((n ? n : 1) * sizeof *tok->specials);
    if (!keys || !tok->specials) {
        free(keys);
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for %zu special tokens", n);
    }
    n = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        if (is_special_type(tok->type[i]) && tok->off[i + 1] > tok->off[i])
            keys[n++] = (special_key){(unsigned char)tok->text[tok->off[i]],
                                      tok->off[i + 1] - tok->off[i], i};
    qsort(keys, n, sizeof *keys, special_cmp);
    size_t k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < n && keys[k].first < b)
            k++;
        tok->special_at[b] = (uint32_t)k;
    }
    for (k = 0; k < n; k++)
        tok->specials[k] = keys[k].id;
    free(keys);
    return LKV_OK;
}

static lkv_status read_chat(const lkv_gguf *g, lkv_tokenizer *tok)
{
    if (!lkv_gguf_find(g, "tokenizer.chat_template"))
        return LKV_OK; /* present = 0: rendering says so */
    lkv_gguf_str s;
    lkv_status st = lkv_gguf_get_str(g, "tokenizer.chat_template", &s);
    if (st != LKV_OK)
        return st;
    return lkv_chat_template_parse(s.ptr, (size_t)s.len, &tok->chat);
}

static lkv_status build_bpe(const lkv_gguf *g, const lkv_token_map *map, lkv_tokenizer *tok)
{
    const lkv_gguf_value *merges;
    lkv_status st = lkv_gguf_get_array(g, "tokenizer.ggml.merges", LKV_GGUF_STRING, &merges);
    if (st != LKV_OK)
        return st;
    return lkv_bpe_create(merges->strings, merges->count, map, &tok->bpe);
}

static lkv_status load(const lkv_gguf *g, lkv_tokenizer *tok)
{
    const lkv_gguf_value *tokens;
    lkv_status st = check_model(g);
    if (st == LKV_OK)
        st = read_pre(g, &tok->pre);
    if (st == LKV_OK)
        st = read_tokens(g, &tokens);
    if (st != LKV_OK)
        return st;
    tok->n_vocab = (int32_t)tokens->count;
    st = read_types(g, tok);
    if (st == LKV_OK)
        st = copy_texts(tok, tokens->strings);
    if (st != LKV_OK)
        return st;
    lkv_token_map map;
    st = lkv_token_map_build(tokens->strings, tok->n_vocab, &map);
    if (st != LKV_OK)
        return st;
    st = build_bpe(g, &map, tok);
    if (st == LKV_OK)
        st = read_ends(g, &map, tok);
    lkv_token_map_free(&map);
    if (st == LKV_OK)
        st = index_specials(tok);
    if (st == LKV_OK)
        st = read_chat(g, tok);
    return st;
}

lkv_status lkv_tokenizer_from_gguf(const lkv_gguf *g, lkv_tokenizer **out_tok)
{
    lkv_clear_error();
    if (!g || !out_tok)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tokenizer: %s is NULL", !g ? "the gguf" : "out_tok");
    lkv_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for a tokenizer");
    tok->bos = tok->eos = -1;
    lkv_status st = load(g, tok);
    if (st != LKV_OK) {
        lkv_tokenizer_free(tok);
        return st;
    }
    *out_tok = tok;
    return LKV_OK;
}

void lkv_tokenizer_free(lkv_tokenizer *tok)
{
    if (!tok)
        return;
    free(tok->type);
    free(tok->text);
    free(tok->off);
    lkv_bpe_free(tok->bpe);
    free(tok->specials);
    lkv_chat_template_free(&tok->chat);
    free(tok);
}

/* ---- queries --------------------------------------------------------------- */

int32_t lkv_tokenizer_vocab(const lkv_tokenizer *tok) { return tok->n_vocab; }
int32_t lkv_tokenizer_bos(const lkv_tokenizer *tok) { return tok->bos; }
int32_t lkv_tokenizer_eos(const lkv_tokenizer *tok) { return tok->eos; }

int lkv_tokenizer_is_end(const lkv_tokenizer *tok, int32_t id)
{
    for (int i = 0; i < tok->n_ends; i++)
        if (tok->ends[i] == id)
            return 1;
    return 0;
}

const lkv_chat_template *lkv_tokenizer_chat_template(const lkv_tokenizer *tok)
{
    return &tok->chat;
}

lkv_status lkv_tokenizer_piece(const lkv_tokenizer *tok, int32_t id, int show_special,
                               char *buf, size_t cap, size_t *out_len)
{
    lkv_clear_error();
    if (!tok || !out_len || (!buf && cap > 0))
        return lkv_fail(LKV_INVALID_ARGUMENT, "token piece: %s is NULL",
                        !tok ? "the tokenizer" : !out_len ? "out_len" : "buf");
    if (id < 0 || id >= tok->n_vocab)
        return lkv_fail(LKV_INVALID_ARGUMENT, "token id %d out of range 0..%d", (int)id,
                        (int)tok->n_vocab - 1);
    size_t len;
    const char *s = token_bytes(tok, id, &len);
    unsigned t = tok->type[id];
    if (t == TT_UNUSED || ((t == TT_CONTROL || t == TT_UNKNOWN) && !show_special))
        len = 0;
    if (len && cap)
        memcpy(buf, s, len < cap ? len : cap);
    *out_len = len;
    return LKV_OK;
}

/* ---- encoding -------------------------------------------------------------- */

typedef struct encode_job {
    const lkv_tokenizer *tok;
    const char *text;
    lkv_ids ids;
    lkv_bpe_work work;
} encode_job;

static lkv_status encode_piece(void *ctx, const char *piece, size_t len)
{
    encode_job *job = ctx;
    return lkv_bpe_encode(job->tok->bpe, &job->work, piece, len, &job->ids);
}

static lkv_status encode_plain(encode_job *job, size_t from, size_t to)
{
    const char *s = job->text + from;
    size_t bad = lkv_bpe_untokenizable(job->tok->bpe, s, to - from);
    if (bad < to - from) {
        unsigned char b = (unsigned char)s[bad];
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "text byte %zu is 0x%02x, which has no token in this vocabulary "
                        "(tokenizer.ggml.tokens lacks its byte-level character U+%04X)",
                        from + bad, b, (unsigned)lkv_byte_to_unicode(b));
    }
    return lkv_pretokenize(job->tok->pre, s, to - from, encode_piece, job);
}

/* The special token whose text starts at text[pos], the longest if several,
 * or -1. Without parse_special only user-defined tokens count (llama.cpp). */
static int32_t match_special(const lkv_tokenizer *tok, const char *text, size_t len, size_t pos,
                             int parse_special, size_t *out_len)
{
    unsigned char c = (unsigned char)text[pos];
    for (uint32_t k = tok->special_at[c]; k < tok->special_at[c + 1]; k++) {
        int32_t id = tok->specials[k];
        if (!parse_special && tok->type[id] != TT_USER_DEFINED)
            continue;
        size_t n;
        const char *s = token_bytes(tok, id, &n);
        if (n <= len - pos && memcmp(text + pos, s, n) == 0) {
            *out_len = n;
            return id;
        }
    }
    return -1;
}

static lkv_status encode_all(encode_job *job, size_t len, int parse_special)
{
    size_t from = 0;
    for (size_t pos = 0; pos < len;) {
        size_t n;
        int32_t id = match_special(job->tok, job->text, len, pos, parse_special, &n);
        if (id < 0) {
            pos++;
            continue;
        }
        lkv_status st = encode_plain(job, from, pos);
        if (st == LKV_OK)
            st = lkv_ids_push(&job->ids, id);
        if (st != LKV_OK)
            return st;
        pos += n;
        from = pos;
    }
    return encode_plain(job, from, len);
}

lkv_status lkv_tokenizer_encode(const lkv_tokenizer *tok, const char *text, size_t len,
                                int parse_special, int32_t **out_ids, int32_t *out_n)
{
    lkv_clear_error();
    if (!tok || !out_ids || !out_n || (!text && len > 0))
        return lkv_fail(LKV_INVALID_ARGUMENT, "encode: %s is NULL",
                        !tok ? "the tokenizer" : !text ? "the text" : "an out parameter");
    encode_job job = {tok, text, {NULL, 0, 0}, {NULL, NULL, 0}};
    lkv_status st = encode_all(&job, len, parse_special);
    lkv_bpe_work_free(&job.work);
    if (st == LKV_OK && job.ids.n > INT32_MAX)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "text of %zu bytes encodes to %zu tokens (at most %d)",
                      len, job.ids.n, INT32_MAX);
    if (st == LKV_OK && !job.ids.v) {
        job.ids.v = malloc(sizeof *job.ids.v); /* an empty text still gets an array to free */
        if (!job.ids.v)
            st = lkv_fail(LKV_OUT_OF_MEMORY, "no memory for an empty token array");
    }
    if (st != LKV_OK) {
        free(job.ids.v);
        return st;
    }
    *out_ids = job.ids.v;
    *out_n = (int32_t)job.ids.n;
    return LKV_OK;
}
