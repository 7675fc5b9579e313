/* model/gguf.c, the GGUF reader: files written here by a small writer of
 * our own read back value for value (every scalar kind, strings, arrays,
 * tensors of several types under a custom alignment); every truncation of a
 * valid file and each targeted corruption fails with INVALID_ARGUMENT, a
 * message naming the fault and where, and *out untouched; and the real
 * SmolLM2 file (LAZYKV_TEST_MODEL) has the shape the gguf python package
 * reports for it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dequant.h"
#include "gguf.h"
#include "test_util.h"

/* ---- scratch folder ------------------------------------------------------ */

static char scratch[4096];
static char file_path[4200];

static void make_scratch(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/lazykv-gguf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(scratch), "mkdtemp failed in %s", scratch);
    snprintf(file_path, sizeof file_path, "%s/t.gguf", scratch);
}

/* Only the file this suite writes, so a mistake cannot delete more. */
static void remove_scratch(void)
{
    unlink(file_path);
    rmdir(scratch);
}

TestSuite(gguf, .init = make_scratch, .fini = remove_scratch);

/* ---- a small GGUF writer -------------------------------------------------- */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        cr_assert_not_null(b->p);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_le(wbuf *b, uint64_t v, int bytes)
{
    uint8_t t[8];
    for (int i = 0; i < bytes; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, (size_t)bytes);
}

static void patch_le(wbuf *b, size_t at, uint64_t v, int bytes)
{
    cr_assert_leq(at + (size_t)bytes, b->len);
    for (int i = 0; i < bytes; i++)
        b->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(wbuf *b, uint32_t v) { put_le(b, v, 4); }
static void put_u64(wbuf *b, uint64_t v) { put_le(b, v, 8); }

static void put_str(wbuf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static uint64_t f64_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t u64_of_i64(int64_t i)
{
    uint64_t u;
    memcpy(&u, &i, sizeof u);
    return u;
}

#define MAX_KV 32
#define MAX_TENSORS 8
#define SAMPLE_ALIGNMENT 64

typedef struct sample_tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t bytes; /* worked out by hand from the type's block */
} sample_tensor;

/* f32 3x2: 6 x 4 bytes; q8_0 64: 2 blocks of 2 + 32; f16 5x1x2: 10 x 2;
 * q4_K 256x1x1x2: 2 blocks of 2 + 2 + 12 + 128; q3_K 256: one block of
 * 32 + 64 + 12 + 2 (readable by nobody, sized all the same). */
static const sample_tensor sample_tensors[] = {
    {"w.0", LKV_GGML_F32, 2, {3, 2, 1, 1}, 24},
    {"w.1", LKV_GGML_Q8_0, 1, {64, 1, 1, 1}, 68},
    {"w.2", LKV_GGML_F16, 3, {5, 1, 2, 1}, 20},
    {"w.3", LKV_GGML_Q4_K, 4, {256, 1, 1, 2}, 288},
    {"w.4", LKV_GGML_Q3_K, 1, {256, 1, 1, 1}, 110},
};
#define N_SAMPLE_TENSORS (int)(sizeof sample_tensors / sizeof sample_tensors[0])

/* Where the writer put each field, for the corruption tests. */
typedef struct layout {
    size_t version, n_tensors, n_kv, alignment_value;
    int kvs;
    const char *key_name[MAX_KV];
    size_t key[MAX_KV], kind[MAX_KV];
    size_t name[MAX_TENSORS], n_dims[MAX_TENSORS], ne0[MAX_TENSORS], type[MAX_TENSORS],
        offset[MAX_TENSORS];
    uint64_t rel_offset[MAX_TENSORS];
    size_t data_start;
} layout;

static void begin_kv(wbuf *b, layout *L, const char *key, uint32_t kind)
{
    cr_assert_lt(L->kvs, MAX_KV);
    L->key_name[L->kvs] = key;
    L->key[L->kvs] = b->len;
    put_str(b, key);
    L->kind[L->kvs] = b->len;
    put_u32(b, kind);
    L->kvs++;
}

static size_t kv_pos(const layout *L, const char *key)
{
    for (int i = 0; i < L->kvs; i++)
        if (strcmp(L->key_name[i], key) == 0)
            return L->kind[i];
    cr_assert_fail("no key %s in the sample", key);
    return 0;
}

static void begin_array(wbuf *b, layout *L, const char *key, uint32_t elem, uint64_t count)
{
    begin_kv(b, L, key, LKV_GGUF_ARRAY);
    put_u32(b, elem);
    put_u64(b, count);
}

static void put_sample_scalars(wbuf *b, layout *L)
{
    begin_kv(b, L, "general.alignment", LKV_GGUF_U32);
    L->alignment_value = b->len;
    put_u32(b, SAMPLE_ALIGNMENT);
    begin_kv(b, L, "t.u8", LKV_GGUF_U8);
    put_le(b, 200, 1);
    begin_kv(b, L, "t.i8", LKV_GGUF_I8);
    put_le(b, (uint8_t)(int8_t)-100, 1);
    begin_kv(b, L, "t.u16", LKV_GGUF_U16);
    put_le(b, 60000, 2);
    begin_kv(b, L, "t.i16", LKV_GGUF_I16);
    put_le(b, (uint16_t)(int16_t)-30000, 2);
    begin_kv(b, L, "t.u32", LKV_GGUF_U32);
    put_u32(b, 4000000000u);
    begin_kv(b, L, "t.i32", LKV_GGUF_I32);
    put_u32(b, (uint32_t)u64_of_i64(-2000000000));
    begin_kv(b, L, "t.f32", LKV_GGUF_F32);
    put_u32(b, tu_bits_of_float(1.5f));
    begin_kv(b, L, "t.bool", LKV_GGUF_BOOL);
    put_le(b, 1, 1);
    begin_kv(b, L, "t.str", LKV_GGUF_STRING);
    put_str(b, "h\xc3\xa9llo");
    begin_kv(b, L, "t.u64", LKV_GGUF_U64);
    put_u64(b, 0x8000000000000005ull);
    begin_kv(b, L, "t.i64", LKV_GGUF_I64);
    put_u64(b, u64_of_i64(-(INT64_C(1) << 62) - 3));
    begin_kv(b, L, "t.f64", LKV_GGUF_F64);
    put_u64(b, f64_bits(0.1));
    begin_kv(b, L, "t.empty", LKV_GGUF_STRING);
    put_str(b, "");
}

static void put_sample_arrays(wbuf *b, layout *L)
{
    begin_array(b, L, "a.u8", LKV_GGUF_U8, 3);
    for (int i = 1; i <= 3; i++)
        put_le(b, (uint64_t)i, 1);
    begin_array(b, L, "a.i32", LKV_GGUF_I32, 3);
    put_u32(b, 0xffffffffu);
    put_u32(b, 7);
    put_u32(b, 0x7fffffffu);
    begin_array(b, L, "a.f32", LKV_GGUF_F32, 2);
    put_u32(b, tu_bits_of_float(0.5f));
    put_u32(b, tu_bits_of_float(-2.0f));
    begin_array(b, L, "a.str", LKV_GGUF_STRING, 3);
    put_str(b, "a");
    put_str(b, "");
    put_str(b, "ccc");
    begin_array(b, L, "a.none", LKV_GGUF_U32, 0);
    begin_array(b, L, "a.bool", LKV_GGUF_BOOL, 2);
    put_le(b, 1, 1);
    put_le(b, 0, 1);
    begin_array(b, L, "a.u64", LKV_GGUF_U64, 1);
    put_u64(b, UINT64_MAX);
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Byte k of tensor i's data. */
static uint8_t data_byte(int i, uint64_t k) { return (uint8_t)(i * 31 + (int)(k * 7) + 1); }

static void put_tensor_infos(wbuf *b, layout *L, const sample_tensor *ts, int n, uint64_t align)
{
    uint64_t rel = 0;
    for (int i = 0; i < n; i++) {
        L->name[i] = b->len;
        put_str(b, ts[i].name);
        L->n_dims[i] = b->len;
        put_u32(b, ts[i].n_dims);
        L->ne0[i] = b->len;
        for (uint32_t d = 0; d < ts[i].n_dims; d++)
            put_u64(b, (uint64_t)ts[i].ne[d]);
        L->type[i] = b->len;
        put_u32(b, ts[i].type);
        L->offset[i] = b->len;
        rel = align_up(rel, align);
        L->rel_offset[i] = rel;
        put_u64(b, rel);
        rel += ts[i].bytes;
    }
}

/* The data section, padded between tensors, and not after the last one, so
 * that every shorter prefix of the file is truncated. */
static void put_tensor_data(wbuf *b, layout *L, const sample_tensor *ts, int n, uint64_t align)
{
    static const uint8_t zero[256];
    if (n == 0)
        return;
    L->data_start = (size_t)align_up(b->len, align);
    put(b, zero, L->data_start - b->len);
    for (int i = 0; i < n; i++) {
        put(b, zero, L->data_start + L->rel_offset[i] - b->len);
        for (uint64_t k = 0; k < ts[i].bytes; k++) {
            uint8_t v = data_byte(i, k);
            put(b, &v, 1);
        }
    }
}

static void build(wbuf *b, layout *L, const sample_tensor *ts, int n, int with_kvs)
{
    memset(b, 0, sizeof *b);
    memset(L, 0, sizeof *L);
    cr_assert_leq(n, MAX_TENSORS);
    put(b, "GGUF", 4);
    L->version = b->len;
    put_u32(b, 3);
    L->n_tensors = b->len;
    put_u64(b, (uint64_t)n);
    L->n_kv = b->len;
    put_u64(b, 0);
    if (with_kvs) {
        put_sample_scalars(b, L);
        put_sample_arrays(b, L);
    }
    patch_le(b, L->n_kv, (uint64_t)L->kvs, 8);
    uint64_t align = with_kvs ? SAMPLE_ALIGNMENT : 32;
    put_tensor_infos(b, L, ts, n, align);
    put_tensor_data(b, L, ts, n, align);
}

static void build_sample(wbuf *b, layout *L) { build(b, L, sample_tensors, N_SAMPLE_TENSORS, 1); }

static void write_bytes(const void *p, size_t n)
{
    FILE *f = fopen(file_path, "wb");
    cr_assert_not_null(f, "cannot write %s", file_path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static lkv_gguf *open_ok(const wbuf *b)
{
    write_bytes(b->p, b->len);
    lkv_gguf *g = NULL;
    TU_OK(lkv_gguf_open(file_path, &g));
    return g;
}

static lkv_gguf *open_sample(void)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    lkv_gguf *g = open_ok(&b);
    free(b.p);
    return g;
}

/* A failed open returns INVALID_ARGUMENT, leaves *out alone, and says
 * `needle` (and `needle2` when given). */
static char sentinel_byte;
#define SENTINEL ((lkv_gguf *)(void *)&sentinel_byte)

static void expect_open_fails(const char *needle, const char *needle2)
{
    lkv_gguf *g = SENTINEL;
    lkv_status st = lkv_gguf_open(file_path, &g);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "got %s (%s), want INVALID_ARGUMENT with '%s'",
                 lkv_status_name(st), lkv_last_error(), needle);
    cr_assert_eq(g, SENTINEL, "a failed open wrote *out");
    const char *msg = lkv_last_error();
    cr_assert(strstr(msg, needle), "message '%s' does not say '%s'", msg, needle);
    if (needle2)
        cr_assert(strstr(msg, needle2), "message '%s' does not say '%s'", msg, needle2);
}

static void expect_bytes_fail(const wbuf *b, const char *needle, const char *needle2)
{
    write_bytes(b->p, b->len);
    expect_open_fails(needle, needle2);
}

/* The sample with `bytes` bytes at `at` set to `value`. */
static void expect_patched_fails(size_t at, uint64_t value, int bytes, const char *needle,
                                 const char *needle2)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    patch_le(&b, at, value, bytes);
    expect_bytes_fail(&b, needle, needle2);
    free(b.p);
}

static layout sample_layout(void)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    free(b.p);
    return L;
}

static int str_is(lkv_gguf_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

/* ---- reading back --------------------------------------------------------- */

static const lkv_gguf_value *must_find(const lkv_gguf *g, const char *key, lkv_gguf_kind kind)
{
    const lkv_gguf_value *v = lkv_gguf_find(g, key);
    cr_assert_not_null(v, "key %s not found", key);
    cr_assert_eq(v->kind, kind, "key %s has kind %d, want %d", key, v->kind, kind);
    return v;
}

Test(gguf, every_scalar_kind_reads_back)
{
    lkv_gguf *g = open_sample();
    cr_assert_eq(lkv_gguf_version(g), 3);
    cr_assert_eq(must_find(g, "general.alignment", LKV_GGUF_U32)->as.u, SAMPLE_ALIGNMENT);
    cr_assert_eq(must_find(g, "t.u8", LKV_GGUF_U8)->as.u, 200);
    cr_assert_eq(must_find(g, "t.i8", LKV_GGUF_I8)->as.i, -100);
    cr_assert_eq(must_find(g, "t.u16", LKV_GGUF_U16)->as.u, 60000);
    cr_assert_eq(must_find(g, "t.i16", LKV_GGUF_I16)->as.i, -30000);
    cr_assert_eq(must_find(g, "t.u32", LKV_GGUF_U32)->as.u, 4000000000u);
    cr_assert_eq(must_find(g, "t.i32", LKV_GGUF_I32)->as.i, -2000000000);
    cr_assert_eq(must_find(g, "t.f32", LKV_GGUF_F32)->as.f, 1.5);
    cr_assert_eq(must_find(g, "t.bool", LKV_GGUF_BOOL)->as.u, 1);
    cr_assert(str_is(must_find(g, "t.str", LKV_GGUF_STRING)->as.s, "h\xc3\xa9llo"));
    cr_assert_eq(must_find(g, "t.u64", LKV_GGUF_U64)->as.u, 0x8000000000000005ull);
    cr_assert_eq(must_find(g, "t.i64", LKV_GGUF_I64)->as.i, -(INT64_C(1) << 62) - 3);
    cr_assert_eq(must_find(g, "t.f64", LKV_GGUF_F64)->as.f, 0.1);
    cr_assert_eq(must_find(g, "t.empty", LKV_GGUF_STRING)->as.s.len, 0);
    cr_assert_null(lkv_gguf_find(g, "t.missing"));
    cr_assert_null(lkv_gguf_find(g, "t.u8x"));
    cr_assert_null(lkv_gguf_find(g, "t.u"));
    lkv_gguf_close(g);
}

static uint32_t le32_at(const void *p, uint64_t i)
{
    const uint8_t *b = (const uint8_t *)p + 4 * i;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

Test(gguf, arrays_of_numbers_and_strings_read_back)
{
    lkv_gguf *g = open_sample();
    const lkv_gguf_value *v = must_find(g, "a.u8", LKV_GGUF_ARRAY);
    cr_assert_eq(v->elem_kind, LKV_GGUF_U8);
    cr_assert_eq(v->count, 3);
    cr_assert_eq(memcmp(v->data, "\x01\x02\x03", 3), 0);
    v = must_find(g, "a.i32", LKV_GGUF_ARRAY);
    cr_assert_eq(v->elem_kind, LKV_GGUF_I32);
    cr_assert_eq(v->count, 3);
    cr_assert_eq((int32_t)le32_at(v->data, 0), -1);
    cr_assert_eq((int32_t)le32_at(v->data, 1), 7);
    cr_assert_eq((int32_t)le32_at(v->data, 2), INT32_MAX);
    v = must_find(g, "a.f32", LKV_GGUF_ARRAY);
    cr_assert_eq(v->count, 2);
    cr_assert_eq(le32_at(v->data, 0), tu_bits_of_float(0.5f));
    cr_assert_eq(le32_at(v->data, 1), tu_bits_of_float(-2.0f));
    v = must_find(g, "a.str", LKV_GGUF_ARRAY);
    cr_assert_eq(v->elem_kind, LKV_GGUF_STRING);
    cr_assert_eq(v->count, 3);
    cr_assert(str_is(v->strings[0], "a"));
    cr_assert(str_is(v->strings[1], ""));
    cr_assert(str_is(v->strings[2], "ccc"));
    v = must_find(g, "a.none", LKV_GGUF_ARRAY);
    cr_assert_eq(v->elem_kind, LKV_GGUF_U32);
    cr_assert_eq(v->count, 0);
    v = must_find(g, "a.bool", LKV_GGUF_ARRAY);
    cr_assert_eq(v->elem_kind, LKV_GGUF_BOOL);
    cr_assert_eq(memcmp(v->data, "\x01\x00", 2), 0);
    v = must_find(g, "a.u64", LKV_GGUF_ARRAY);
    cr_assert_eq(memcmp(v->data, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), 0);
    lkv_gguf_close(g);
}

Test(gguf, key_values_list_in_file_order)
{
    layout L = sample_layout();
    lkv_gguf *g = open_sample();
    cr_assert_eq(lkv_gguf_kv_count(g), L.kvs);
    for (int i = 0; i < L.kvs; i++) {
        lkv_gguf_str key;
        const lkv_gguf_value *v = lkv_gguf_kv_at(g, i, &key);
        cr_assert_not_null(v);
        cr_assert(str_is(key, L.key_name[i]), "kv %d is '%.*s', want '%s'", i, (int)key.len,
                  key.ptr, L.key_name[i]);
        cr_assert_eq(v, lkv_gguf_find(g, L.key_name[i]));
    }
    cr_assert_null(lkv_gguf_kv_at(g, L.kvs, NULL));
    cr_assert_null(lkv_gguf_kv_at(g, -1, NULL));
    lkv_gguf_close(g);
}

Test(gguf, tensors_read_back_with_shape_type_and_aligned_data)
{
    layout L = sample_layout();
    lkv_gguf *g = open_sample();
    cr_assert_eq(lkv_gguf_tensor_count(g), N_SAMPLE_TENSORS);
    const uint8_t *prev_end = NULL;
    for (int i = 0; i < N_SAMPLE_TENSORS; i++) {
        const sample_tensor *w = &sample_tensors[i];
        const lkv_gguf_tensor *t = lkv_gguf_tensor_at(g, i);
        cr_assert_not_null(t);
        cr_assert_str_eq(t->name, w->name);
        cr_assert_eq(lkv_gguf_find_tensor(g, w->name), t);
        cr_assert_eq(t->n_dims, (int32_t)w->n_dims);
        for (int d = 0; d < 4; d++)
            cr_assert_eq(t->ne[d], w->ne[d], "%s ne[%d] = %lld", w->name, d, (long long)t->ne[d]);
        cr_assert_eq((uint32_t)t->type, w->type);
        cr_assert_eq(t->bytes, w->bytes, "%s: %llu bytes, want %llu", w->name,
                     (unsigned long long)t->bytes, (unsigned long long)w->bytes);
        cr_assert_eq(t->offset, L.rel_offset[i]);
        cr_assert_eq(t->offset % SAMPLE_ALIGNMENT, 0);
        cr_assert_eq(L.data_start % SAMPLE_ALIGNMENT, 0);
        const uint8_t *p = t->data;
        if (prev_end)
            cr_assert_eq((size_t)(p - prev_end), (size_t)(t->offset - L.rel_offset[i - 1]) -
                                                     (size_t)sample_tensors[i - 1].bytes);
        for (uint64_t k = 0; k < t->bytes; k++)
            cr_assert_eq(p[k], data_byte(i, k), "%s byte %llu", w->name, (unsigned long long)k);
        prev_end = p + t->bytes;
    }
    cr_assert_null(lkv_gguf_tensor_at(g, N_SAMPLE_TENSORS));
    cr_assert_null(lkv_gguf_tensor_at(g, -1));
    cr_assert_null(lkv_gguf_find_tensor(g, "w.9"));
    cr_assert_null(lkv_gguf_find_tensor(g, "w."));
    lkv_gguf_close(g);
}

Test(gguf, tensor_data_points_into_the_file_at_the_aligned_data_section)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    lkv_gguf *g = open_ok(&b);
    cr_assert_eq(lkv_gguf_file_bytes(g), b.len);
    /* Tensor 0 sits at offset 0 of the data section, which starts at the
     * next multiple of 64 after the infos: its bytes and the file's agree
     * from there to the end. */
    const lkv_gguf_tensor *t = lkv_gguf_tensor_at(g, 0);
    cr_assert_eq(L.data_start % SAMPLE_ALIGNMENT, 0);
    cr_assert_eq(memcmp(t->data, b.p + L.data_start, b.len - L.data_start), 0);
    lkv_gguf_close(g);
    free(b.p);
}

Test(gguf, typed_lookups_convert_widths_and_name_the_key_on_a_mismatch)
{
    lkv_gguf *g = open_sample();
    int64_t i;
    TU_OK(lkv_gguf_get_int(g, "t.i8", -128, 127, &i));
    cr_assert_eq(i, -100);
    TU_OK(lkv_gguf_get_int(g, "t.u32", 0, INT64_MAX, &i));
    cr_assert_eq(i, 4000000000);
    TU_OK(lkv_gguf_get_int(g, "t.i64", INT64_MIN, 0, &i));
    cr_assert_eq(i, -(INT64_C(1) << 62) - 3);
    i = 42;
    cr_assert_eq(lkv_gguf_get_int(g, "t.u32", 0, INT32_MAX, &i), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.u32' = 4000000000 is outside 0..2147483647"), "%s",
              lkv_last_error());
    cr_assert_eq(lkv_gguf_get_int(g, "t.u64", 0, INT64_MAX, &i), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "t.u64"), "%s", lkv_last_error());
    cr_assert_eq(lkv_gguf_get_int(g, "t.i16", 0, 10, &i), LKV_INVALID_ARGUMENT);
    cr_assert_eq(lkv_gguf_get_int(g, "t.bool", 0, 1, &i), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.bool' is a bool, not an integer"), "%s",
              lkv_last_error());
    cr_assert_eq(lkv_gguf_get_int(g, "t.nope", 0, 1, &i), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.nope' is missing"), "%s", lkv_last_error());
    cr_assert_eq(i, 42, "a failed lookup wrote its result");

    double r;
    TU_OK(lkv_gguf_get_real(g, "t.f32", &r));
    cr_assert_eq(r, 1.5);
    TU_OK(lkv_gguf_get_real(g, "t.f64", &r));
    cr_assert_eq(r, 0.1);
    TU_OK(lkv_gguf_get_real(g, "t.i32", &r));
    cr_assert_eq(r, -2000000000.0);
    cr_assert_eq(lkv_gguf_get_real(g, "t.str", &r), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.str' is a string"), "%s", lkv_last_error());

    lkv_gguf_str s;
    TU_OK(lkv_gguf_get_str(g, "t.str", &s));
    cr_assert(str_is(s, "h\xc3\xa9llo"));
    cr_assert_eq(lkv_gguf_get_str(g, "t.u8", &s), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.u8' is a u8, not a string"), "%s", lkv_last_error());

    const lkv_gguf_value *a;
    TU_OK(lkv_gguf_get_array(g, "a.str", LKV_GGUF_STRING, &a));
    cr_assert_eq(a->count, 3);
    TU_OK(lkv_gguf_get_array(g, "a.i32", LKV_GGUF_ARRAY, &a));
    cr_assert_eq(a->elem_kind, LKV_GGUF_I32);
    cr_assert_eq(lkv_gguf_get_array(g, "a.str", LKV_GGUF_U8, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'a.str' is an array of string, not of u8"), "%s",
              lkv_last_error());
    cr_assert_eq(lkv_gguf_get_array(g, "t.u8", LKV_GGUF_U8, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'t.u8' is a u8, not an array"), "%s", lkv_last_error());
    lkv_gguf_close(g);
}

Test(gguf, version_2_is_read_like_version_3)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    patch_le(&b, L.version, 2, 4);
    lkv_gguf *g = open_ok(&b);
    cr_assert_eq(lkv_gguf_version(g), 2);
    cr_assert_eq(lkv_gguf_tensor_count(g), N_SAMPLE_TENSORS);
    lkv_gguf_close(g);
    free(b.p);
}

Test(gguf, header_without_key_values_or_tensors_opens)
{
    wbuf b;
    layout L;
    build(&b, &L, NULL, 0, 0);
    cr_assert_eq(b.len, 24);
    lkv_gguf *g = open_ok(&b);
    cr_assert_eq(lkv_gguf_tensor_count(g), 0);
    cr_assert_eq(lkv_gguf_kv_count(g), 0);
    cr_assert_null(lkv_gguf_find(g, "general.alignment"));
    cr_assert_null(lkv_gguf_find_tensor(g, "w.0"));
    lkv_gguf_close(g);
    free(b.p);
}

Test(gguf, default_alignment_is_32)
{
    static const sample_tensor ts[] = {
        {"a", LKV_GGML_F32, 1, {3, 1, 1, 1}, 12},
        {"b", LKV_GGML_F32, 1, {1, 1, 1, 1}, 4},
    };
    wbuf b;
    layout L;
    build(&b, &L, ts, 2, 0);
    lkv_gguf *g = open_ok(&b);
    cr_assert_eq(lkv_gguf_tensor_at(g, 1)->offset, 32);
    cr_assert_eq(L.data_start % 32, 0);
    lkv_gguf_close(g);
    free(b.p);
    /* The same offsets under a misaligned second tensor. */
    build(&b, &L, ts, 2, 0);
    patch_le(&b, L.offset[1], 16, 8);
    expect_bytes_fail(&b, "offset 16 is not a multiple of the alignment 32", "tensor 1 'b'");
    free(b.p);
}

/* Tensors that share bytes would let a small file make the loader allocate
 * and dequantize many times its size (one block read as every layer's
 * weights): refused, naming both. Adjacent tensors and an empty one at the
 * same offset are fine. */
Test(gguf, tensors_sharing_bytes_are_refused)
{
    static const sample_tensor ts[] = {
        {"a", LKV_GGML_F32, 1, {8, 1, 1, 1}, 32},
        {"b", LKV_GGML_F32, 1, {8, 1, 1, 1}, 32},
        {"c", LKV_GGML_F32, 1, {8, 1, 1, 1}, 32},
    };
    wbuf b;
    layout L;
    build(&b, &L, ts, 3, 0);
    lkv_gguf *g = open_ok(&b);
    cr_assert_eq(lkv_gguf_tensor_at(g, 2)->offset, 64);
    lkv_gguf_close(g);
    free(b.p);
    build(&b, &L, ts, 3, 0);
    patch_le(&b, L.offset[2], 0, 8); /* c onto a */
    expect_bytes_fail(&b, "tensor 2 'c': data at offset 0 overlaps tensor 0 'a'", "32 bytes");
    free(b.p);
}

Test(gguf, zero_sized_dimension_gives_an_empty_tensor)
{
    static const sample_tensor ts[] = {{"empty", LKV_GGML_Q4_0, 2, {32, 0, 1, 1}, 0}};
    wbuf b;
    layout L;
    build(&b, &L, ts, 1, 0);
    lkv_gguf *g = open_ok(&b);
    const lkv_gguf_tensor *t = lkv_gguf_tensor_at(g, 0);
    cr_assert_eq(t->ne[1], 0);
    cr_assert_eq(t->bytes, 0);
    lkv_gguf_close(g);
    free(b.p);
}

Test(gguf, longest_tensor_name_fits_and_one_more_byte_is_refused)
{
    char name95[96], name96[97];
    memset(name95, 'n', 95);
    name95[95] = '\0';
    memset(name96, 'n', 96);
    name96[96] = '\0';
    sample_tensor ts[] = {{name95, LKV_GGML_F32, 1, {1, 1, 1, 1}, 4}};
    wbuf b;
    layout L;
    build(&b, &L, ts, 1, 0);
    lkv_gguf *g = open_ok(&b);
    cr_assert_str_eq(lkv_gguf_tensor_at(g, 0)->name, name95);
    cr_assert_eq(lkv_gguf_find_tensor(g, name95), lkv_gguf_tensor_at(g, 0));
    cr_assert_null(lkv_gguf_find_tensor(g, name96));
    lkv_gguf_close(g);
    free(b.p);
    ts[0].name = name96;
    build(&b, &L, ts, 1, 0);
    expect_bytes_fail(&b, "is 96 bytes: at most 95 are supported", "tensor 0");
    free(b.p);
}

/* ---- truncation ----------------------------------------------------------- */

Test(gguf, every_truncation_of_a_valid_file_fails_with_a_message)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    for (size_t len = 0; len < b.len; len++) {
        write_bytes(b.p, len);
        lkv_gguf *g = SENTINEL;
        lkv_status st = lkv_gguf_open(file_path, &g);
        cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%zu of %zu bytes: %s (%s)", len, b.len,
                     lkv_status_name(st), lkv_last_error());
        cr_assert_eq(g, SENTINEL, "%zu bytes: a failed open wrote *out", len);
        cr_assert_gt(strlen(lkv_last_error()), strlen(file_path) + 10, "%zu bytes: '%s'", len,
                     lkv_last_error());
    }
    lkv_gguf *g = open_ok(&b);
    lkv_gguf_close(g);
    free(b.p);
}

Test(gguf, truncation_inside_the_header_names_the_field_and_the_sizes)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    write_bytes(b.p, 10);
    expect_open_fails("tensor count at byte 8 needs 8 bytes but only 2 are left",
                      "(10 bytes)");
    write_bytes(b.p, 2);
    expect_open_fails("magic at byte 0 needs 4 bytes", NULL);
    write_bytes(b.p, 0);
    expect_open_fails("empty", NULL);
    /* Cut inside the last tensor's data. */
    write_bytes(b.p, b.len - 1);
    expect_open_fails("tensor 4 'w.4': data ends at byte", "past the end of the file");
    free(b.p);
}

/* ---- targeted corruptions ------------------------------------------------- */

Test(gguf, bad_magic_is_refused)
{
    expect_patched_fails(0, 'L', 1, "bad magic 4c 47 55 46", "not a GGUF file");
}

Test(gguf, version_1_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.version, 1, 4, "GGUF version 1", "not supported");
}

Test(gguf, version_99_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.version, 99, 4, "GGUF version 99", "versions 2 and 3 are");
}

Test(gguf, big_endian_file_is_named_as_such)
{
    layout L = sample_layout();
    expect_patched_fails(L.version, 0x03000000u, 4, "big-endian", NULL);
}

Test(gguf, huge_kv_count_is_refused_before_allocating)
{
    layout L = sample_layout();
    expect_patched_fails(L.n_kv, UINT64_C(1) << 60, 8, "kv count 1152921504606846976",
                         "cannot fit");
}

Test(gguf, huge_tensor_count_is_refused_before_allocating)
{
    layout L = sample_layout();
    expect_patched_fails(L.n_tensors, UINT64_MAX, 8, "tensor count 18446744073709551615",
                         "cannot fit");
}

Test(gguf, huge_key_length_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.key[1], UINT64_C(1) << 40, 8, "length 1099511627776 exceeds",
                         "kv 1");
}

Test(gguf, huge_string_value_length_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(kv_pos(&L, "t.str") + 4, UINT64_MAX - 3, 8,
                         "length 18446744073709551612 exceeds", "kv 9 't.str'");
}

Test(gguf, huge_array_count_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(kv_pos(&L, "a.i32") + 8, UINT64_C(1) << 61, 8,
                         "array of 2305843009213693952 i32", "kv 15 'a.i32'");
    expect_patched_fails(kv_pos(&L, "a.str") + 8, UINT64_C(1) << 61, 8,
                         "array of 2305843009213693952 strings", "kv 17 'a.str'");
}

Test(gguf, huge_length_inside_a_string_array_names_the_element)
{
    layout L = sample_layout();
    /* a.str: kind, element kind, count, then "a" (length at +16). */
    expect_patched_fails(kv_pos(&L, "a.str") + 16 + 9, UINT64_C(1) << 50, 8,
                         "array element 1 of 3", "'a.str'");
}

Test(gguf, unknown_value_kind_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.kind[2], 13, 4, "unknown value kind 13", "kv 2 't.i8'");
}

Test(gguf, unknown_array_element_kind_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(kv_pos(&L, "a.u8") + 4, 77, 4, "unknown array element kind 77",
                         "'a.u8'");
}

Test(gguf, nested_array_is_refused_clearly)
{
    layout L = sample_layout();
    expect_patched_fails(kv_pos(&L, "a.u8") + 4, LKV_GGUF_ARRAY, 4, "nested arrays are not supported",
                         "'a.u8'");
}

Test(gguf, duplicate_key_is_refused)
{
    layout L = sample_layout();
    /* "t.i8" becomes "t.u8". */
    expect_patched_fails(L.key[2] + 8 + 2, 'u', 1, "key 't.u8' appears twice", "kv 1 and kv 2");
}

Test(gguf, alignment_must_be_a_u32_power_of_two)
{
    layout L = sample_layout();
    expect_patched_fails(L.alignment_value, 48, 4, "'general.alignment' = 48 is not a power of two",
                         NULL);
    expect_patched_fails(L.alignment_value, 0, 4, "'general.alignment' = 0 is not a power of two",
                         NULL);
    expect_patched_fails(L.kind[0], LKV_GGUF_I32, 4, "'general.alignment' is a i32", "u32");
}

Test(gguf, unknown_tensor_type_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.type[2], 99, 4, "unknown tensor type 99", "tensor 2 'w.2'");
    /* A number ggml retired. */
    expect_patched_fails(L.type[2], 4, 4, "unknown tensor type 4", "tensor 2 'w.2'");
}

Test(gguf, n_dims_outside_1_to_4_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.n_dims[1], 5, 4, "n_dims 5", "tensor 1 'w.1'");
    expect_patched_fails(L.n_dims[1], 0, 4, "n_dims 0", "tensor 1 'w.1'");
}

Test(gguf, negative_dimension_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.ne0[0], UINT64_C(1) << 63, 8, "ne[0] = 9223372036854775808",
                         "negative");
}

Test(gguf, dimensions_whose_product_overflows_are_refused)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    /* w.3 is 4-D: ne[1] and ne[2] to 2^40. */
    patch_le(&b, L.ne0[3] + 8, UINT64_C(1) << 40, 8);
    patch_le(&b, L.ne0[3] + 16, UINT64_C(1) << 40, 8);
    expect_bytes_fail(&b, "more elements than int64 holds", "tensor 3 'w.3'");
    free(b.p);
}

/* The element count fits int64 but the bytes do not fit 64 bits: a wrapped
 * byte count (2^62 f32 take 2^64 bytes, 0 once wrapped) would pass the check
 * that the data lies inside the file. */
Test(gguf, row_whose_bytes_overflow_64_bits_is_refused)
{
    static const struct {
        uint64_t ne0;
        const char *named;
    } cases[] = {{UINT64_C(1) << 62, "4611686018427387904 elements of f32"},
                 {INT64_MAX, "9223372036854775807 elements of f32"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wbuf b;
        layout L;
        build_sample(&b, &L);
        /* w.0 is f32 3 x 2: one row of ne[0] elements. */
        patch_le(&b, L.ne0[0], cases[i].ne0, 8);
        patch_le(&b, L.ne0[0] + 8, 1, 8);
        expect_bytes_fail(&b, cases[i].named, "tensor 0 'w.0'");
        cr_assert(strstr(lkv_last_error(), "64-bit"), "%s", lkv_last_error());
        free(b.p);
    }
}

Test(gguf, row_that_is_not_whole_blocks_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.ne0[1], 48, 8, "ne[0] = 48 is not a multiple of the q8_0 block size 32",
                         "tensor 1 'w.1'");
}

Test(gguf, misaligned_tensor_offset_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.offset[3], L.rel_offset[3] + 4, 8,
                         "is not a multiple of the alignment 64", "tensor 3 'w.3'");
}

Test(gguf, tensor_past_the_end_of_the_file_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.offset[4], L.rel_offset[4] + SAMPLE_ALIGNMENT, 8,
                         "data ends at byte", "tensor 4 'w.4'");
    expect_patched_fails(L.offset[4], UINT64_MAX - 63, 8, "starts past the end of the file",
                         "tensor 4 'w.4'");
}

Test(gguf, duplicate_tensor_name_is_refused)
{
    layout L = sample_layout();
    /* "w.3" becomes "w.1". */
    expect_patched_fails(L.name[3] + 8 + 2, '1', 1, "tensor 3 'w.1': duplicate name",
                         "tensor 1");
}

Test(gguf, tensor_name_with_a_nul_byte_is_refused)
{
    layout L = sample_layout();
    expect_patched_fails(L.name[2] + 8 + 1, 0, 1, "contains a NUL byte", "tensor 2");
}

/* Names and keys come from the file: a message shows their control and
 * non-ASCII bytes as \xNN, so they cannot drive the terminal. */
Test(gguf, names_and_keys_in_messages_are_escaped)
{
    wbuf b;
    layout L;
    build_sample(&b, &L);
    /* "w.4" becomes ESC ".4", then its offset is misaligned. */
    patch_le(&b, L.name[4] + 8, 0x1b, 1);
    patch_le(&b, L.offset[4], L.rel_offset[4] + 4, 8);
    expect_bytes_fail(&b, "tensor 4 '\\x1b.4'", "alignment");
    cr_assert_null(strchr(lkv_last_error(), 0x1b), "%s", lkv_last_error());
    free(b.p);
    /* "t.u8" and "t.i8" both become "t.\xff8": a duplicate key. */
    build_sample(&b, &L);
    patch_le(&b, L.key[1] + 8 + 2, 0xff, 1);
    patch_le(&b, L.key[2] + 8 + 2, 0xff, 1);
    expect_bytes_fail(&b, "key 't.\\xff8' appears twice", "kv 1 and kv 2");
    cr_assert_null(strchr(lkv_last_error(), '\xff'), "%s", lkv_last_error());
    free(b.p);
    /* A name too long to show whole: as many \xNN as fit, then "...". */
    char esc96[97], want[16 * 4 + 8];
    memset(esc96, 0x1b, 96);
    esc96[96] = '\0';
    for (int i = 0; i < 16; i++)
        memcpy(want + 4 * i, "\\x1b", 4);
    memcpy(want + 64, "...' at", 8);
    sample_tensor ts[] = {{esc96, LKV_GGML_F32, 1, {1, 1, 1, 1}, 4}};
    build(&b, &L, ts, 1, 0);
    expect_bytes_fail(&b, want, "is 96 bytes");
    cr_assert_null(strchr(lkv_last_error(), 0x1b), "%s", lkv_last_error());
    free(b.p);
}

Test(gguf, missing_file_and_directory_are_refused)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/absent.gguf", scratch);
    lkv_gguf *g = SENTINEL;
    cr_assert_eq(lkv_gguf_open(path, &g), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "absent.gguf"), "%s", lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "cannot open"), "%s", lkv_last_error());
    cr_assert_eq(lkv_gguf_open(scratch, &g), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "not a regular file"), "%s", lkv_last_error());
    cr_assert_eq(g, SENTINEL);
    cr_assert_eq(lkv_gguf_open(NULL, &g), LKV_INVALID_ARGUMENT);
    cr_assert_eq(lkv_gguf_open(path, NULL), LKV_INVALID_ARGUMENT);
}

/* ---- the real SmolLM2 file ------------------------------------------------ */

Test(gguf, smollm2_file_has_the_shape_the_reference_reader_reports)
{
    const char *path = getenv("LAZYKV_TEST_MODEL");
    if (!path || !*path)
        cr_skip_test("LAZYKV_TEST_MODEL is not set (scripts/fetch-model.sh prints the path)");
    lkv_gguf *g = NULL;
    TU_OK(lkv_gguf_open(path, &g));
    cr_assert_eq(lkv_gguf_version(g), 3);
    cr_assert_eq(lkv_gguf_tensor_count(g), 272);
    cr_assert_eq(lkv_gguf_kv_count(g), 33);
    int per_type[64] = {0};
    for (int64_t i = 0; i < lkv_gguf_tensor_count(g); i++) {
        const lkv_gguf_tensor *t = lkv_gguf_tensor_at(g, i);
        cr_assert_lt((int)t->type, 64);
        per_type[t->type]++;
        uint64_t row;
        TU_OK(lkv_ggml_row_bytes(t->type, t->ne[0], &row));
        cr_assert_eq(t->bytes, row * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]), "%s", t->name);
    }
    cr_assert_eq(per_type[LKV_GGML_Q4_1], 210);
    cr_assert_eq(per_type[LKV_GGML_F32], 61);
    cr_assert_eq(per_type[LKV_GGML_Q8_0], 1);
    int64_t blocks;
    TU_OK(lkv_gguf_get_int(g, "llama.block_count", 1, 1000, &blocks));
    cr_assert_eq(blocks, 30);
    lkv_gguf_str arch;
    TU_OK(lkv_gguf_get_str(g, "general.architecture", &arch));
    cr_assert(str_is(arch, "llama"));
    const lkv_gguf_value *tokens, *merges;
    TU_OK(lkv_gguf_get_array(g, "tokenizer.ggml.tokens", LKV_GGUF_STRING, &tokens));
    cr_assert_eq(tokens->count, 49152);
    cr_assert(str_is(tokens->strings[0], "<|endoftext|>"));
    TU_OK(lkv_gguf_get_array(g, "tokenizer.ggml.merges", LKV_GGUF_STRING, &merges));
    cr_assert_eq(merges->count, 48900);
    double theta;
    TU_OK(lkv_gguf_get_real(g, "llama.rope.freq_base", &theta));
    cr_assert_eq(theta, 100000.0);
    const lkv_gguf_tensor *emb = lkv_gguf_find_tensor(g, "token_embd.weight");
    cr_assert_not_null(emb);
    cr_assert_eq(emb->type, LKV_GGML_Q8_0);
    cr_assert_eq(emb->n_dims, 2);
    cr_assert_eq(emb->ne[0], 576);
    cr_assert_eq(emb->ne[1], 49152);
    cr_assert_null(lkv_gguf_find_tensor(g, "output.weight"), "SmolLM2 ties its embeddings");
    const lkv_gguf_tensor *q = lkv_gguf_find_tensor(g, "blk.29.attn_q.weight");
    cr_assert_not_null(q);
    cr_assert_eq(q->type, LKV_GGML_Q4_1);
    cr_assert_eq(q->ne[0], 576);
    cr_assert_eq(q->ne[1], 576);
    lkv_gguf_close(g);
}
