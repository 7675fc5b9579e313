/* llama2.c checkpoints: a header of 7 little-endian int32 (dim, hidden_dim,
 * n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size
 * means the classifier is stored, not shared) and then f32 tensors, each
 * kind for every layer in turn: token_embedding, rms_att, wq, wk, wv, wo,
 * rms_ffn, w1 (gate), w2 (down), w3 (up), rms_final, two RoPE tables we do
 * not read, and the classifier when unshared. The format has no magic, so
 * the header is trusted only when the size it implies is the file's size. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "le.h"
#include "model_internal.h"

#define LKV_LLAMA2C_HEADER 28
#define LKV_LLAMA2C_THETA 10000.0f
#define LKV_LLAMA2C_EPS 1e-5f

typedef struct llama2c_header {
    int32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
} llama2c_header;

static int host_is_little_endian(void)
{
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static lkv_status read_header(FILE *f, const char *path, uint64_t size, llama2c_header *h)
{
    uint8_t raw[LKV_LLAMA2C_HEADER];
    if (size < LKV_LLAMA2C_HEADER || fread(raw, 1, sizeof raw, f) != sizeof raw)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "llama2.c checkpoint '%s': %llu bytes is shorter than its %d-byte header",
                        path, (unsigned long long)size, LKV_LLAMA2C_HEADER);
    int32_t *fields[7] = {&h->dim,      &h->hidden, &h->layers, &h->heads,
                          &h->kv_heads, &h->vocab,  &h->seq_len};
    for (int i = 0; i < 7; i++)
        *fields[i] = lkv_le32_signed(raw + 4 * i);
    return LKV_OK;
}

/* The raw header fields, checked before the config is derived from them so
 * a bad value is named as the file holds it (a negative vocab_size is
 * legal: it marks an unshared classifier). */
static lkv_status check_header(const llama2c_header *h, const char *path)
{
    const char *names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads"};
    const int32_t vals[] = {h->dim, h->hidden, h->layers, h->heads, h->kv_heads};
    for (int i = 0; i < 5; i++)
        if (vals[i] <= 0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "llama2.c header of '%s': %s %d is not positive", path, names[i],
                            vals[i]);
    if (h->vocab == 0 || h->vocab == INT32_MIN)
        return lkv_fail(LKV_INVALID_ARGUMENT, "llama2.c header of '%s': vocab_size %d", path,
                        h->vocab);
    if (h->dim % h->heads != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "llama2.c header of '%s': n_heads %d does not divide dim %d", path,
                        h->heads, h->dim);
    return LKV_OK;
}

static void fill_config(const llama2c_header *h, lkv_model_config *c)
{
    c->layers = h->layers;
    c->dim = h->dim;
    c->ffn_dim = h->hidden;
    c->q_heads = h->heads;
    c->kv_heads = h->kv_heads;
    c->head_dim = h->dim / h->heads;
    c->vocab = h->vocab < 0 ? -h->vocab : h->vocab;
    c->context = h->seq_len;
    c->rope_theta = LKV_LLAMA2C_THETA;
    c->norm_eps = LKV_LLAMA2C_EPS;
}

/* Floats in file order; each product is bounded by the config checks. */
static uint64_t expected_bytes(const lkv_model_config *c, int shared)
{
    uint64_t L = (uint64_t)c->layers, d = (uint64_t)c->dim, f = (uint64_t)c->ffn_dim;
    uint64_t kvd = (uint64_t)c->kv_heads * (uint64_t)c->head_dim;
    uint64_t v = (uint64_t)c->vocab;
    uint64_t n = v * d + L * d + L * d * d + 2 * L * kvd * d + L * d * d + L * d + 3 * L * f * d +
                 d + (uint64_t)c->context * (uint64_t)c->head_dim;
    if (!shared)
        n += v * d;
    return LKV_LLAMA2C_HEADER + n * sizeof(float);
}

typedef struct reader {
    FILE *f;
    const char *path;
    uint64_t at; /* file offset of the next tensor kind */
    int swap;
} reader;

static void swap_floats(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char b[4];
        memcpy(b, &p[i], 4);
        unsigned char t = b[0];
        b[0] = b[3];
        b[3] = t;
        t = b[1];
        b[1] = b[2];
        b[2] = t;
        memcpy(&p[i], b, 4);
    }
}

static lkv_status read_at(reader *r, uint64_t offset, float *dst, size_t n, const char *what)
{
    if (fseeko(r->f, (off_t)offset, SEEK_SET) != 0 || fread(dst, sizeof(float), n, r->f) != n)
        return lkv_fail(LKV_INVALID_ARGUMENT, "llama2.c checkpoint '%s': cannot read %s at byte %llu",
                        r->path, what, (unsigned long long)offset);
    if (r->swap)
        swap_floats(dst, n);
    return LKV_OK;
}

/* One tensor kind for every layer: `per` floats each, to the layer's slot. */
static lkv_status read_layers(reader *r, lkv_model *m, size_t per, size_t field, const char *what)
{
    for (int32_t l = 0; l < m->cfg.layers; l++) {
        const float *dst = *(const float *const *)((const char *)&m->layers[l] + field);
        uint64_t off = r->at + (uint64_t)l * per * sizeof(float);
        lkv_status st = read_at(r, off, lkv_model_mut(dst), per, what);
        if (st != LKV_OK)
            return st;
    }
    r->at += (uint64_t)m->cfg.layers * per * sizeof(float);
    return LKV_OK;
}

static lkv_status read_one(reader *r, const float *dst, size_t n, const char *what)
{
    lkv_status st = read_at(r, r->at, lkv_model_mut(dst), n, what);
    r->at += n * sizeof(float);
    return st;
}

static lkv_status read_tensors(reader *r, lkv_model *m, int shared)
{
    const lkv_model_config *c = &m->cfg;
    size_t d = (size_t)c->dim, f = (size_t)c->ffn_dim;
    size_t kvd = (size_t)c->kv_heads * (size_t)c->head_dim;
    lkv_status st;
    if ((st = read_one(r, m->embed, (size_t)c->vocab * d, "token_embedding")) != LKV_OK ||
        (st = read_layers(r, m, d, offsetof(lkv_model_layer, attn_norm), "rms_att")) != LKV_OK ||
        (st = read_layers(r, m, d * d, offsetof(lkv_model_layer, wq), "wq")) != LKV_OK ||
        (st = read_layers(r, m, kvd * d, offsetof(lkv_model_layer, wk), "wk")) != LKV_OK ||
        (st = read_layers(r, m, kvd * d, offsetof(lkv_model_layer, wv), "wv")) != LKV_OK ||
        (st = read_layers(r, m, d * d, offsetof(lkv_model_layer, wo), "wo")) != LKV_OK ||
        (st = read_layers(r, m, d, offsetof(lkv_model_layer, ffn_norm), "rms_ffn")) != LKV_OK ||
        (st = read_layers(r, m, f * d, offsetof(lkv_model_layer, w_gate), "w1")) != LKV_OK ||
        (st = read_layers(r, m, d * f, offsetof(lkv_model_layer, w_down), "w2")) != LKV_OK ||
        (st = read_layers(r, m, f * d, offsetof(lkv_model_layer, w_up), "w3")) != LKV_OK ||
        (st = read_one(r, m->out_norm, d, "rms_final")) != LKV_OK)
        return st;
    r->at += (uint64_t)c->context * (uint64_t)c->head_dim * sizeof(float); /* RoPE tables */
    if (!shared)
        st = read_one(r, m->classifier, (size_t)c->vocab * d, "wcls");
    return st;
}

static lkv_status load_open(FILE *f, const char *path, lkv_model *m)
{
    if (fseeko(f, 0, SEEK_END) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "llama2.c checkpoint '%s': cannot seek", path);
    uint64_t size = (uint64_t)ftello(f);
    rewind(f);
    llama2c_header h;
    lkv_status st = read_header(f, path, size, &h);
    if (st == LKV_OK)
        st = check_header(&h, path);
    if (st != LKV_OK)
        return st;
    fill_config(&h, &m->cfg);
    char where[300];
    snprintf(where, sizeof where, "llama2.c header of '%s'", path);
    if ((st = lkv_model_check_config(&m->cfg, where)) != LKV_OK)
        return st;
    int shared = h.vocab > 0;
    uint64_t want = expected_bytes(&m->cfg, shared);
    if (want != size)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "llama2.c checkpoint '%s' has %llu bytes but its header (dim %d, "
                        "hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, "
                        "seq_len %d) implies %llu: truncated, or not a llama2.c checkpoint",
                        path, (unsigned long long)size, h.dim, h.hidden, h.layers, h.heads,
                        h.kv_heads, h.vocab, h.seq_len, (unsigned long long)want);
    m->file_bytes = size;
    if ((st = lkv_model_place(m, shared)) != LKV_OK)
        return st;
    reader r = {f, path, LKV_LLAMA2C_HEADER, !host_is_little_endian()};
    return read_tensors(&r, m, shared);
}

lkv_status lkv_model_load_llama2c(const char *path, lkv_model *m)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lkv_fail(LKV_INVALID_ARGUMENT, "llama2.c checkpoint '%s': cannot open it", path);
    lkv_status st = load_open(f, path, m);
    fclose(f);
    return st;
}
