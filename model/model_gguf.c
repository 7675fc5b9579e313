/* GGUF "llama" models: the shape from the llama.* metadata, every tensor's
 * dimensions checked against it before anything is allocated, then each
 * tensor dequantized once into the f32 arena. The lkv_gguf stays open in
 * m->gguf for the tokenizer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "error.h"
#include "model_internal.h"
#include "text_escape.h"

#define LKV_GGUF_DEFAULT_THETA 10000.0

typedef struct want_tensor {
    char name[96];
    int32_t n_dims;
    int64_t ne[2]; /* ne[0] = input (contiguous), ne[1] = output rows */
    const float *dst;
} want_tensor;

static lkv_status get_i32(const lkv_gguf *g, const char *key, int64_t hi, int32_t *out)
{
    int64_t v = 0;
    lkv_status st = lkv_gguf_get_int(g, key, 1, hi, &v);
    if (st == LKV_OK)
        *out = (int32_t)v;
    return st;
}

static lkv_status check_arch(const lkv_gguf *g, const char *path)
{
    lkv_gguf_str arch;
    lkv_status st = lkv_gguf_get_str(g, "general.architecture", &arch);
    if (st != LKV_OK)
        return lkv_fail_context(st, "model '%s'", path);
    char shown[LKV_ESCAPE_CAP];
    if (arch.len != 5 || memcmp(arch.ptr, "llama", 5) != 0)
        return lkv_fail(LKV_UNSUPPORTED,
                        "model '%s': architecture '%s' is not supported (only llama)", path,
                        lkv_text_escape(arch.ptr, arch.len, shown, sizeof shown));
    return LKV_OK;
}

/* An optional integer key that, when present, must equal `want`. */
static lkv_status check_optional(const lkv_gguf *g, const char *key, int32_t want)
{
    if (!lkv_gguf_find(g, key))
        return LKV_OK;
    int64_t v = 0;
    lkv_status st = lkv_gguf_get_int(g, key, 0, INT32_MAX, &v);
    if (st != LKV_OK)
        return st;
    if (v != want)
        return lkv_fail(LKV_UNSUPPORTED, "gguf key '%s' = %lld, but the model's head_dim is %d",
                        key, (long long)v, want);
    return LKV_OK;
}

static lkv_status read_reals(const lkv_gguf *g, lkv_model_config *c)
{
    double theta = LKV_GGUF_DEFAULT_THETA, eps = 0;
    lkv_status st;
    if (lkv_gguf_find(g, "llama.rope.freq_base") &&
        (st = lkv_gguf_get_real(g, "llama.rope.freq_base", &theta)) != LKV_OK)
        return st;
    if ((st = lkv_gguf_get_real(g, "llama.attention.layer_norm_rms_epsilon", &eps)) != LKV_OK)
        return st;
    c->rope_theta = (float)theta;
    c->norm_eps = (float)eps;
    return LKV_OK;
}

static lkv_status read_config(const lkv_gguf *g, const char *path, lkv_model_config *c)
{
    lkv_status st;
    if ((st = get_i32(g, "llama.block_count", LKV_MODEL_MAX_LAYERS, &c->layers)) != LKV_OK ||
        (st = get_i32(g, "llama.embedding_length", LKV_MODEL_MAX_DIM, &c->dim)) != LKV_OK ||
        (st = get_i32(g, "llama.feed_forward_length", LKV_MODEL_MAX_FFN, &c->ffn_dim)) != LKV_OK ||
        (st = get_i32(g, "llama.attention.head_count", LKV_MODEL_MAX_HEADS, &c->q_heads)) !=
            LKV_OK ||
        (st = get_i32(g, "llama.context_length", LKV_MODEL_MAX_CONTEXT, &c->context)) != LKV_OK ||
        (st = read_reals(g, c)) != LKV_OK)
        return lkv_fail_context(st, "model '%s'", path);
    c->kv_heads = c->q_heads;
    if (lkv_gguf_find(g, "llama.attention.head_count_kv") &&
        (st = get_i32(g, "llama.attention.head_count_kv", LKV_MODEL_MAX_HEADS, &c->kv_heads)) !=
            LKV_OK)
        return lkv_fail_context(st, "model '%s'", path);
    if (c->dim % c->q_heads != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "model '%s': llama.attention.head_count %d does not divide "
                        "llama.embedding_length %d",
                        path, c->q_heads, c->dim);
    c->head_dim = c->dim / c->q_heads;
    if ((st = check_optional(g, "llama.rope.dimension_count", c->head_dim)) != LKV_OK ||
        (st = check_optional(g, "llama.attention.key_length", c->head_dim)) != LKV_OK ||
        (st = check_optional(g, "llama.attention.value_length", c->head_dim)) != LKV_OK)
        return lkv_fail_context(st, "model '%s'", path);
    const lkv_gguf_tensor *emb = lkv_gguf_find_tensor(g, "token_embd.weight");
    if (!emb)
        return lkv_fail(LKV_INVALID_ARGUMENT, "model '%s': tensor 'token_embd.weight' is missing",
                        path);
    if (emb->n_dims != 2 || emb->ne[1] < 1 || emb->ne[1] > LKV_MODEL_MAX_VOCAB)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "model '%s': tensor 'token_embd.weight' has %d dims and %lld rows: "
                        "expected [dim, vocab] with vocab in 1..%d",
                        path, emb->n_dims, (long long)emb->ne[1], LKV_MODEL_MAX_VOCAB);
    c->vocab = (int32_t)emb->ne[1];
    char where[300];
    snprintf(where, sizeof where, "model '%s'", path);
    return lkv_model_check_config(c, where);
}

static void want(want_tensor *t, const char *name, int64_t in, int64_t out, const float *dst)
{
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = out > 0 ? 2 : 1;
    t->ne[0] = in;
    t->ne[1] = out > 0 ? out : 1;
    t->dst = dst;
}

/* The list of tensors to read and their shapes, destinations filled in once
 * the arena exists (pass m with layers placed) or NULL before. */
static int32_t list_tensors(const lkv_model *m, int tied, want_tensor *list)
{
    const lkv_model_config *c = &m->cfg;
    int64_t d = c->dim, f = c->ffn_dim, qd = (int64_t)c->q_heads * c->head_dim;
    int64_t kvd = (int64_t)c->kv_heads * c->head_dim;
    int placed = m->layers != NULL;
    int32_t n = 0;
    want(&list[n++], "token_embd.weight", d, c->vocab, m->embed);
    want(&list[n++], "output_norm.weight", d, 0, m->out_norm);
    if (!tied)
        want(&list[n++], "output.weight", d, c->vocab, m->classifier);
    for (int32_t l = 0; l < c->layers; l++) {
        const lkv_model_layer *L = placed ? &m->layers[l] : NULL;
        char name[96];
#define LKV_BLK(suffix, in, out, field)                                                            \
    snprintf(name, sizeof name, "blk.%d." suffix ".weight", l);                                    \
    want(&list[n++], name, in, out, L ? L->field : NULL)
        LKV_BLK("attn_norm", d, 0, attn_norm);
        LKV_BLK("attn_q", d, qd, wq);
        LKV_BLK("attn_k", d, kvd, wk);
        LKV_BLK("attn_v", d, kvd, wv);
        LKV_BLK("attn_output", qd, d, wo);
        LKV_BLK("ffn_norm", d, 0, ffn_norm);
        LKV_BLK("ffn_gate", d, f, w_gate);
        LKV_BLK("ffn_up", d, f, w_up);
        LKV_BLK("ffn_down", f, d, w_down);
#undef LKV_BLK
    }
    return n;
}

static lkv_status check_tensor(const lkv_gguf *g, const want_tensor *w)
{
    const lkv_gguf_tensor *t = lkv_gguf_find_tensor(g, w->name);
    if (!t)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tensor '%s' is missing", w->name);
    int64_t have1 = t->n_dims >= 2 ? t->ne[1] : 1;
    int extra = t->n_dims > 2 && (t->ne[2] != 1 || t->ne[3] != 1);
    if (t->ne[0] != w->ne[0] || have1 != w->ne[1] || extra)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tensor '%s' has shape [%lld, %lld, %lld, %lld] but the model needs "
                        "[%lld, %lld]",
                        w->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                        (long long)t->ne[3], (long long)w->ne[0], (long long)w->ne[1]);
    const lkv_ggml_type_info *info = lkv_ggml_type_get((uint32_t)t->type);
    if (!info || !info->readable)
        return lkv_fail(LKV_UNSUPPORTED, "tensor '%s' has type %s, which cannot be dequantized",
                        w->name, info ? info->name : "unknown");
    return LKV_OK;
}

static lkv_status read_tensor(const lkv_gguf *g, const want_tensor *w)
{
    const lkv_gguf_tensor *t = lkv_gguf_find_tensor(g, w->name);
    lkv_status st = lkv_dequant_row((uint32_t)t->type, t->data, lkv_model_mut(w->dst),
                                    w->ne[0] * w->ne[1]);
    if (st != LKV_OK)
        return lkv_fail_context(st, "tensor '%s'", w->name);
    return LKV_OK;
}

static lkv_status check_all(const lkv_gguf *g, const lkv_model *m, int tied, want_tensor *list)
{
    int32_t n = list_tensors(m, tied, list);
    for (int32_t i = 0; i < n; i++) {
        lkv_status st = check_tensor(g, &list[i]);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}

static void set_name(lkv_model *m, const lkv_gguf *g)
{
    lkv_gguf_str name;
    const lkv_gguf_value *v = lkv_gguf_find(g, "general.name");
    if (!v || lkv_gguf_get_str(g, "general.name", &name) != LKV_OK || name.len == 0)
        return;
    /* Escaped: tools print the name and put it in messages. */
    lkv_text_escape(name.ptr, name.len, m->name, sizeof m->name);
}

static lkv_status load_open(lkv_gguf *g, const char *path, lkv_model *m)
{
    lkv_status st = check_arch(g, path);
    if (st == LKV_OK)
        st = read_config(g, path, &m->cfg);
    if (st != LKV_OK)
        return st;
    int tied = lkv_gguf_find_tensor(g, "output.weight") == NULL;
    size_t n_list = 3 + 9 * (size_t)m->cfg.layers;
    want_tensor *list = malloc(n_list * sizeof *list);
    if (!list)
        return lkv_fail(LKV_OUT_OF_MEMORY, "model '%s': out of memory", path);
    st = check_all(g, m, tied, list);
    if (st == LKV_OK)
        st = lkv_model_place(m, tied);
    if (st == LKV_OK) {
        int32_t n = list_tensors(m, tied, list);
        for (int32_t i = 0; i < n && st == LKV_OK; i++)
            st = read_tensor(g, &list[i]);
    }
    free(list);
    if (st != LKV_OK)
        return lkv_fail_context(st, "model '%s'", path);
    set_name(m, g);
    m->file_bytes = lkv_gguf_file_bytes(g);
    return LKV_OK;
}

lkv_status lkv_model_load_gguf(const char *path, lkv_model *m)
{
    lkv_gguf *g = NULL;
    lkv_status st = lkv_gguf_open(path, &g);
    if (st != LKV_OK)
        return st;
    st = load_open(g, path, m);
    if (st != LKV_OK) {
        lkv_gguf_close(g);
        return st;
    }
    m->gguf = g;
    return LKV_OK;
}
