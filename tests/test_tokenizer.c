/* The SmolLM2 tokenizer (model/tokenizer.c and its parts). The Unicode
 * classes, the byte map, the pre-tokenizer, BPE ranking, special tokens and
 * metadata errors run on small GGUF files written here; the real vocabulary's
 * ids are compared with llama.cpp's when LAZYKV_TEST_MODEL names the
 * SmolLM2-135M-Instruct GGUF, and those tests skip otherwise. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "gguf.h"
#include "pretokenize.h"
#include "test_util.h"
#include "tokenizer.h"
#include "unicode.h"

/* ---- Unicode classes and the byte map ------------------------------------ */

Test(tokenizer_unicode, classes_follow_unicode_categories)
{
    static const struct {
        uint32_t cp;
        lkv_unicode_class cls;
        const char *what;
    } cases[] = {
        {'A', LKV_UCLASS_LETTER, "Lu"},          {0xE9, LKV_UCLASS_LETTER, "Ll e-acute"},
        {0x4E2D, LKV_UCLASS_LETTER, "Lo CJK"},   {0x2B0, LKV_UCLASS_LETTER, "Lm"},
        {0x7, LKV_UCLASS_OTHER, "Cc bell"},      {'7', LKV_UCLASS_NUMBER, "Nd"},
        {0x663, LKV_UCLASS_NUMBER, "Nd arabic"}, {0xB2, LKV_UCLASS_NUMBER, "No superscript"},
        {0x2167, LKV_UCLASS_NUMBER, "Nl roman"}, {' ', LKV_UCLASS_SPACE, "space"},
        {'\t', LKV_UCLASS_SPACE, "tab"},         {0x85, LKV_UCLASS_SPACE, "NEL"},
        {0xA0, LKV_UCLASS_SPACE, "no-break"},    {0x3000, LKV_UCLASS_SPACE, "ideographic"},
        {0x2029, LKV_UCLASS_SPACE, "Zp"},        {0x1C, LKV_UCLASS_OTHER, "not White_Space"},
        {0x301, LKV_UCLASS_OTHER, "Mn"},         {0x1F600, LKV_UCLASS_OTHER, "So emoji"},
        {'_', LKV_UCLASS_OTHER, "Pc"},           {0x10FFFF, LKV_UCLASS_OTHER, "unassigned"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(lkv_unicode_classify(cases[i].cp), cases[i].cls, "U+%04X (%s)",
                     (unsigned)cases[i].cp, cases[i].what);
}

Test(tokenizer_unicode, byte_map_is_gpt2s)
{
    /* Known points of GPT-2's bytes_to_unicode: printable bytes are
     * themselves, the rest count up from U+0100 in byte order. */
    static const uint32_t known[][2] = {{'!', '!'},     {'a', 'a'},     {'~', '~'},
                                        {0xA1, 0xA1},   {0xFF, 0xFF},   {0x00, 0x100},
                                        {0x0A, 0x10A},  {0x20, 0x120},  {0x7F, 0x121},
                                        {0x80, 0x122},  {0xA0, 0x142},  {0xAD, 0x143}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        cr_expect_eq(lkv_byte_to_unicode((uint8_t)known[i][0]), known[i][1], "byte 0x%02x",
                     (unsigned)known[i][0]);
    int seen[0x144] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = lkv_byte_to_unicode((uint8_t)b);
        cr_assert_lt(cp, 0x144u);
        cr_expect_eq(seen[cp]++, 0, "U+%04X stands for two bytes", (unsigned)cp);
        cr_expect_eq(lkv_unicode_to_byte(cp), b);
    }
    cr_expect_eq(lkv_unicode_to_byte(' '), -1);
    cr_expect_eq(lkv_unicode_to_byte(0x144), -1);
}

Test(tokenizer_unicode, bad_utf8_is_one_invalid_byte)
{
    static const struct {
        const char *s;
        size_t n;
        uint32_t cp;
        size_t len;
    } cases[] = {
        {"\xC3\xA9", 2, 0xE9, 2},         {"\xF0\x9F\x98\x80", 4, 0x1F600, 4},
        {"\x80", 1, LKV_UNICODE_INVALID, 1},         /* stray continuation */
        {"\xC0\x80", 2, LKV_UNICODE_INVALID, 1},     /* overlong NUL */
        {"\xED\xA0\x80", 3, LKV_UNICODE_INVALID, 1}, /* surrogate */
        {"\xE2\x82", 2, LKV_UNICODE_INVALID, 1},     /* truncated */
        {"\xF4\x90\x80\x80", 4, LKV_UNICODE_INVALID, 1}, /* past U+10FFFF */
        {"\xFF", 1, LKV_UNICODE_INVALID, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp;
        size_t len = lkv_utf8_decode((const unsigned char *)cases[i].s, cases[i].n, &cp);
        cr_expect_eq(cp, cases[i].cp, "case %zu", i);
        cr_expect_eq(len, cases[i].len, "case %zu", i);
    }
}

/* ---- the pre-tokenizer ------------------------------------------------------ */

typedef struct pieces {
    char text[16][32];
    int n;
} pieces;

static lkv_status collect(void *ctx, const char *piece, size_t len)
{
    pieces *p = ctx;
    cr_assert_lt(p->n, 16);
    cr_assert_lt(len, sizeof p->text[0]);
    memcpy(p->text[p->n], piece, len);
    p->text[p->n++][len] = '\0';
    return LKV_OK;
}

static void expect_split(lkv_pretok_kind kind, const char *text, const char *const *want)
{
    pieces got = {.n = 0};
    TU_OK(lkv_pretokenize(kind, text, strlen(text), collect, &got));
    int n = 0;
    while (want[n])
        n++;
    cr_expect_eq(got.n, n, "'%s': %d pieces, expected %d", text, got.n, n);
    for (int i = 0; i < n && i < got.n; i++)
        cr_expect_str_eq(got.text[i], want[i], "'%s' piece %d", text, i);
}

/* Expected pieces: Hugging Face tokenizers 0.23.3's pre_tokenize_str with
 * SmolLM2's Sequence[Digits(individual_digits), ByteLevel(use_regex)],
 * byte-level characters written back as bytes. */
Test(tokenizer_pretokenize, smollm_splits_like_the_reference)
{
    expect_split(LKV_PRETOK_SMOLLM, "Hello world's 123  abc\n\n x",
                 (const char *const[]){"Hello", " world", "'s", " ", "1", "2", "3", " ", " abc",
                                       "\n\n", " x", NULL});
    expect_split(LKV_PRETOK_SMOLLM, "a  b\t\tc  ",
                 (const char *const[]){"a", " ", " b", "\t", "\t", "c", "  ", NULL});
    expect_split(LKV_PRETOK_SMOLLM, " 'll'LL 42x",
                 (const char *const[]){" '", "ll", "'", "LL", " ", "4", "2", "x", NULL});
    expect_split(LKV_PRETOK_SMOLLM, "x\xC2\xB2+\xD9\xA3 \xC3\xA9t\xC3\xA9\xE3\x80\x80\xE4\xB8\xAD",
                 (const char *const[]){"x", "\xC2\xB2", "+", "\xD9\xA3", " \xC3\xA9t\xC3\xA9",
                                       "\xE3\x80\x80", "\xE4\xB8\xAD", NULL});
    expect_split(LKV_PRETOK_SMOLLM, "a?! ..b", (const char *const[]){"a", "?!", " ..", "b", NULL});
}

Test(tokenizer_pretokenize, gpt2_keeps_digit_runs_together)
{
    expect_split(LKV_PRETOK_GPT2, "abc 12345 x9",
                 (const char *const[]){"abc", " 12345", " x", "9", NULL});
}

/* Invalid bytes group like llama.cpp's U+FFFD (a symbol) does:
 * "a\uFFFDb \uFFFD\uFFFDc" splits a | \uFFFD | b | " \uFFFD\uFFFD" | c. */
Test(tokenizer_pretokenize, invalid_bytes_split_like_symbols)
{
    expect_split(LKV_PRETOK_SMOLLM, "a\xFF" "b \x80\x80" "c",
                 (const char *const[]){"a", "\xFF", "b", " \x80\x80", "c", NULL});
}

Test(tokenizer_pretokenize, unknown_pre_is_unsupported)
{
    lkv_pretok_kind k;
    cr_expect_eq(lkv_pretok_from_name("llama3", 6, &k), LKV_UNSUPPORTED);
    cr_expect(strstr(lkv_last_error(), "'llama3'"), "%s", lkv_last_error());
}

/* ---- small GGUF files --------------------------------------------------------- */

typedef enum kv_kind { KV_STR, KV_STRS, KV_I32S, KV_U32 } kv_kind;

typedef struct kv {
    const char *key;
    kv_kind kind;
    const char *str;
    const char *const *strs;
    const int32_t *ints;
    size_t n;
    uint32_t u32;
} kv;

static void put_u32(FILE *f, uint32_t v)
{
    cr_assert_eq(fwrite(&v, 4, 1, f), 1u); /* the test machine is little-endian */
}

static void put_u64(FILE *f, uint64_t v) { cr_assert_eq(fwrite(&v, 8, 1, f), 1u); }

static void put_str(FILE *f, const char *s)
{
    put_u64(f, strlen(s));
    cr_assert_eq(fwrite(s, 1, strlen(s), f), strlen(s));
}

static void put_kv(FILE *f, const kv *e)
{
    put_str(f, e->key);
    switch (e->kind) {
    case KV_STR:
        put_u32(f, LKV_GGUF_STRING);
        put_str(f, e->str);
        break;
    case KV_U32:
        put_u32(f, LKV_GGUF_U32);
        put_u32(f, e->u32);
        break;
    case KV_STRS:
        put_u32(f, LKV_GGUF_ARRAY);
        put_u32(f, LKV_GGUF_STRING);
        put_u64(f, e->n);
        for (size_t i = 0; i < e->n; i++)
            put_str(f, e->strs[i]);
        break;
    case KV_I32S:
        put_u32(f, LKV_GGUF_ARRAY);
        put_u32(f, LKV_GGUF_I32);
        put_u64(f, e->n);
        for (size_t i = 0; i < e->n; i++)
            put_u32(f, (uint32_t)e->ints[i]);
        break;
    }
}

/* Writes a tensor-less GGUF with these keys and opens it. */
static lkv_gguf *gguf_of(const kv *kvs, size_t n)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/lkv_tokenizer_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "mkstemp %s", path);
    FILE *f = fdopen(fd, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite("GGUF", 1, 4, f), 4u);
    put_u32(f, 3);
    put_u64(f, 0);
    put_u64(f, n);
    for (size_t i = 0; i < n; i++)
        put_kv(f, &kvs[i]);
    cr_assert_eq(fclose(f), 0);
    lkv_gguf *g = NULL;
    lkv_status st = lkv_gguf_open(path, &g);
    unlink(path);
    cr_assert_eq(st, LKV_OK, "%s", lkv_last_error());
    return g;
}

/* A toy byte-level vocabulary: "\xC4\xA0" is U+0120, the space's character. */
static const char *const TOY_TOKENS[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "a",  "b",   "c",    "\xC4\xA0",
    "ab",            "bc",           "abc",        "\xC4\xA0" "a", "<u>", "aa", "<s>", "<s>x"};
#define TOY_N ((int)(sizeof TOY_TOKENS / sizeof TOY_TOKENS[0]))
static const int32_t TOY_TYPES[TOY_N] = {3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 3, 3};
/* "b c" outranks "a b"; "a a" lets equal ranks meet. */
static const char *const TOY_MERGES[] = {"b c", "a b", "ab c", "\xC4\xA0 a", "a a"};

typedef struct toy {
    const char *model, *pre, *chat;
    const char *const *merges;
    size_t n_merges;
    size_t n_types;
    const char *const *tokens; /* TOY_N of them */
} toy;

static toy toy_default(void)
{
    return (toy){"gpt2", "smollm", NULL, TOY_MERGES, sizeof TOY_MERGES / sizeof TOY_MERGES[0],
                 TOY_N, TOY_TOKENS};
}

static lkv_status toy_open(toy t, lkv_tokenizer **out)
{
    kv kvs[8];
    size_t n = 0;
    kvs[n++] = (kv){.key = "tokenizer.ggml.model", .kind = KV_STR, .str = t.model};
    if (t.pre)
        kvs[n++] = (kv){.key = "tokenizer.ggml.pre", .kind = KV_STR, .str = t.pre};
    kvs[n++] = (kv){.key = "tokenizer.ggml.tokens", .kind = KV_STRS, .strs = t.tokens,
                    .n = TOY_N};
    kvs[n++] = (kv){.key = "tokenizer.ggml.token_type", .kind = KV_I32S, .ints = TOY_TYPES,
                    .n = t.n_types};
    if (t.merges)
        kvs[n++] = (kv){.key = "tokenizer.ggml.merges", .kind = KV_STRS, .strs = t.merges,
                        .n = t.n_merges};
    kvs[n++] = (kv){.key = "tokenizer.ggml.eos_token_id", .kind = KV_U32, .u32 = 0};
    if (t.chat)
        kvs[n++] = (kv){.key = "tokenizer.chat_template", .kind = KV_STR, .str = t.chat};
    lkv_gguf *g = gguf_of(kvs, n);
    *out = NULL;
    lkv_status st = lkv_tokenizer_from_gguf(g, out);
    lkv_gguf_close(g); /* the tokenizer keeps no pointer into the file */
    return st;
}

static lkv_tokenizer *toy_tokenizer(toy t)
{
    lkv_tokenizer *tok;
    TU_OK(toy_open(t, &tok));
    return tok;
}

static void expect_ids(const lkv_tokenizer *tok, const char *text, int parse_special,
                       const int32_t *want, int n_want)
{
    int32_t *ids = NULL, n = -1;
    TU_OK(lkv_tokenizer_encode(tok, text, strlen(text), parse_special, &ids, &n));
    cr_expect_eq(n, n_want, "'%s': %d ids, expected %d", text, n, n_want);
    for (int i = 0; i < n && i < n_want; i++)
        cr_expect_eq(ids[i], want[i], "'%s' id %d: %d, expected %d", text, i, ids[i], want[i]);
    free(ids);
}

static void expect_fail(lkv_status got, lkv_status want, const char *needle)
{
    cr_expect_eq(got, want, "status %s, expected %s (%s)", lkv_status_name(got),
                 lkv_status_name(want), lkv_last_error());
    cr_expect(strstr(lkv_last_error(), needle), "message '%s' lacks '%s'", lkv_last_error(),
              needle);
}

/* ---- BPE and special tokens on the toy vocabulary ----------------------------- */

Test(tokenizer_toy, lowest_rank_merges_first)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    /* "b c" (rank 0) before "a b" (rank 1): a|bc, and "a bc" is no merge. */
    expect_ids(tok, "abc", 0, (const int32_t[]){3, 8}, 2);
    /* "a b" (rank 1) before "Ġ a" (rank 3): Ġ|ab, not Ġa|b. */
    expect_ids(tok, " ab", 0, (const int32_t[]){6, 7}, 2);
    lkv_tokenizer_free(tok);

    toy t = toy_default();
    static const char *const other_order[] = {"a b", "b c", "ab c"};
    t.merges = other_order;
    t.n_merges = 3;
    tok = toy_tokenizer(t);
    expect_ids(tok, "abc", 0, (const int32_t[]){9}, 1); /* ab, then ab c */
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, equal_ranks_merge_leftmost_first)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    expect_ids(tok, "aaa", 0, (const int32_t[]){12, 3}, 2);
    expect_ids(tok, "aaaa", 0, (const int32_t[]){12, 12}, 2);
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, control_tokens_only_with_parse_special)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    expect_ids(tok, "<|im_start|>ab<|im_end|>", 1, (const int32_t[]){1, 7, 2}, 3);
    /* As text, '<' has no token in this vocabulary: the byte is named. */
    int32_t *ids = NULL, n = 0;
    expect_fail(lkv_tokenizer_encode(tok, "ab<|im_start|>", 14, 0, &ids, &n),
                LKV_INVALID_ARGUMENT, "text byte 2 is 0x3c");
    cr_expect_null(ids);
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, longest_special_wins)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    expect_ids(tok, "<s>x<s>", 1, (const int32_t[]){14, 13}, 2);
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, user_defined_tokens_always_match)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    expect_ids(tok, "a<u>b", 0, (const int32_t[]){3, 11, 4}, 3);
    expect_ids(tok, "a<u>b", 1, (const int32_t[]){3, 11, 4}, 3);
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, empty_text_is_no_tokens)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    int32_t *ids = NULL, n = -1;
    TU_OK(lkv_tokenizer_encode(tok, "", 0, 1, &ids, &n));
    cr_expect_eq(n, 0);
    cr_expect_not_null(ids);
    free(ids);
    lkv_tokenizer_free(tok);
}

Test(tokenizer_toy, pieces_decode_the_byte_level_text)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    char buf[32];
    size_t len;
    TU_OK(lkv_tokenizer_piece(tok, 10, 0, buf, sizeof buf, &len));
    cr_expect_eq(len, 2u);
    cr_expect(memcmp(buf, " a", 2) == 0);
    TU_OK(lkv_tokenizer_piece(tok, 1, 0, buf, sizeof buf, &len));
    cr_expect_eq(len, 0u, "a control token is empty without show_special");
    TU_OK(lkv_tokenizer_piece(tok, 1, 1, buf, 4, &len));
    cr_expect_eq(len, 12u, "the full length, though only 4 bytes fit");
    cr_expect(memcmp(buf, "<|im", 4) == 0);
    TU_OK(lkv_tokenizer_piece(tok, 11, 0, buf, sizeof buf, &len));
    cr_expect_eq(len, 3u, "a user-defined token is always text");
    lkv_tokenizer_free(tok);
}

/* ---- metadata errors ------------------------------------------------------------ */

/* Loading the toy vocabulary with these merges fails saying `needle`, and
 * leaves *out_tok alone. */
static void expect_merges_refused(const char *const *merges, size_t n, const char *needle)
{
    toy t = toy_default();
    t.merges = merges;
    t.n_merges = n;
    lkv_tokenizer *tok = (lkv_tokenizer *)1;
    expect_fail(toy_open(t, &tok), LKV_INVALID_ARGUMENT, needle);
    cr_expect_null(tok, "a failed load leaves *out_tok alone (toy_open set it to NULL)");
}

Test(tokenizer_errors, merge_naming_an_unknown_token)
{
    static const char *const bad[] = {"a b", "b d"};
    expect_merges_refused(bad, 2, "tokenizer.ggml.merges[1] 'b d' names a token not in the "
                                  "vocabulary");
}

Test(tokenizer_errors, merge_whose_result_is_no_token)
{
    static const char *const bad[] = {"a c"};
    expect_merges_refused(bad, 1, "'a c' names a token not in the vocabulary (the merged token)");
}

Test(tokenizer_errors, merge_without_a_space)
{
    static const char *const bad[] = {"a b", "abc"};
    expect_merges_refused(bad, 2, "merges[1] 'abc' is not two tokens");
}

/* Texts from the file reach the message escaped: a terminal control
 * sequence or invalid UTF-8 in a vocabulary cannot reach the terminal. */
Test(tokenizer_errors, file_text_in_messages_is_escaped)
{
    static const char *const bad_merge[] = {"a\x1b[2J\xff"};
    expect_merges_refused(bad_merge, 1, "'a\\x1b[2J\\xff' is not two tokens");
    cr_expect_null(strchr(lkv_last_error(), 0x1b), "%s", lkv_last_error());

    const char *tokens[TOY_N];
    memcpy(tokens, TOY_TOKENS, sizeof tokens);
    tokens[5] = "c\x1b[2J";
    toy t = toy_default();
    t.tokens = tokens;
    lkv_tokenizer *tok;
    expect_fail(toy_open(t, &tok), LKV_INVALID_ARGUMENT,
                "token 5 'c\\x1b[2J' holds U+001B");
    tokens[5] = "c\xff";
    expect_fail(toy_open(t, &tok), LKV_INVALID_ARGUMENT, "token 5 'c\\xff' is not valid UTF-8");
    cr_expect_null(strchr(lkv_last_error(), '\xff'), "%s", lkv_last_error());

    t = toy_default();
    t.model = "gpt2\x07";
    expect_fail(toy_open(t, &tok), LKV_UNSUPPORTED, "tokenizer.ggml.model 'gpt2\\x07'");
    t = toy_default();
    t.pre = "\x1b]0;x\x07";
    expect_fail(toy_open(t, &tok), LKV_UNSUPPORTED, "tokenizer.ggml.pre '\\x1b]0;x\\x07'");
}

Test(tokenizer_errors, token_type_count_must_match)
{
    toy t = toy_default();
    t.n_types = TOY_N - 1;
    lkv_tokenizer *tok;
    expect_fail(toy_open(t, &tok), LKV_INVALID_ARGUMENT,
                "tokenizer.ggml.token_type has 14 entries but tokenizer.ggml.tokens 15");
}

Test(tokenizer_errors, merges_are_required)
{
    toy t = toy_default();
    t.merges = NULL;
    lkv_tokenizer *tok;
    expect_fail(toy_open(t, &tok), LKV_INVALID_ARGUMENT, "tokenizer.ggml.merges");
}

Test(tokenizer_errors, other_models_and_pre_tokenizers_are_unsupported)
{
    toy t = toy_default();
    t.model = "llama";
    lkv_tokenizer *tok;
    expect_fail(toy_open(t, &tok), LKV_UNSUPPORTED, "tokenizer.ggml.model 'llama'");
    t = toy_default();
    t.pre = "qwen2";
    expect_fail(toy_open(t, &tok), LKV_UNSUPPORTED, "tokenizer.ggml.pre 'qwen2'");
    t.pre = NULL;
    expect_fail(toy_open(t, &tok), LKV_UNSUPPORTED, "tokenizer.ggml.pre is missing");
}

Test(tokenizer_errors, bad_ids_are_rejected)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    char buf[8];
    size_t len;
    expect_fail(lkv_tokenizer_piece(tok, TOY_N, 1, buf, sizeof buf, &len), LKV_INVALID_ARGUMENT,
                "token id 15 out of range 0..14");
    expect_fail(lkv_tokenizer_piece(tok, -1, 1, buf, sizeof buf, &len), LKV_INVALID_ARGUMENT,
                "token id -1 out of range 0..14");
    lkv_tokenizer_free(tok);
}

/* ---- chat templates ----------------------------------------------------------- */

static char *render(const char *chat, const char *system, const char *user, lkv_status *out_st)
{
    toy t = toy_default();
    t.chat = chat;
    lkv_tokenizer *tok = toy_tokenizer(t);
    char *text = NULL;
    *out_st = lkv_chat_render(tok, system, user, &text);
    lkv_tokenizer_free(tok);
    return text;
}

/* The template renders `system` (NULL: its default) and `user` as `want`. */
static void expect_rendered(const char *chat, const char *system, const char *user,
                            const char *want)
{
    lkv_status st;
    char *text = render(chat, system, user, &st);
    cr_assert_eq(st, LKV_OK, "%s", lkv_last_error());
    cr_expect_str_eq(text, want);
    free(text);
}

/* Expected texts: the templates rendered by jinja2 3.1.6 with messages
 * [user] (or [system, user]) and add_generation_prompt. */
Test(tokenizer_chat, default_system_read_from_a_double_quoted_literal)
{
    const char *chat = "{% if messages[0]['role'] != 'system' %}{{ \"<|im_start|>system\\nYou're "
                       "\\\"careful\\\".<|im_end|>\\n\" }}{% endif %}{% for message in messages "
                       "%}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                       "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
                       "'<|im_start|>assistant\\n' }}{% endif %}";
    expect_rendered(chat, NULL, "hi",
                    "<|im_start|>system\nYou're \"careful\".<|im_end|>\n"
                    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

Test(tokenizer_chat, chatml_without_a_default_writes_no_system_turn)
{
    const char *chat = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' "
                       "+ message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if "
                       "add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    expect_rendered(chat, NULL, "hi", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    expect_rendered(chat, "sys", "hi",
                    "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                    "<|im_start|>assistant\n");
}

Test(tokenizer_chat, a_computed_default_needs_a_system_message)
{
    const char *chat = "{{ '<|im_start|>system\n' + default_system + '<|im_end|>\n' }}{% for m "
                       "in messages %}{{ '<|im_start|>' + m.role }}{% endfor %}";
    lkv_status st;
    char *text = render(chat, NULL, "hi", &st);
    expect_fail(st, LKV_UNSUPPORTED, "not a plain string");
    cr_expect_null(text);
    text = render(chat, "given", "hi", &st);
    cr_expect_eq(st, LKV_OK, "%s", lkv_last_error());
    free(text);
}

Test(tokenizer_chat, the_constant_system_turn_is_the_default)
{
    /* Qwen2's shape: a computed system turn, then the default one. */
    const char *chat = "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
                       "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- "
                       "'<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}{%- endif %}{%- for "
                       "message in messages %}{%- if message.role != 'system' %}{{- "
                       "'<|im_start|>' + message.role + '\\n' + message.content + "
                       "'<|im_end|>\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt "
                       "%}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
    expect_rendered(chat, NULL, "hi",
                    "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nhi"
                    "<|im_end|>\n<|im_start|>assistant\n");
}

Test(tokenizer_chat, other_templates_are_unsupported)
{
    lkv_status st;
    char *text = render("{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}", NULL,
                        "hi", &st);
    expect_fail(st, LKV_UNSUPPORTED, "not ChatML");
    cr_expect_null(text);
    text = render(NULL, NULL, "hi", &st);
    expect_fail(st, LKV_UNSUPPORTED, "no tokenizer.chat_template");
    cr_expect_null(text);
}

/* `unit` repeated `times`, then `tail`, malloc'd. */
static char *repeated(const char *unit, int times, const char *tail, size_t *out_len)
{
    size_t u = strlen(unit), t = strlen(tail), len = u * (size_t)times + t;
    char *s = malloc(len + 1);
    cr_assert_not_null(s);
    for (int i = 0; i < times; i++)
        memcpy(s + (size_t)i * u, unit, u);
    memcpy(s + u * (size_t)times, tail, t + 1);
    *out_len = len;
    return s;
}

/* A template of 80,000 system heads took 29 s when each head rescanned the
 * text before it and after it. The parse must look at each byte a bounded
 * number of times, whatever the heads are followed by. */
static void expect_linear_parse(const char *unit, const char *tail, lkv_chat_default want,
                                const char *want_text)
{
    size_t len, work = 0;
    char *text = repeated(unit, 80000, tail, &len);
    lkv_chat_template t;
    TU_OK(lkv_chat_template_parse_counted(text, len, &t, &work));
    cr_expect_leq(work, 8 * len, "'%s' x 80000: %zu bytes looked at for %zu", unit, work, len);
    cr_expect_eq(t.has_default, want, "'%s' x 80000", unit);
    if (want_text)
        cr_expect_str_eq(t.default_system, want_text);
    lkv_chat_template_free(&t);
    free(text);
}

Test(tokenizer_chat, many_system_heads_parse_in_linear_time)
{
    /* heads with no <|im_end|> after them */
    expect_linear_parse("<|im_start|>system\n", "", LKV_CHAT_DEFAULT_UNREAD, NULL);
    /* each head cut short by a tag before the one <|im_end|> at the end */
    expect_linear_parse("<|im_start|>system\n{{ x }}", "<|im_end|>", LKV_CHAT_DEFAULT_UNREAD,
                        NULL);
    /* heads inside one literal that closes before the <|im_end|> */
    expect_linear_parse("{{ '<|im_start|>system\\n", "' }}<|im_end|>", LKV_CHAT_DEFAULT_UNREAD,
                        NULL);
    /* heads in tags, not in literals: never system turns; the last one is */
    expect_linear_parse("{% <|im_start|>system\n %}", "<|im_start|>system\nHi.<|im_end|>",
                        LKV_CHAT_DEFAULT, "Hi.");
    /* many literals each cut before a far <|im_end|>: the memo must not
     * carry over from one literal to the next */
    expect_linear_parse("{{ '<|im_start|>system\\nA' }}", "{{ '<|im_start|>system\\nB<|im_end|>' }}",
                        LKV_CHAT_DEFAULT, "B");
}

Test(tokenizer_toy, end_tokens_include_eos_and_end_of_turn)
{
    lkv_tokenizer *tok = toy_tokenizer(toy_default());
    cr_expect_eq(lkv_tokenizer_eos(tok), 0);
    cr_expect_eq(lkv_tokenizer_bos(tok), -1, "no bos_token_id");
    cr_expect(lkv_tokenizer_is_end(tok, 0));
    cr_expect(lkv_tokenizer_is_end(tok, 2), "<|im_end|> ends a turn");
    cr_expect(!lkv_tokenizer_is_end(tok, 1));
    cr_expect(!lkv_tokenizer_is_end(tok, 3));
    lkv_tokenizer_free(tok);
}

/* ---- SmolLM2-135M-Instruct's tokenizer ------------------------------------------ */

typedef struct smollm {
    lkv_gguf *g;
    lkv_tokenizer *tok;
} smollm;

static smollm smollm_open(void)
{
    const char *path = getenv("LAZYKV_TEST_MODEL");
    if (!path || !*path)
        cr_skip_test("LAZYKV_TEST_MODEL is not set (scripts/fetch-model.sh prints the SmolLM2 "
                     "GGUF's path)");
    smollm m = {NULL, NULL};
    TU_OK(lkv_gguf_open(path, &m.g));
    TU_OK(lkv_tokenizer_from_gguf(m.g, &m.tok));
    return m;
}

static void smollm_close(smollm *m)
{
    lkv_tokenizer_free(m->tok);
    lkv_gguf_close(m->g);
}

typedef struct ref_case {
    const char *name;
    const char *text;
    int parse_special;
    const int32_t *ids;
    int n;
} ref_case;

#define REF(name, special, ids, text) {name, text, special, ids, (int)(sizeof ids / sizeof ids[0])}

/* Expected ids from llama.cpp 0c1e570 (as vendored by llama-cpp-python 0.3.36:
 * Llama(model_path, vocab_only=True).tokenize(text, add_bos=False,
 * special=parse_special)) on SmolLM2-135M-Instruct.Q4_1.gguf. Hugging Face
 * tokenizers 0.23.3, built from the same file's tokens and merges with
 * SmolLM2's pre-tokenizer, gives the same ids for every case. */
static const int32_t ids_ascii_prose[] = {
    19556, 28, 905, 17, 669, 314, 253, 1028, 282, 260, 46119, 28, 351, 23784, 43, 15444, 476,
    2579, 451, 18, 284, 365, 5667, 29290, 595
};
static const int32_t ids_gsm8k_digits[] = {
    14247, 305, 417, 99, 26077, 2060, 216, 33, 38, 5246, 567, 1194, 30, 2306, 26064, 260, 17867,
    327, 1885, 34, 567, 3785, 42, 216, 36, 41, 35, 35, 40, 34, 40, 2719, 30
};
static const int32_t ids_accents[] = {
    83, 1939, 2756, 15486, 46494, 412, 2756, 5422, 2756, 5549, 223, 863, 1321, 45682, 19144,
    34878, 85
};
static const int32_t ids_cjk[] = {
    23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100, 226, 7365,
    118, 28589, 29184, 19076, 33085, 246, 181, 130, 251, 183, 240, 129
};
static const int32_t ids_emoji[] = {
    391, 33777, 42, 40303, 218, 10813, 235, 231, 10813, 233, 138, 15107, 244, 218, 17
};
static const int32_t ids_cyrillic[] = {
    155, 249, 46879, 16464, 32547, 28, 31338, 6511, 13760, 33427, 42292, 6511, 47
};
static const int32_t ids_combining_marks[] = {
    85, 151, 219, 676, 151, 219, 253, 151, 226, 304, 151, 221, 95
};
static const int32_t ids_digit_runs[] = {
    33, 34, 35, 36, 37, 38, 39, 40, 284, 216, 35, 30, 33, 36, 33, 37, 41, 28, 216, 33, 28, 32, 32,
    32, 28, 32, 32, 32, 1792, 19133, 216, 164, 113, 164, 114
};
static const int32_t ids_edge_spaces[] = {
    256, 2899, 284, 35079, 5600, 333
};
static const int32_t ids_tabs_newlines[] = {
    100, 7366, 197, 397, 198, 2241, 5110, 201, 198, 37066, 1116, 198, 18847, 3717, 1112
};
static const int32_t ids_contractions[] = {
    57, 5248, 2090, 357, 506, 732, 502, 6737, 1643, 42, 392, 3060, 28, 346, 3543, 28, 502, 2316,
    28, 422, 2154, 23, 68, 637, 385, 5036, 23
};
static const int32_t ids_code[] = {
    1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222, 198
};
static const int32_t ids_mixed_runs[] = {
    25276, 33, 34, 35, 1604, 256, 36, 37, 38, 197, 39, 40, 41, 2026
};
static const int32_t ids_space_runs[] = {
    81, 216, 278, 256, 265, 333, 287, 4444
};
static const int32_t ids_unicode_spaces[] = {
    216, 15442, 9033, 29, 11194, 12109, 218, 489, 4551, 321, 227, 39200
};
static const int32_t ids_chatml_text_plain[] = {
    44, 108, 306, 79, 3738, 108, 46, 4093, 198, 26843, 665, 44, 108, 306, 79, 486, 108, 46, 198
};
static const int32_t ids_chatml_text_special[] = {
    1, 4093, 198, 26843, 665, 2, 198
};
static const int32_t ids_chat_prompt_special[] = {
    1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
    19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198
};

static const ref_case REF_CASES[] = {
    REF("ascii_prose", 0, ids_ascii_prose,
        "Hello, world! This is a test of the tokenizer, with punctuation; quotes \""
        "like this\" and (parentheses)."),
    REF("gsm8k_digits", 0, ids_gsm8k_digits,
        "Janet\342\200\231s ducks lay 16 eggs per day. She sells the remainder for"
        " $2 per egg: 4933828 total."),
    REF("accents", 0, ids_accents,
        "caf\303\251 na\303\257ve r\303\251sum\303\251 \303\205ngstr\303\266m Stra"
        "\303\237e"),
    REF("cjk", 0, ids_cjk,
        "\346\227\245\346\234\254\350\252\236\343\201\256\343\203\206\343\202\255\343"
        "\202\271\343\203\210\343\201\250\344\270\255\346\226\207\343\200\202\355\225"
        "\234\352\265\255\354\226\264"),
    REF("emoji", 0, ids_emoji,
        "emoji: \360\237\230\200\360\237\221\215\360\237\217\275 \360\237\232\200!"),
    REF("cyrillic", 0, ids_cyrillic,
        "\320\237\321\200\320\270\320\262\320\265\321\202, \320\272\320\260\320\272"
        " \320\264\320\265\320\273\320\260?"),
    REF("combining_marks", 0, ids_combining_marks,
        "e\314\201te\314\201 a\314\210 n\314\203o"),
    REF("digit_runs", 0, ids_digit_runs,
        "12345678 and 3.14159, 1,000,000 x\302\262 \331\243\331\244"),
    REF("edge_spaces", 0, ids_edge_spaces,
        "   leading and trailing spaces   "),
    REF("tabs_newlines", 0, ids_tabs_newlines,
        "tabs\tand\nnewlines\r\nwindows\n\n\nblank \n end"),
    REF("contractions", 0, ids_contractions,
        "I'm sure it's what they'd say: we'll, you've, they're, DON'T 'quoted'"),
    REF("code", 0, ids_code,
        "def f(x):\n    return x**2  # square\n"),
    REF("mixed_runs", 0, ids_mixed_runs,
        "abc123def  456\t789..."),
    REF("space_runs", 0, ids_space_runs,
        "a  b   c    d     "),
    REF("unicode_spaces", 0, ids_unicode_spaces,
        " \302\240non-breaking\343\200\200ideographic\342\200\211thin"),
    REF("chatml_text/plain", 0, ids_chatml_text_plain,
        "<|im_start|>user\nHi there<|im_end|>\n"),
    REF("chatml_text/special", 1, ids_chatml_text_special,
        "<|im_start|>user\nHi there<|im_end|>\n"),
    REF("chat_prompt", 1, ids_chat_prompt_special,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
        "by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im"
        "_start|>assistant\n"),
};

static void expect_ref(const lkv_tokenizer *tok, const ref_case *c)
{
    int32_t *ids = NULL, n = -1;
    TU_OK(lkv_tokenizer_encode(tok, c->text, strlen(c->text), c->parse_special, &ids, &n));
    int same = n == c->n;
    for (int i = 0; same && i < n; i++)
        same = ids[i] == c->ids[i];
    if (!same) {
        int i = 0;
        while (i < n && i < c->n && ids[i] == c->ids[i])
            i++;
        cr_expect_fail("%s: %d ids (expected %d), first difference at %d: %d, expected %d",
                       c->name, n, c->n, i, i < n ? ids[i] : -1, i < c->n ? c->ids[i] : -1);
    }
    free(ids);
}

Test(tokenizer_smollm, ids_match_llama_cpp)
{
    smollm m = smollm_open();
    for (size_t i = 0; i < sizeof REF_CASES / sizeof REF_CASES[0]; i++)
        expect_ref(m.tok, &REF_CASES[i]);
    smollm_close(&m);
}

/* The bytes of ids, through lkv_tokenizer_piece; caller frees. */
static char *decode(const lkv_tokenizer *tok, const int32_t *ids, int n, int show_special,
                    size_t *out_len)
{
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    cr_assert(s);
    for (int i = 0; i < n; i++) {
        size_t piece;
        TU_OK(lkv_tokenizer_piece(tok, ids[i], show_special, NULL, 0, &piece));
        while (len + piece > cap)
            cr_assert(s = realloc(s, cap *= 2));
        TU_OK(lkv_tokenizer_piece(tok, ids[i], show_special, s + len, piece, &piece));
        len += piece;
    }
    *out_len = len;
    return s;
}

static void expect_round_trip(const lkv_tokenizer *tok, const char *text, size_t len,
                              int parse_special)
{
    int32_t *ids = NULL, n = 0;
    TU_OK(lkv_tokenizer_encode(tok, text, len, parse_special, &ids, &n));
    size_t back_len;
    char *back = decode(tok, ids, n, parse_special, &back_len);
    cr_expect(back_len == len && memcmp(back, text, len) == 0,
              "'%.*s' (%zu bytes) came back as '%.*s' (%zu bytes)", (int)len, text, len,
              (int)back_len, back, back_len);
    free(back);
    free(ids);
}

Test(tokenizer_smollm, decode_of_encode_gives_the_text_back)
{
    smollm m = smollm_open();
    for (size_t i = 0; i < sizeof REF_CASES / sizeof REF_CASES[0]; i++)
        for (int special = 0; special < 2; special++)
            expect_round_trip(m.tok, REF_CASES[i].text, strlen(REF_CASES[i].text), special);
    /* Invalid UTF-8 goes through byte by byte (llama.cpp would put U+FFFD). */
    static const char *const odd[] = {
        "\x80",          "caf\xC3",        "\xE2\x82 euro",   "\xED\xA0\x80 surrogate",
        "truncated \xF0\x9F\x98", "\xC3\xA9\xC3", " \t \r\n\r\n  ", "'s'S 're 'RE",
        "\n", " ",             "0",             "\xEF\xBB\xBF" "bom"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        expect_round_trip(m.tok, odd[i], strlen(odd[i]), 0);
    expect_round_trip(m.tok, "nul\0inside", 10, 0);
    smollm_close(&m);
}

Test(tokenizer_smollm, bytes_the_vocabulary_lacks_are_named)
{
    /* SmolLM2 has no token for 0xFF (never in UTF-8) nor for 0x04. */
    smollm m = smollm_open();
    int32_t *ids = NULL, n = 0;
    expect_fail(lkv_tokenizer_encode(m.tok, "ok \xFF", 4, 0, &ids, &n), LKV_INVALID_ARGUMENT,
                "text byte 3 is 0xff");
    expect_fail(lkv_tokenizer_encode(m.tok, "\x04", 1, 0, &ids, &n), LKV_INVALID_ARGUMENT,
                "text byte 0 is 0x04");
    cr_expect_null(ids);
    smollm_close(&m);
}

Test(tokenizer_smollm, im_start_is_one_token_only_with_parse_special)
{
    smollm m = smollm_open();
    int32_t *ids = NULL, n = 0;
    TU_OK(lkv_tokenizer_encode(m.tok, "<|im_start|>", 12, 1, &ids, &n));
    cr_expect_eq(n, 1);
    cr_expect_eq(ids[0], 1);
    free(ids);
    TU_OK(lkv_tokenizer_encode(m.tok, "<|im_start|>", 12, 0, &ids, &n));
    cr_expect_gt(n, 1, "as text it is several ordinary tokens");
    for (int i = 0; i < n; i++)
        cr_expect_gt(ids[i], 16, "id %d is a control token", ids[i]);
    free(ids);
    smollm_close(&m);
}

Test(tokenizer_smollm, control_pieces_show_only_when_asked)
{
    smollm m = smollm_open();
    char buf[32];
    size_t len;
    TU_OK(lkv_tokenizer_piece(m.tok, 2, 0, buf, sizeof buf, &len));
    cr_expect_eq(len, 0u);
    TU_OK(lkv_tokenizer_piece(m.tok, 2, 1, buf, sizeof buf, &len));
    cr_expect_eq(len, 10u);
    cr_expect(memcmp(buf, "<|im_end|>", 10) == 0);
    TU_OK(lkv_tokenizer_piece(m.tok, 905, 0, buf, sizeof buf, &len)); /* "Ġworld" */
    cr_expect(len == 6 && memcmp(buf, " world", 6) == 0, "piece '%.*s'", (int)len, buf);
    expect_fail(lkv_tokenizer_piece(m.tok, 49152, 0, buf, sizeof buf, &len),
                LKV_INVALID_ARGUMENT, "token id 49152 out of range 0..49151");
    smollm_close(&m);
}

Test(tokenizer_smollm, vocabulary_and_special_ids)
{
    smollm m = smollm_open();
    cr_expect_eq(lkv_tokenizer_vocab(m.tok), 49152);
    cr_expect_eq(lkv_tokenizer_bos(m.tok), 1);
    cr_expect_eq(lkv_tokenizer_eos(m.tok), 2);
    cr_expect(lkv_tokenizer_is_end(m.tok, 2), "<|im_end|>");
    cr_expect(lkv_tokenizer_is_end(m.tok, 0), "<|endoftext|>");
    cr_expect(!lkv_tokenizer_is_end(m.tok, 1));
    cr_expect(!lkv_tokenizer_is_end(m.tok, 198));
    smollm_close(&m);
}

/* Expected texts: SmolLM2's chat_template rendered by jinja2 3.1.6. */
Test(tokenizer_smollm, chat_renders_like_the_template)
{
    smollm m = smollm_open();
    char *text = NULL;
    TU_OK(lkv_chat_render(m.tok, NULL, "What is 2+2?", &text));
    cr_expect_str_eq(text, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
                           "trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is "
                           "2+2?<|im_end|>\n<|im_start|>assistant\n");
    int32_t *ids = NULL, n = 0;
    TU_OK(lkv_tokenizer_encode(m.tok, text, strlen(text), 1, &ids, &n));
    int n_want = (int)(sizeof ids_chat_prompt_special / sizeof ids_chat_prompt_special[0]);
    cr_expect_eq(n, n_want);
    for (int i = 0; i < n && i < n_want; i++)
        cr_expect_eq(ids[i], ids_chat_prompt_special[i], "id %d", i);
    free(ids);
    free(text);
    TU_OK(lkv_chat_render(m.tok, "Be brief.", "What is 2+2?", &text));
    cr_expect_str_eq(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is "
                           "2+2?<|im_end|>\n<|im_start|>assistant\n");
    free(text);
    smollm_close(&m);
}

Test(tokenizer_smollm, long_prompts_encode_whole)
{
    /* Some 2K tokens: every reference text, over and over. */
    smollm m = smollm_open();
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    cr_assert(text);
    for (int rep = 0; len < 8000; rep++)
        for (size_t i = 0; i < sizeof REF_CASES / sizeof REF_CASES[0]; i++) {
            size_t n = strlen(REF_CASES[i].text);
            cr_assert_lt(len + n, cap);
            memcpy(text + len, REF_CASES[i].text, n);
            len += n;
        }
    int32_t *ids = NULL, n = 0;
    TU_OK(lkv_tokenizer_encode(m.tok, text, len, 1, &ids, &n));
    cr_expect_gt(n, 2000);
    free(ids);
    expect_round_trip(m.tok, text, len, 1);
    free(text);
    smollm_close(&m);
}
