/* The llama2.c checkpoint loader (through lkv_model_load, which takes any
 * file without the GGUF magic for one).
 *
 * Input: one selector byte, then
 *   bit 0 clear: the file itself;
 *   bit 0 set: a header of 7 little-endian int32 (dim, hidden_dim,
 *     n_layers, n_heads, n_kv_heads, vocab_size, seq_len), then body bytes
 *     repeated to the size the header implies, give or take a few bytes
 *     (bits 1-3: exact, -1, +1, -4, +4, -28, exact, exact), so mutations
 *     of the shape reach the tensor reads instead of the size check. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "model.h"

#define HEADER 28
#define MAX_SHAPED (4u << 20)

static volatile unsigned sink;

static int32_t le32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* The file size the header implies (model_llama2c.c's layout), or 0 when a
 * field is out of the range a loadable model can have. */
static uint64_t implied_bytes(const uint8_t *h)
{
    int64_t dim = le32(h), hidden = le32(h + 4), layers = le32(h + 8), heads = le32(h + 12);
    int64_t kv_heads = le32(h + 16), vocab = le32(h + 20), seq = le32(h + 24);
    if (dim <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || seq <= 0 ||
        vocab == 0 || vocab == INT32_MIN || dim % heads != 0 || dim > 65536 || hidden > 65536 ||
        layers > 64 || kv_heads > heads || seq > 65536)
        return 0;
    uint64_t d = (uint64_t)dim, f = (uint64_t)hidden, L = (uint64_t)layers;
    uint64_t hd = d / (uint64_t)heads, kvd = (uint64_t)kv_heads * hd;
    uint64_t v = (uint64_t)(vocab < 0 ? -vocab : vocab);
    uint64_t n = v * d + L * d + 2 * L * d * d + 2 * L * kvd * d + L * d + 3 * L * f * d + d +
                 (uint64_t)seq * hd + (vocab < 0 ? v * d : 0);
    return HEADER + n * 4;
}

static void touch_model(const lkv_model *m)
{
    const lkv_model_config *c = &m->cfg;
    const float *last[] = {m->embed + (size_t)c->vocab * (size_t)c->dim - 1,
                           m->classifier + (size_t)c->vocab * (size_t)c->dim - 1,
                           m->out_norm + c->dim - 1,
                           m->layers[c->layers - 1].w_up + (size_t)c->ffn_dim * (size_t)c->dim - 1};
    for (size_t i = 0; i < sizeof last / sizeof last[0]; i++) {
        unsigned char b[4];
        memcpy(b, last[i], 4);
        sink += b[0];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++;
    size--;
    uint8_t *shaped = NULL;
    if ((sel & 1) && size >= HEADER) {
        static const int64_t deltas[] = {0, -1, 1, -4, 4, -HEADER, 0, 0};
        uint64_t want = implied_bytes(data);
        int64_t total = want ? (int64_t)want + deltas[(sel >> 1) & 7] : 0;
        if (total >= HEADER && (uint64_t)total <= MAX_SHAPED) {
            shaped = malloc((size_t)total);
            if (!shaped)
                abort();
            memcpy(shaped, data, HEADER);
            const uint8_t *body = data + HEADER;
            size_t body_n = size - HEADER;
            for (size_t i = HEADER; i < (size_t)total; i++)
                shaped[i] = body_n ? body[(i - HEADER) % body_n] : (uint8_t)i;
            data = shaped;
            size = (size_t)total;
        }
    }
    lkv_model *m = NULL;
    if (lkv_model_load(fz_file(data, size), &m) == LKV_OK) {
        if (m->format == LKV_MODEL_LLAMA2C && m->gguf)
            abort();
        touch_model(m);
        lkv_cache_config cfg;
        lkv_cache_config_init(&cfg);
        lkv_model_cache_shape(m, &cfg);
        lkv_model_free(m);
    }
    free(shaped);
    return 0;
}
