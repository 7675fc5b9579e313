/* The model loaders: stories260K (llama2.c) checked against values read from
 * the file by fread at offsets computed here from its documented layout,
 * damaged copies of it refused with messages naming what is wrong, and
 * SmolLM2 (GGUF) when LAZYKV_TEST_MODEL names it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "test_util.h"

#define STORIES "models/stories260K/stories260K.bin"
#define STORIES_BYTES 1056540L

static char *stories_bytes(long *out_n)
{
    const char *path = tu_shared_path(STORIES);
    FILE *f = fopen(path, "rb");
    if (!f)
        cr_skip_test("%s is absent (set LKV_SHARED_DIR)", path);
    char *buf = malloc(STORIES_BYTES + 4096);
    long n = (long)fread(buf, 1, STORIES_BYTES + 4096, f);
    fclose(f);
    cr_assert_eq(n, STORIES_BYTES);
    *out_n = n;
    return buf;
}

/* One float of the file, by fread at its offset. */
static float float_at(long index)
{
    FILE *f = fopen(tu_shared_path(STORIES), "rb");
    cr_assert_not_null(f);
    unsigned char b[4];
    cr_assert_eq(fseek(f, 28 + index * 4, SEEK_SET), 0);
    cr_assert_eq(fread(b, 1, 4, f), 4u);
    fclose(f);
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float v;
    memcpy(&v, &u, 4);
    return v;
}

/* A copy of `n` bytes in a temporary file; the caller unlinks it. */
static char *temp_copy(const void *bytes, long n)
{
    const char *dir = getenv("TMPDIR");
    char *path = malloc(4096);
    snprintf(path, 4096, "%s/lkv_model_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp %s", path);
    cr_assert_eq(n == 0 ? 0 : write(fd, bytes, (size_t)n), n);
    close(fd);
    return path;
}

static void put_i32(char *p, int32_t v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int i = 0; i < 4; i++)
        p[i] = (char)(u >> (8 * i));
}

/* Loading the bytes fails with INVALID_ARGUMENT and a message holding every
 * string of `named`. */
static void expect_refused(const void *bytes, long n, const char *const *named, int n_named)
{
    char *path = temp_copy(bytes, n);
    lkv_model *m = (lkv_model *)(uintptr_t)0x1;
    lkv_status st = lkv_model_load(path, &m);
    unlink(path);
    free(path);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%ld bytes: %s: %s", n, lkv_status_name(st),
                 lkv_last_error());
    cr_assert_eq(m, (lkv_model *)(uintptr_t)0x1, "out_model untouched on failure");
    for (int i = 0; i < n_named; i++)
        cr_assert(strstr(lkv_last_error(), named[i]), "'%s' should name '%s'", lkv_last_error(),
                  named[i]);
}

Test(model_load, stories260k_config)
{
    long n;
    free(stories_bytes(&n));
    lkv_model *m = NULL;
    TU_OK(lkv_model_load(tu_shared_path(STORIES), &m));
    const lkv_model_config *c = &m->cfg;
    cr_assert_eq(m->format, LKV_MODEL_LLAMA2C);
    cr_assert(c->layers == 5 && c->dim == 64 && c->ffn_dim == 172 && c->q_heads == 8 &&
              c->kv_heads == 4 && c->head_dim == 8 && c->vocab == 512 && c->context == 512);
    cr_assert_float_eq(c->rope_theta, 10000.0f, 1e-3);
    cr_assert_float_eq(c->norm_eps, 1e-5f, 1e-12);
    cr_assert_eq(m->classifier, m->embed, "stories260K shares its classifier");
    cr_assert_null(m->gguf);
    cr_assert_eq(m->file_bytes, (uint64_t)STORIES_BYTES);
    cr_assert_str_eq(m->name, "stories260K.bin");
    lkv_cache_config cc;
    lkv_cache_config_init(&cc);
    lkv_model_cache_shape(m, &cc);
    cr_assert(cc.layers == 5 && cc.q_heads == 8 && cc.kv_heads == 4 && cc.head_dim == 8);
    cr_assert_float_eq(cc.scale, 1.0f / sqrtf(8.0f), 1e-7);
    lkv_model_free(m);
}

Test(model_load, stories260k_weights_are_the_files)
{
    long n;
    free(stories_bytes(&n));
    lkv_model *m = NULL;
    TU_OK(lkv_model_load(tu_shared_path(STORIES), &m));
    /* file layout in floats (README): embed, rms_att, wq, wk, wv, wo,
     * rms_ffn, w1, w2, w3, rms_final */
    const long V = 512, D = 64, L = 5, H = 172, KV = 32;
    long embed = 0, rms_att = embed + V * D, wq = rms_att + L * D, wk = wq + L * D * D;
    long wv = wk + L * KV * D, wo = wv + L * KV * D, rms_ffn = wo + L * D * D;
    long w1 = rms_ffn + L * D, w2 = w1 + L * H * D, w3 = w2 + L * D * H, rms_final = w3 + L * H * D;
    struct {
        const float *got;
        long file;
        const char *what;
    } probe[] = {
        {m->embed + 3 * D + 5, embed + 3 * D + 5, "embed[3][5]"},
        {m->embed + 511 * D + 63, embed + 511 * D + 63, "embed[511][63]"},
        {m->layers[2].attn_norm + 9, rms_att + 2 * D + 9, "rms_att[2][9]"},
        {m->layers[2].wq + 10 * D + 7, wq + 2 * D * D + 10 * D + 7, "wq[2][10][7]"},
        {m->layers[4].wk + 31 * D + 63, wk + 4 * KV * D + 31 * D + 63, "wk[4][31][63]"},
        {m->layers[1].wv + 5 * D + 1, wv + 1 * KV * D + 5 * D + 1, "wv[1][5][1]"},
        {m->layers[3].wo + 60 * D + 2, wo + 3 * D * D + 60 * D + 2, "wo[3][60][2]"},
        {m->layers[0].ffn_norm + 63, rms_ffn + 63, "rms_ffn[0][63]"},
        {m->layers[4].w_gate + 171 * D + 3, w1 + 4 * H * D + 171 * D + 3, "w1[4][171][3]"},
        {m->layers[2].w_down + 17 * H + 171, w2 + 2 * D * H + 17 * H + 171, "w2[2][17][171]"},
        {m->layers[1].w_up + 100 * D + 40, w3 + 1 * H * D + 100 * D + 40, "w3[1][100][40]"},
        {m->out_norm + 33, rms_final + 33, "rms_final[33]"},
    };
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        float want = float_at(probe[i].file);
        cr_assert(*probe[i].got == want, "%s: loaded %.9g, file %.9g", probe[i].what,
                  (double)*probe[i].got, (double)want);
        cr_assert(want != 0.0f, "%s: probe a non-zero weight", probe[i].what);
    }
    lkv_model_free(m);
}

Test(model_load, unshared_classifier_is_read_after_the_rope_tables)
{
    long n;
    char *bytes = stories_bytes(&n);
    long extra = 512L * 64 * 4;
    char *big = malloc((size_t)(n + extra));
    memcpy(big, bytes, (size_t)n);
    for (long i = 0; i < 512L * 64; i++) {
        float v = (float)i * 0.25f;
        memcpy(big + n + 4 * i, &v, 4);
    }
    put_i32(big + 20, -512);
    char *path = temp_copy(big, n + extra);
    lkv_model *m = NULL;
    lkv_status st = lkv_model_load(path, &m);
    unlink(path);
    free(path);
    TU_OK(st);
    cr_assert_neq(m->classifier, m->embed);
    cr_assert_eq(m->cfg.vocab, 512);
    cr_assert(m->classifier[0] == 0.0f && m->classifier[77] == 77 * 0.25f &&
              m->classifier[512 * 64 - 1] == (512 * 64 - 1) * 0.25f);
    cr_assert(m->embed[5] == float_at(5));
    lkv_model_free(m);
    free(big);
    free(bytes);
}

Test(model_load, truncated_copies_are_refused_naming_both_sizes)
{
    long n;
    char *bytes = stories_bytes(&n);
    const char *empty[] = {"0 bytes", "28-byte header"};
    expect_refused(bytes, 0, empty, 2);
    const char *short27[] = {"27 bytes"};
    expect_refused(bytes, 27, short27, 1);
    const char *header[] = {"28 bytes", "1056540"};
    expect_refused(bytes, 28, header, 2);
    const char *half[] = {"528270", "1056540"};
    expect_refused(bytes, n / 2, half, 2);
    const char *one_short[] = {"1056539", "1056540"};
    expect_refused(bytes, n - 1, one_short, 2);
    char *longer = malloc((size_t)n + 1);
    memcpy(longer, bytes, (size_t)n);
    longer[n] = 0;
    const char *one_long[] = {"1056541", "1056540"};
    expect_refused(longer, n + 1, one_long, 2);
    free(longer);
    free(bytes);
}

Test(model_load, corrupted_headers_are_refused_naming_the_value)
{
    long n;
    char *bytes = stories_bytes(&n);
    struct {
        int field;
        int32_t value;
        const char *named;
    } bad[] = {{0, -64, "dim -64"},     {3, 7, "n_heads 7"},       {4, 0, "n_kv_heads 0"},
               {4, 3, "kv_heads 3"},    {2, -5, "n_layers -5"},    {1, 0, "hidden_dim 0"},
               {5, 0, "vocab_size 0"},  {2, 100000, "layers 100000"}, {6, 0, "context 0"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *copy = malloc((size_t)n);
        memcpy(copy, bytes, (size_t)n);
        put_i32(copy + 4 * bad[i].field, bad[i].value);
        const char *named[] = {bad[i].named};
        expect_refused(copy, n, named, 1);
        free(copy);
    }
    free(bytes);
}

/* Loading `path` fails with INVALID_ARGUMENT saying `needle` and leaves
 * *out_model alone. */
static void expect_path_refused(const char *path, const char *needle)
{
    lkv_model *m = (lkv_model *)(uintptr_t)0x1;
    lkv_status st = lkv_model_load(path, &m);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%s: %s: %s", path, lkv_status_name(st),
                 lkv_last_error());
    cr_assert_eq(m, (lkv_model *)(uintptr_t)0x1, "out_model untouched on failure");
    cr_assert(strstr(lkv_last_error(), needle), "'%s' should say '%s'", lkv_last_error(), needle);
}

Test(model_load, missing_file_is_refused)
{
    expect_path_refused("no/such/model.gguf", "'no/such/model.gguf'");
    expect_path_refused("no/such/model.gguf", "No such file or directory");
}

/* A fresh folder under TMPDIR; the caller removes it. */
static char *temp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    char *path = malloc(4096);
    snprintf(path, 4096, "%s/lkv_model_dir_XXXXXX", dir && *dir ? dir : "/tmp");
    cr_assert_not_null(mkdtemp(path), "mkdtemp %s", path);
    return path;
}

Test(model_load, directory_is_not_a_regular_file)
{
    char *dir = temp_dir();
    char want[4200];
    snprintf(want, sizeof want, "'%s' is not a regular file", dir);
    expect_path_refused(dir, want);
    rmdir(dir);
    free(dir);
}

/* Nothing writes to the FIFO, so a load that opened it for reading and
 * waited would hang here (Criterion's timeout ends it as a failure). */
Test(model_load, fifo_is_refused_without_waiting_for_a_writer, .timeout = 20)
{
    char *dir = temp_dir();
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/model.gguf", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo %s", fifo);
    char want[4300];
    snprintf(want, sizeof want, "'%s' is not a regular file", fifo);
    expect_path_refused(fifo, want);
    unlink(fifo);
    rmdir(dir);
    free(dir);
}

/* ---- a tiny GGUF llama written here --------------------------------------- */

typedef struct gbuf {
    unsigned char *p;
    size_t len, cap;
} gbuf;

static void g_put(gbuf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void g_u32(gbuf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    g_put(b, x, 4);
}

static void g_u64(gbuf *b, uint64_t v)
{
    g_u32(b, (uint32_t)v);
    g_u32(b, (uint32_t)(v >> 32));
}

static void g_str(gbuf *b, const char *s)
{
    g_u64(b, strlen(s));
    g_put(b, s, strlen(s));
}

static void kv_u32(gbuf *b, const char *key, uint32_t v)
{
    g_str(b, key);
    g_u32(b, 4);
    g_u32(b, v);
}

static void kv_f32(gbuf *b, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    g_str(b, key);
    g_u32(b, 6);
    g_u32(b, u);
}

static void kv_str(gbuf *b, const char *key, const char *v)
{
    g_str(b, key);
    g_u32(b, 8);
    g_str(b, v);
}

typedef struct tiny_opts {
    const char *arch;
    const char *name;       /* general.name, "tiny llama" when NULL */
    const char *omit;       /* tensor left out */
    const char *reshape;    /* tensor given ne[1] + 1 rows */
    uint32_t rope_dims;     /* llama.rope.dimension_count, 0 = absent */
    int untied;             /* with output.weight */
} tiny_opts;

typedef struct tiny_tensor {
    char name[64];
    uint64_t ne[2];
    uint32_t n_dims;
} tiny_tensor;

/* dim 8, 2 heads of 4, 1 kv head, ffn 12, vocab 10, 1 layer, all f32;
 * element e of tensor t holds tiny_value(t, e). */
static float tiny_value(int t, uint64_t e)
{
    return (float)((int)((e * 7 + (uint64_t)t * 13) % 23) - 11) * 0.01f;
}

static int tiny_tensors(const tiny_opts *o, tiny_tensor *out)
{
    const struct {
        const char *name;
        uint64_t in, rows;
    } all[] = {{"token_embd.weight", 8, 10},       {"output_norm.weight", 8, 0},
               {"output.weight", 8, 10},           {"blk.0.attn_norm.weight", 8, 0},
               {"blk.0.attn_q.weight", 8, 8},      {"blk.0.attn_k.weight", 8, 4},
               {"blk.0.attn_v.weight", 8, 4},      {"blk.0.attn_output.weight", 8, 8},
               {"blk.0.ffn_norm.weight", 8, 0},    {"blk.0.ffn_gate.weight", 8, 12},
               {"blk.0.ffn_up.weight", 8, 12},     {"blk.0.ffn_down.weight", 12, 8}};
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if ((o->omit && strcmp(o->omit, all[i].name) == 0) ||
            (!o->untied && strcmp(all[i].name, "output.weight") == 0))
            continue;
        tiny_tensor *t = &out[n++];
        snprintf(t->name, sizeof t->name, "%s", all[i].name);
        t->n_dims = all[i].rows ? 2 : 1;
        t->ne[0] = all[i].in;
        t->ne[1] = all[i].rows ? all[i].rows : 1;
        if (o->reshape && strcmp(o->reshape, all[i].name) == 0)
            t->ne[1] += 1;
    }
    return n;
}

static gbuf tiny_gguf(const tiny_opts *o)
{
    tiny_tensor ts[16];
    int n = tiny_tensors(o, ts);
    gbuf b = {0};
    g_put(&b, "GGUF", 4);
    g_u32(&b, 3);
    g_u64(&b, (uint64_t)n);
    g_u64(&b, o->rope_dims ? 11 : 10);
    kv_str(&b, "general.architecture", o->arch ? o->arch : "llama");
    kv_str(&b, "general.name", o->name ? o->name : "tiny llama");
    kv_u32(&b, "llama.block_count", 1);
    kv_u32(&b, "llama.embedding_length", 8);
    kv_u32(&b, "llama.feed_forward_length", 12);
    kv_u32(&b, "llama.attention.head_count", 2);
    kv_u32(&b, "llama.attention.head_count_kv", 1);
    kv_u32(&b, "llama.context_length", 32);
    kv_f32(&b, "llama.rope.freq_base", 500.0f);
    kv_f32(&b, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
    if (o->rope_dims)
        kv_u32(&b, "llama.rope.dimension_count", o->rope_dims);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        g_str(&b, ts[i].name);
        g_u32(&b, ts[i].n_dims);
        for (uint32_t d = 0; d < ts[i].n_dims; d++)
            g_u64(&b, ts[i].ne[d]);
        g_u32(&b, 0); /* f32 */
        g_u64(&b, off);
        off += (ts[i].ne[0] * ts[i].ne[1] * 4 + 31) / 32 * 32;
    }
    while (b.len % 32)
        g_put(&b, "", 1);
    for (int i = 0; i < n; i++) {
        uint64_t elems = ts[i].ne[0] * ts[i].ne[1];
        for (uint64_t e = 0; e < elems; e++) {
            float v = tiny_value(i, e);
            g_put(&b, &v, 4);
        }
        while (b.len % 32)
            g_put(&b, "", 1);
    }
    return b;
}

static lkv_status load_tiny(const tiny_opts *o, lkv_model **out)
{
    gbuf b = tiny_gguf(o);
    char *path = temp_copy(b.p, (long)b.len);
    lkv_status st = lkv_model_load(path, out);
    unlink(path);
    free(path);
    free(b.p);
    return st;
}

Test(model_load, gguf_llama_config_and_weights)
{
    tiny_opts o = {0};
    lkv_model *m = NULL;
    TU_OK(load_tiny(&o, &m));
    const lkv_model_config *c = &m->cfg;
    cr_assert(c->layers == 1 && c->dim == 8 && c->ffn_dim == 12 && c->q_heads == 2 &&
              c->kv_heads == 1 && c->head_dim == 4 && c->vocab == 10 && c->context == 32);
    cr_assert_float_eq(c->rope_theta, 500.0f, 1e-4);
    cr_assert_float_eq(c->norm_eps, 1e-6f, 1e-12);
    cr_assert_str_eq(m->name, "tiny llama");
    cr_assert_eq(m->classifier, m->embed, "no output.weight: tied");
    cr_assert_not_null(m->gguf);
    /* tensor order: 0 token_embd, 1 output_norm, 2 attn_norm, 3 q, 4 k, ... */
    cr_assert(m->embed[37] == tiny_value(0, 37));
    cr_assert(m->out_norm[3] == tiny_value(1, 3));
    cr_assert(m->layers[0].wk[13] == tiny_value(4, 13));
    cr_assert(m->layers[0].w_down[95] == tiny_value(10, 95));
    lkv_model_free(m);
}

Test(model_load, gguf_output_weight_is_an_untied_classifier)
{
    tiny_opts o = {.untied = 1};
    lkv_model *m = NULL;
    TU_OK(load_tiny(&o, &m));
    cr_assert_neq(m->classifier, m->embed);
    cr_assert(m->classifier[79] == tiny_value(2, 79));
    lkv_model_free(m);
}

Test(model_load, gguf_refusals_name_the_tensor_or_key)
{
    struct {
        tiny_opts o;
        lkv_status st;
        const char *named[2];
    } bad[] = {
        {{.arch = "gpt2"}, LKV_UNSUPPORTED, {"gpt2", "llama"}},
        {{.omit = "blk.0.ffn_down.weight"}, LKV_INVALID_ARGUMENT, {"blk.0.ffn_down.weight", "missing"}},
        {{.reshape = "blk.0.attn_k.weight"}, LKV_INVALID_ARGUMENT, {"blk.0.attn_k.weight", "[8, 5"}},
        {{.rope_dims = 2}, LKV_UNSUPPORTED, {"llama.rope.dimension_count", "4"}},
        /* A name from the file reaches the message escaped. */
        {{.arch = "ll\x1b[2Jama"}, LKV_UNSUPPORTED, {"'ll\\x1b[2Jama'", "llama"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_model *m = NULL;
        lkv_status st = load_tiny(&bad[i].o, &m);
        cr_assert_eq(st, bad[i].st, "case %zu: %s: %s", i, lkv_status_name(st), lkv_last_error());
        cr_assert_null(m);
        for (int k = 0; k < 2; k++)
            cr_assert(strstr(lkv_last_error(), bad[i].named[k]), "'%s' should name '%s'",
                      lkv_last_error(), bad[i].named[k]);
        cr_assert_null(strchr(lkv_last_error(), 0x1b), "%s", lkv_last_error());
    }
}

/* Tools print the model's name and put it in messages, so the file's
 * general.name is kept escaped. */
Test(model_load, gguf_name_is_kept_escaped)
{
    tiny_opts o = {.name = "tiny\x1b]0;pwned\x07 \xc3\xa9"};
    lkv_model *m = NULL;
    TU_OK(load_tiny(&o, &m));
    cr_assert_str_eq(m->name, "tiny\\x1b]0;pwned\\x07 \\xc3\\xa9");
    lkv_model_free(m);
}

Test(model_load, smollm2_gguf)
{
    const char *path = getenv("LAZYKV_TEST_MODEL");
    if (!path || !*path)
        cr_skip_test("LAZYKV_TEST_MODEL is not set");
    lkv_model *m = NULL;
    TU_OK(lkv_model_load(path, &m));
    const lkv_model_config *c = &m->cfg;
    cr_assert_eq(m->format, LKV_MODEL_GGUF);
    cr_assert(c->layers == 30 && c->dim == 576 && c->ffn_dim == 1536 && c->q_heads == 9 &&
                  c->kv_heads == 3 && c->head_dim == 64 && c->vocab == 49152,
              "config %d/%d/%d/%d/%d/%d/%d", c->layers, c->dim, c->ffn_dim, c->q_heads,
              c->kv_heads, c->head_dim, c->vocab);
    cr_assert_float_eq(c->rope_theta, 100000.0f, 1e-2);
    cr_assert_float_eq(c->norm_eps, 1e-5f, 1e-10);
    cr_assert_eq(c->context, 8192);
    cr_assert_eq(m->classifier, m->embed, "SmolLM2 ties its classifier");
    cr_assert_not_null(m->gguf);
    for (int32_t l = 0; l < c->layers; l += 29) {
        const lkv_model_layer *L = &m->layers[l];
        cr_assert(isfinite(L->wq[0]) && isfinite(L->w_down[576 * 1536 - 1]));
        double ss = 0;
        for (int i = 0; i < 576; i++)
            ss += (double)L->attn_norm[i] * L->attn_norm[i];
        cr_assert(ss > 0, "layer %d attn_norm is not all zero", l);
    }
    lkv_model_free(m);
}
