/* Case buffers: host images of every device buffer an op touches, filled with
 * a sentinel wherever the op must neither read nor write, so that what a
 * backend writes out of bounds shows up when the image is read back. */
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

uint32_t conf_sentinel(size_t off)
{
    /* 0xA5 top byte: as f32 a tiny negative number (-1e-16), as an index a
     * negative int, as f16 halves -0.02 ish (as bf16 -1e-16 ish): never a
     * value an op produces by accident. */
    return 0xA5000000u | (uint32_t)((((off / 4) * 2654435761u) >> 8) & 0x00FFFFFFu);
}

static void fill_sentinel(unsigned char *p, size_t bytes)
{
    for (size_t off = 0; off + 4 <= bytes; off += 4) {
        uint32_t w = conf_sentinel(off);
        memcpy(p + off, &w, 4);
    }
    for (size_t off = bytes & ~(size_t)3; off < bytes; off++)
        p[off] = 0xA5;
}

void conf_case_init(conf_case *c, lkv_runtime *oracle, lkv_runtime *tested)
{
    memset(c, 0, sizeof *c);
    c->rt[CONF_ORACLE] = oracle;
    c->rt[CONF_TESTED] = tested;
}

void conf_case_free(conf_case *c)
{
    for (int i = 0; i < c->count; i++) {
        conf_image *im = &c->img[i];
        for (int s = 0; s < 2; s++) {
            if (c->dev[s][i])
                c->rt[s]->ops->free(c->rt[s]->dev, c->dev[s][i]);
            free(im->got[s]);
        }
        free(im->host);
        free(im->writable);
    }
    c->count = 0;
}

int conf_add_image(conf_case *c, const char *name, conf_elem elem, int32_t rows,
                   int32_t capacity, size_t slot_bytes)
{
    if (c->failed_alloc || c->count == CONF_MAX_IMAGES) {
        c->failed_alloc = 1;
        return -1;
    }
    conf_image *im = &c->img[c->count];
    memset(im, 0, sizeof *im);
    im->name = name;
    im->elem = elem;
    im->rows = rows;
    im->capacity = capacity;
    im->slot_bytes = slot_bytes;
    im->bytes = (size_t)rows * (size_t)capacity * slot_bytes;
    im->host = malloc(im->bytes + CONF_PAD_BYTES);
    im->writable = calloc((size_t)rows + 1, sizeof *im->writable);
    if (!im->host || !im->writable) {
        free(im->host);
        free(im->writable);
        c->failed_alloc = 1;
        return -1;
    }
    fill_sentinel(im->host, im->bytes + CONF_PAD_BYTES);
    return c->count++;
}

void *conf_host(conf_case *c, int idx)
{
    return idx < 0 ? NULL : c->img[idx].host;
}

void *conf_slot(conf_case *c, int idx, int32_t row, int32_t slot)
{
    if (idx < 0)
        return NULL;
    conf_image *im = &c->img[idx];
    return im->host + ((size_t)row * (size_t)im->capacity + (size_t)slot) * im->slot_bytes;
}

void conf_allow(conf_case *c, int idx, int32_t row, int32_t slots)
{
    if (idx < 0)
        return;
    c->img[idx].writable[row] = slots;
    c->img[idx].read_back = 1;
}

void conf_watch(conf_case *c, int idx)
{
    if (idx >= 0)
        c->img[idx].read_back = 1;
}

lkv_buffer *conf_dev(const conf_case *c, int side, int idx)
{
    return idx < 0 ? NULL : c->dev[side][idx];
}

int conf_add_cache(conf_case *c, int32_t rows, int32_t capacity, int32_t head_dim,
                   lkv_dtype dtype)
{
    size_t kv_slot = (size_t)head_dim * lkv_dtype_size(dtype);
    conf_elem kv_elem = dtype == LKV_DTYPE_F16    ? CONF_ELEM_F16
                        : dtype == LKV_DTYPE_BF16 ? CONF_ELEM_BF16
                                                  : CONF_ELEM_F32;
    int base = conf_add_image(c, "k", kv_elem, rows, capacity, kv_slot);
    conf_add_image(c, "v", kv_elem, rows, capacity, kv_slot);
    conf_add_image(c, "pos", CONF_ELEM_I32, rows, capacity, 4);
    conf_add_image(c, "state_a", CONF_ELEM_I32, rows, capacity, 4);
    conf_add_image(c, "state_b", CONF_ELEM_I32, rows, capacity, 4);
    conf_add_image(c, "state_f", CONF_ELEM_F32, rows, capacity, 4);
    return c->failed_alloc ? -1 : base;
}

lkv_cache_buffers conf_cache_view(const conf_case *c, int side, int base, int32_t capacity,
                                  int32_t head_dim, lkv_dtype dtype)
{
    return (lkv_cache_buffers){
        .k = conf_dev(c, side, base + CONF_K),
        .v = conf_dev(c, side, base + CONF_V),
        .pos = conf_dev(c, side, base + CONF_POS),
        .state_a = conf_dev(c, side, base + CONF_STATE_A),
        .state_b = conf_dev(c, side, base + CONF_STATE_B),
        .state_f = conf_dev(c, side, base + CONF_STATE_F),
        .capacity = capacity,
        .head_dim = head_dim,
        .dtype = dtype,
    };
}
