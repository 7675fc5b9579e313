/* Shared by the libFuzzer harnesses: reading choices out of the input, an
 * in-memory file for the loaders that take a path, a small GGUF writer and
 * a toy tokenizer built with it, and the cpu runtime. */
#ifndef LKV_FUZZ_UTIL_H
#define LKV_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"
#include "tokenizer.h"

/* ---- choices out of the input --------------------------------------------- */

/* The input read front to back; reads past the end give 0. */
typedef struct fz_in {
    const uint8_t *p;
    size_t n;
} fz_in;

uint8_t fz_u8(fz_in *in);
uint32_t fz_u32(fz_in *in);
/* lo..hi inclusive (hi >= lo). */
int32_t fz_range(fz_in *in, int32_t lo, int32_t hi);
/* Mostly lo..hi; one time in eight a value at or past the edges (0, -1,
 * lo - 1, hi + 1, INT32_MIN, INT32_MAX), to reach the refusals. */
int32_t fz_wild(fz_in *in, int32_t lo, int32_t hi);
/* A float from one byte: small multiples of 1/16, now and then inf, NaN or
 * a value too large for f16. */
float fz_float(fz_in *in);

/* A malloc'd NUL-terminated copy of data[0..n) (never NULL: aborts when out
 * of memory, which libFuzzer reports). */
char *fz_strndup(const uint8_t *data, size_t n);

/* Splits data at NUL bytes into at most `max` malloc'd strings; returns how
 * many were found (at least 1). The caller frees each. */
int fz_split(const uint8_t *data, size_t n, char **out, int max);

/* ---- a file in memory ------------------------------------------------------ */

/* Replaces the content of this process's in-memory file (memfd) with
 * data[0..n) and returns its path ("/proc/self/fd/N"), valid until the next
 * call. Aborts if the file cannot be made. */
const char *fz_file(const uint8_t *data, size_t n);

/* ---- GGUF writer ----------------------------------------------------------- */

typedef struct fz_buf {
    uint8_t *p;
    size_t n, cap;
} fz_buf;

void fz_buf_put(fz_buf *b, const void *data, size_t n);
void fz_buf_u32(fz_buf *b, uint32_t v);
void fz_buf_u64(fz_buf *b, uint64_t v);
void fz_buf_str(fz_buf *b, const char *s, size_t len);
void fz_buf_free(fz_buf *b);

/* A tensor-less GGUF v3 header for `n_kv` key/values; add them with the
 * fz_gguf_kv_* calls. */
void fz_gguf_begin(fz_buf *b, uint64_t n_kv);
void fz_gguf_kv_str(fz_buf *b, const char *key, const char *value, size_t len);
void fz_gguf_kv_u32(fz_buf *b, const char *key, uint32_t value);
void fz_gguf_kv_strs(fz_buf *b, const char *key, const char *const *values, size_t n);
void fz_gguf_kv_i32s(fz_buf *b, const char *key, const int32_t *values, size_t n);

/* ---- toy tokenizer ----------------------------------------------------------- */

/* The ChatML template the toy tokenizer has by default. */
extern const char fz_chatml_template[];

/* A byte-level BPE tokenizer of about 300 tokens: the three ChatML control
 * tokens, one user-defined token "<u>", every byte but 0xFF (so that one
 * byte is refused), and a dozen merges. `chat` (may be NULL: none) of
 * `chat_len` bytes is its tokenizer.chat_template. Returns the status of
 * lkv_tokenizer_from_gguf. */
lkv_status fz_toy_tokenizer(const char *chat, size_t chat_len, lkv_tokenizer **out);

/* ---- runtime ----------------------------------------------------------------- */

/* The cpu runtime on one thread, opened on first use and left open (it stays
 * reachable, so LeakSanitizer does not count it). */
lkv_runtime *fz_runtime(void);

#endif
