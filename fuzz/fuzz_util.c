/* Helpers shared by the harnesses (fuzz_util.h). Failures of the harness
 * itself (no memory for its own buffers, no memfd) abort: libFuzzer reports
 * them as crashes, which is right, since they are not the library's. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf.h"
#include "unicode.h"

/* ---- choices out of the input --------------------------------------------- */

uint8_t fz_u8(fz_in *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

uint32_t fz_u32(fz_in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | fz_u8(in);
    return v;
}

int32_t fz_range(fz_in *in, int32_t lo, int32_t hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - lo) + 1;
    uint32_t r = span <= 256 ? fz_u8(in) : fz_u32(in);
    return (int32_t)((int64_t)lo + (int64_t)(r % span));
}

int32_t fz_wild(fz_in *in, int32_t lo, int32_t hi)
{
    uint8_t sel = fz_u8(in);
    if (sel < 224)
        return fz_range(in, lo, hi);
    static const int64_t edge[] = {0, -1, INT32_MIN, INT32_MAX};
    switch (sel % 6) {
    case 0: return lo > INT32_MIN ? lo - 1 : lo;
    case 1: return hi < INT32_MAX ? hi + 1 : hi;
    default: return (int32_t)edge[sel % 4];
    }
}

float fz_float(fz_in *in)
{
    uint8_t b = fz_u8(in);
    switch (b) {
    case 0x7f: return INFINITY;
    case 0x80: return NAN;
    case 0x7e: return 1e30f;
    case 0x81: return -70000.0f; /* beyond f16 */
    default: return (float)(int8_t)b / 16.0f;
    }
}

static void *must(void *p)
{
    if (!p) {
        fprintf(stderr, "fuzz harness: out of memory\n");
        abort();
    }
    return p;
}

char *fz_strndup(const uint8_t *data, size_t n)
{
    char *s = must(malloc(n + 1));
    if (n)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

int fz_split(const uint8_t *data, size_t n, char **out, int max)
{
    int k = 0;
    size_t from = 0;
    while (k < max - 1 && from < n) {
        const uint8_t *nul = memchr(data + from, 0, n - from);
        if (!nul)
            break;
        size_t at = (size_t)(nul - data);
        out[k++] = fz_strndup(data + from, at - from);
        from = at + 1;
    }
    out[k++] = fz_strndup(from < n ? data + from : NULL, from < n ? n - from : 0);
    return k;
}

/* ---- a file in memory ------------------------------------------------------ */

static int file_fd = -1;
static char file_path[64];

const char *fz_file(const uint8_t *data, size_t n)
{
    if (file_fd < 0) {
        file_fd = memfd_create("lkv-fuzz", MFD_CLOEXEC);
        if (file_fd < 0) {
            perror("fuzz harness: memfd_create");
            abort();
        }
        snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
    }
    if (ftruncate(file_fd, 0) != 0) {
        perror("fuzz harness: ftruncate");
        abort();
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(file_fd, data + done, n - done, (off_t)done);
        if (w <= 0) {
            perror("fuzz harness: pwrite");
            abort();
        }
        done += (size_t)w;
    }
    return file_path;
}

/* ---- GGUF writer ----------------------------------------------------------- */

void fz_buf_put(fz_buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = must(realloc(b->p, cap));
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

void fz_buf_u32(fz_buf *b, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    fz_buf_put(b, le, 4);
}

void fz_buf_u64(fz_buf *b, uint64_t v)
{
    fz_buf_u32(b, (uint32_t)v);
    fz_buf_u32(b, (uint32_t)(v >> 32));
}

void fz_buf_str(fz_buf *b, const char *s, size_t len)
{
    fz_buf_u64(b, len);
    fz_buf_put(b, s, len);
}

void fz_buf_free(fz_buf *b)
{
    free(b->p);
    *b = (fz_buf){0};
}

void fz_gguf_begin(fz_buf *b, uint64_t n_kv)
{
    fz_buf_put(b, "GGUF", 4);
    fz_buf_u32(b, 3);
    fz_buf_u64(b, 0); /* tensors */
    fz_buf_u64(b, n_kv);
}

void fz_gguf_kv_str(fz_buf *b, const char *key, const char *value, size_t len)
{
    fz_buf_str(b, key, strlen(key));
    fz_buf_u32(b, LKV_GGUF_STRING);
    fz_buf_str(b, value, len);
}

void fz_gguf_kv_u32(fz_buf *b, const char *key, uint32_t value)
{
    fz_buf_str(b, key, strlen(key));
    fz_buf_u32(b, LKV_GGUF_U32);
    fz_buf_u32(b, value);
}

void fz_gguf_kv_strs(fz_buf *b, const char *key, const char *const *values, size_t n)
{
    fz_buf_str(b, key, strlen(key));
    fz_buf_u32(b, LKV_GGUF_ARRAY);
    fz_buf_u32(b, LKV_GGUF_STRING);
    fz_buf_u64(b, n);
    for (size_t i = 0; i < n; i++)
        fz_buf_str(b, values[i], strlen(values[i]));
}

void fz_gguf_kv_i32s(fz_buf *b, const char *key, const int32_t *values, size_t n)
{
    fz_buf_str(b, key, strlen(key));
    fz_buf_u32(b, LKV_GGUF_ARRAY);
    fz_buf_u32(b, LKV_GGUF_I32);
    fz_buf_u64(b, n);
    for (size_t i = 0; i < n; i++)
        fz_buf_u32(b, (uint32_t)values[i]);
}

/* ---- toy tokenizer ----------------------------------------------------------- */

const char fz_chatml_template[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a small fuzzing assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* Merges in byte-level text: "\xC4\xA0" is the space's character (U+0120),
 * "\xC4\x8A" the newline's (U+010A). Each result is also a token. */
static const char *const TOY_MERGES[][2] = {
    {"\xC4\xA0", "t"}, {"h", "e"},  {"\xC4\xA0t", "he"}, {"i", "n"}, {"e", "r"},
    {"\xC4\xA0", "a"}, {"a", "n"},  {"r", "e"},          {"o", "n"}, {"1", "2"},
    {"0", "0"},        {"\xC4\x8A", "\xC4\x8A"}};
#define TOY_N_MERGES (sizeof TOY_MERGES / sizeof TOY_MERGES[0])
static const char *const TOY_SPECIALS[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<u>"};
static const int32_t TOY_SPECIAL_TYPES[] = {3, 3, 3, 4};
#define TOY_N_SPECIALS 4
#define TOY_N_BYTES 255 /* 0x00..0xFE */
#define TOY_N (TOY_N_SPECIALS + TOY_N_BYTES + TOY_N_MERGES)

lkv_status fz_toy_tokenizer(const char *chat, size_t chat_len, lkv_tokenizer **out)
{
    char bytes[TOY_N_BYTES][4];
    char merged[TOY_N_MERGES][16];
    char merge_text[TOY_N_MERGES][24];
    const char *tokens[TOY_N], *merges[TOY_N_MERGES];
    int32_t types[TOY_N];
    size_t n = 0;
    for (int i = 0; i < TOY_N_SPECIALS; i++) {
        types[n] = TOY_SPECIAL_TYPES[i];
        tokens[n++] = TOY_SPECIALS[i];
    }
    for (int b = 0; b < TOY_N_BYTES; b++) {
        size_t len = lkv_utf8_encode(lkv_byte_to_unicode((uint8_t)b), (unsigned char *)bytes[b]);
        bytes[b][len] = '\0';
        types[n] = 1;
        tokens[n++] = bytes[b];
    }
    for (size_t i = 0; i < TOY_N_MERGES; i++) {
        snprintf(merged[i], sizeof merged[i], "%s%s", TOY_MERGES[i][0], TOY_MERGES[i][1]);
        snprintf(merge_text[i], sizeof merge_text[i], "%s %s", TOY_MERGES[i][0], TOY_MERGES[i][1]);
        merges[i] = merge_text[i];
        types[n] = 1;
        tokens[n++] = merged[i];
    }
    fz_buf b = {0};
    fz_gguf_begin(&b, chat ? 7 : 6);
    fz_gguf_kv_str(&b, "tokenizer.ggml.model", "gpt2", 4);
    fz_gguf_kv_str(&b, "tokenizer.ggml.pre", "smollm", 6);
    fz_gguf_kv_strs(&b, "tokenizer.ggml.tokens", tokens, n);
    fz_gguf_kv_i32s(&b, "tokenizer.ggml.token_type", types, n);
    fz_gguf_kv_strs(&b, "tokenizer.ggml.merges", merges, TOY_N_MERGES);
    fz_gguf_kv_u32(&b, "tokenizer.ggml.eos_token_id", 2);
    if (chat)
        fz_gguf_kv_str(&b, "tokenizer.chat_template", chat, chat_len);
    lkv_gguf *g = NULL;
    lkv_status st = lkv_gguf_open(fz_file(b.p, b.n), &g);
    fz_buf_free(&b);
    if (st != LKV_OK) {
        fprintf(stderr, "fuzz harness: the toy GGUF does not open: %s\n", lkv_last_error());
        abort();
    }
    st = lkv_tokenizer_from_gguf(g, out);
    lkv_gguf_close(g); /* the tokenizer keeps no pointer into the file */
    return st;
}

/* ---- runtime ----------------------------------------------------------------- */

static lkv_runtime *runtime;

lkv_runtime *fz_runtime(void)
{
    if (!runtime) {
        setenv("LAZYKV_CPU_THREADS", "1", 1);
        if (lkv_runtime_open("cpu", &runtime) != LKV_OK) {
            fprintf(stderr, "fuzz harness: no cpu runtime: %s\n", lkv_last_error());
            abort();
        }
    }
    return runtime;
}
