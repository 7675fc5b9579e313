/* The GGUF reader and the model loader: the input is a file. lkv_gguf_open
 * reads it; every key/value and tensor it reports is read back (strings,
 * array elements, the first and last byte of every tensor), the tokenizer
 * is built from it when it has one, and lkv_model_load loads it as a model.
 * Nothing here may read outside what the reader said is in the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "model.h"

static volatile unsigned sink;

static unsigned touch(const void *p, uint64_t n)
{
    const unsigned char *b = p;
    return n ? (unsigned)b[0] + b[n - 1] : 0;
}

static uint64_t elem_size(lkv_gguf_kind k)
{
    switch (k) {
    case LKV_GGUF_U8: case LKV_GGUF_I8: case LKV_GGUF_BOOL: return 1;
    case LKV_GGUF_U16: case LKV_GGUF_I16: return 2;
    case LKV_GGUF_U32: case LKV_GGUF_I32: case LKV_GGUF_F32: return 4;
    case LKV_GGUF_U64: case LKV_GGUF_I64: case LKV_GGUF_F64: return 8;
    default: return 0;
    }
}

static void read_back(const lkv_gguf *g)
{
    uint64_t size = lkv_gguf_file_bytes(g);
    (void)lkv_gguf_version(g);
    int64_t n_kv = lkv_gguf_kv_count(g);
    for (int64_t i = 0; i < n_kv; i++) {
        lkv_gguf_str key;
        const lkv_gguf_value *v = lkv_gguf_kv_at(g, i, &key);
        if (!v || key.len > size)
            abort();
        sink += touch(key.ptr, key.len);
        if (v->kind == LKV_GGUF_STRING) {
            sink += touch(v->as.s.ptr, v->as.s.len);
        } else if (v->kind == LKV_GGUF_ARRAY && v->elem_kind == LKV_GGUF_STRING) {
            for (uint64_t k = 0; k < v->count; k++)
                sink += touch(v->strings[k].ptr, v->strings[k].len);
        } else if (v->kind == LKV_GGUF_ARRAY && v->count > 0) {
            uint64_t bytes = v->count * elem_size(v->elem_kind);
            if (bytes > size || (bytes && !v->data))
                abort();
            sink += touch(v->data, bytes);
        }
        /* Looking a key up by its own name finds a value of that name. */
        char name[128];
        if (key.len < sizeof name && !memchr(key.ptr, 0, key.len)) {
            memcpy(name, key.ptr, key.len);
            name[key.len] = '\0';
            if (!lkv_gguf_find(g, name))
                abort();
            int64_t iv;
            double rv;
            lkv_gguf_str sv;
            const lkv_gguf_value *av;
            (void)lkv_gguf_get_int(g, name, INT64_MIN, INT64_MAX, &iv);
            (void)lkv_gguf_get_int(g, name, 1, 1024, &iv);
            (void)lkv_gguf_get_real(g, name, &rv);
            (void)lkv_gguf_get_str(g, name, &sv);
            (void)lkv_gguf_get_array(g, name, LKV_GGUF_ARRAY, &av);
        }
    }
    if (lkv_gguf_kv_at(g, n_kv, NULL) || lkv_gguf_kv_at(g, -1, NULL))
        abort();
    int64_t n_t = lkv_gguf_tensor_count(g);
    for (int64_t i = 0; i < n_t; i++) {
        const lkv_gguf_tensor *t = lkv_gguf_tensor_at(g, i);
        if (!t || t->bytes > size || t->n_dims < 1 || t->n_dims > 4)
            abort();
        sink += touch(t->data, t->bytes);
        if (lkv_gguf_find_tensor(g, t->name) == NULL)
            abort();
    }
}

static void use_tokenizer(const lkv_gguf *g)
{
    lkv_tokenizer *tok = NULL;
    if (lkv_tokenizer_from_gguf(g, &tok) != LKV_OK)
        return;
    static const char text[] = "<|im_start|>user\nHi there, 12 + 7?<|im_end|>\n \xC3\xA9\xE4\xB8\xAD";
    for (int special = 0; special < 2; special++) {
        int32_t *ids = NULL, n = 0;
        if (lkv_tokenizer_encode(tok, text, sizeof text - 1, special, &ids, &n) == LKV_OK) {
            for (int32_t i = 0; i < n; i++) {
                char piece[32];
                size_t len;
                (void)lkv_tokenizer_piece(tok, ids[i], special, piece, sizeof piece, &len);
            }
            free(ids);
        }
    }
    char *chat = NULL;
    if (lkv_chat_render(tok, NULL, "What is 2+2?", &chat) == LKV_OK)
        free(chat);
    (void)lkv_tokenizer_bos(tok);
    (void)lkv_tokenizer_is_end(tok, lkv_tokenizer_eos(tok));
    lkv_tokenizer_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file(data, size);
    lkv_gguf *g = NULL;
    if (lkv_gguf_open(path, &g) == LKV_OK) {
        read_back(g);
        use_tokenizer(g);
        lkv_gguf_close(g);
    }
    lkv_model *m = NULL;
    if (lkv_model_load(path, &m) == LKV_OK) {
        lkv_cache_config cfg;
        lkv_cache_config_init(&cfg);
        lkv_model_cache_shape(m, &cfg);
        if (m->cfg.vocab < 1 || m->cfg.layers < 1 || !m->embed || !m->classifier)
            abort();
        /* The weights are the file's tensors dequantized once each: at most
         * 128 bytes of f32 per 18-byte q4_0 block, plus the arena's 64-byte
         * alignment of each weight group. More means bytes counted twice. */
        uint64_t most = size / 18 * 128 + 64 * (6 * (uint64_t)m->cfg.layers + 4);
        if (m->weight_bytes > most) {
            fprintf(stderr, "fuzz_gguf: a %zu-byte file gave %zu bytes of weights (at most %llu)\n",
                    size, m->weight_bytes, (unsigned long long)most);
            abort();
        }
        size_t row = (size_t)m->cfg.vocab * (size_t)m->cfg.dim * sizeof(float);
        sink += touch(m->embed, row) + touch(m->classifier, row) +
                touch(m->layers[m->cfg.layers - 1].w_down,
                      (size_t)m->cfg.dim * (size_t)m->cfg.ffn_dim * sizeof(float));
        lkv_model_free(m);
    }
    return 0;
}
