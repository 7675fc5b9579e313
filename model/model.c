/* What both loaders share: telling the formats apart, the shape checks, the
 * weight arena, and the cache shape a model needs. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "model_internal.h"

#define LKV_ARENA_ALIGN 64 /* bytes: each weight group starts on a cache line */

static lkv_status check_range(const char *where, const char *what, int64_t v, int64_t lo,
                              int64_t hi)
{
    if (v < lo || v > hi)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s %lld is not in %lld..%lld", where, what,
                        (long long)v, (long long)lo, (long long)hi);
    return LKV_OK;
}

lkv_status lkv_model_check_config(const lkv_model_config *c, const char *where)
{
    lkv_status st;
    if ((st = check_range(where, "layers", c->layers, 1, LKV_MODEL_MAX_LAYERS)) != LKV_OK ||
        (st = check_range(where, "dim", c->dim, 1, LKV_MODEL_MAX_DIM)) != LKV_OK ||
        (st = check_range(where, "ffn_dim", c->ffn_dim, 1, LKV_MODEL_MAX_FFN)) != LKV_OK ||
        (st = check_range(where, "q_heads", c->q_heads, 1, LKV_MODEL_MAX_HEADS)) != LKV_OK ||
        (st = check_range(where, "kv_heads", c->kv_heads, 1, LKV_MODEL_MAX_HEADS)) != LKV_OK ||
        (st = check_range(where, "head_dim", c->head_dim, 2, LKV_MODEL_MAX_HEAD_DIM)) != LKV_OK ||
        (st = check_range(where, "vocab", c->vocab, 1, LKV_MODEL_MAX_VOCAB)) != LKV_OK ||
        (st = check_range(where, "context", c->context, 1, LKV_MODEL_MAX_CONTEXT)) != LKV_OK)
        return st;
    if ((int64_t)c->q_heads * c->head_dim != c->dim)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: dim %d is not q_heads %d x head_dim %d", where,
                        c->dim, c->q_heads, c->head_dim);
    if (c->q_heads % c->kv_heads != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: kv_heads %d does not divide q_heads %d", where,
                        c->kv_heads, c->q_heads);
    if (c->head_dim % 2 != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: head_dim %d is odd: RoPE rotates pairs of dimensions", where,
                        c->head_dim);
    if (!(c->rope_theta > 1.0f) || !isfinite(c->rope_theta))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: rope theta %g is not a finite value above 1",
                        where, (double)c->rope_theta);
    if (!(c->norm_eps > 0.0f) || !(c->norm_eps < 1.0f))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: norm epsilon %g is not in (0, 1)", where,
                        (double)c->norm_eps);
    return LKV_OK;
}

/* Floats from `*at`, rounded up so the group starts aligned. */
static size_t take(size_t *at, size_t n)
{
    size_t per = LKV_ARENA_ALIGN / sizeof(float);
    size_t start = (*at + per - 1) / per * per;
    *at = start + n;
    return start;
}

typedef struct layer_offsets {
    size_t attn_norm, qkv, wo, ffn_norm, gate_up, down;
} layer_offsets;

lkv_status lkv_model_place(lkv_model *m, int tied)
{
    const lkv_model_config *c = &m->cfg;
    size_t dim = (size_t)c->dim, ffn = (size_t)c->ffn_dim;
    size_t qd = (size_t)c->q_heads * (size_t)c->head_dim;
    size_t kvd = (size_t)c->kv_heads * (size_t)c->head_dim;
    layer_offsets *off = calloc((size_t)c->layers, sizeof *off);
    lkv_model_layer *layers = calloc((size_t)c->layers, sizeof *layers);
    if (!off || !layers) {
        free(off);
        free(layers);
        return lkv_fail(LKV_OUT_OF_MEMORY, "model of %d layers: out of memory", c->layers);
    }
    size_t at = 0;
    for (int32_t l = 0; l < c->layers; l++) {
        off[l].attn_norm = take(&at, dim);
        off[l].qkv = take(&at, (qd + 2 * kvd) * dim);
        off[l].wo = take(&at, dim * qd);
        off[l].ffn_norm = take(&at, dim);
        off[l].gate_up = take(&at, 2 * ffn * dim);
        off[l].down = take(&at, dim * ffn);
    }
    size_t embed = take(&at, (size_t)c->vocab * dim);
    size_t out_norm = take(&at, dim);
    size_t classifier = tied ? embed : take(&at, (size_t)c->vocab * dim);
    size_t bytes = (at + LKV_ARENA_ALIGN / sizeof(float)) * sizeof(float);
    bytes = (bytes + LKV_ARENA_ALIGN - 1) / LKV_ARENA_ALIGN * LKV_ARENA_ALIGN;
    float *arena = aligned_alloc(LKV_ARENA_ALIGN, bytes);
    if (!arena) {
        free(off);
        free(layers);
        return lkv_fail(LKV_OUT_OF_MEMORY, "model weights: cannot allocate %zu MiB of f32",
                        bytes >> 20);
    }
    for (int32_t l = 0; l < c->layers; l++) {
        lkv_model_layer *L = &layers[l];
        L->attn_norm = arena + off[l].attn_norm;
        L->wq = arena + off[l].qkv;
        L->wk = L->wq + qd * dim;
        L->wv = L->wk + kvd * dim;
        L->wo = arena + off[l].wo;
        L->ffn_norm = arena + off[l].ffn_norm;
        L->w_gate = arena + off[l].gate_up;
        L->w_up = L->w_gate + ffn * dim;
        L->w_down = arena + off[l].down;
    }
    free(off);
    m->layers = layers;
    m->arena = arena;
    m->embed = arena + embed;
    m->out_norm = arena + out_norm;
    m->classifier = arena + classifier;
    m->weight_bytes = at * sizeof(float);
    return LKV_OK;
}

void lkv_model_set_name(lkv_model *m, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(m->name, sizeof m->name, "%s", base);
}

/* Reads the first bytes of a regular file. The type is checked on the open
 * descriptor (no race with a rename), and the open does not block, so a FIFO
 * or a device is refused rather than waited on. */
static lkv_status read_magic(const char *path, unsigned char *magic, size_t cap, size_t *out_got)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "model '%s': cannot open it: %s", path,
                        strerror(errno));
    struct stat sb;
    lkv_status st = LKV_OK;
    if (fstat(fd, &sb) != 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "model '%s': cannot stat it: %s", path,
                      strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = lkv_fail(LKV_INVALID_ARGUMENT, "'%s' is not a regular file", path);
    ssize_t got = 0;
    if (st == LKV_OK) {
        do
            got = read(fd, magic, cap);
        while (got < 0 && errno == EINTR);
        if (got < 0)
            st = lkv_fail(LKV_INVALID_ARGUMENT, "model '%s': cannot read it: %s", path,
                          strerror(errno));
    }
    close(fd);
    *out_got = got > 0 ? (size_t)got : 0;
    return st;
}

/* GGUF files say so in their first four bytes; llama2.c checkpoints have no
 * magic (they start with dim), so any other regular file is tried as one. */
static lkv_status sniff(const char *path, int *out_gguf)
{
    unsigned char magic[4] = {0};
    size_t got = 0;
    lkv_status st = read_magic(path, magic, sizeof magic, &got);
    if (st == LKV_OK)
        *out_gguf = got == 4 && memcmp(magic, "GGUF", 4) == 0;
    return st;
}

lkv_status lkv_model_load(const char *path, lkv_model **out_model)
{
    lkv_clear_error();
    if (!path || !out_model)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_model_load: %s is NULL",
                        !path ? "path" : "out_model");
    int gguf = 0;
    lkv_status st = sniff(path, &gguf);
    if (st != LKV_OK)
        return st;
    lkv_model *m = calloc(1, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "model '%s': out of memory", path);
    m->format = gguf ? LKV_MODEL_GGUF : LKV_MODEL_LLAMA2C;
    lkv_model_set_name(m, path);
    st = gguf ? lkv_model_load_gguf(path, m) : lkv_model_load_llama2c(path, m);
    if (st != LKV_OK) {
        lkv_model_free(m);
        return st;
    }
    *out_model = m;
    return LKV_OK;
}

void lkv_model_free(lkv_model *m)
{
    if (!m)
        return;
    if (m->gguf)
        lkv_gguf_close(m->gguf);
    free(m->layers);
    free(m->arena);
    free(m);
}

void lkv_model_cache_shape(const lkv_model *m, lkv_cache_config *cfg)
{
    if (!m || !cfg)
        return;
    cfg->layers = m->cfg.layers;
    cfg->q_heads = m->cfg.q_heads;
    cfg->kv_heads = m->cfg.kv_heads;
    cfg->head_dim = m->cfg.head_dim;
    cfg->scale = (float)(1.0 / sqrt((double)m->cfg.head_dim));
}
