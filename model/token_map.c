#include "token_map.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

#define FNV_OFFSET 2166136261u
#define FNV_PRIME 16777619u

static uint32_t fnv(uint32_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static int same_text(const lkv_gguf_str *t, const char *a, size_t alen, const char *b,
                     size_t blen)
{
    return t->len == alen + blen && (alen == 0 || memcmp(t->ptr, a, alen) == 0) &&
           (blen == 0 || memcmp(t->ptr + alen, b, blen) == 0);
}

/* The slot holding a..b, or the empty slot where it would go. */
static size_t probe(const lkv_token_map *m, uint32_t h, const char *a, size_t alen,
                    const char *b, size_t blen)
{
    size_t i = h & m->mask;
    while (m->slots[i] >= 0) {
        if (m->hashes[i] == h && same_text(&m->texts[m->slots[i]], a, alen, b, blen))
            return i;
        i = (i + 1) & m->mask;
    }
    return i;
}

lkv_status lkv_token_map_build(const lkv_gguf_str *texts, int32_t n, lkv_token_map *out)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    lkv_token_map m = {texts, malloc(cap * sizeof *m.slots), malloc(cap * sizeof *m.hashes),
                       cap - 1};
    if (!m.slots || !m.hashes) {
        lkv_token_map_free(&m);
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for the map of %d token texts", (int)n);
    }
    memset(m.slots, 0xFF, cap * sizeof *m.slots);
    for (int32_t id = 0; id < n; id++) {
        const char *p = texts[id].ptr;
        size_t len = (size_t)texts[id].len;
        uint32_t h = fnv(FNV_OFFSET, p, len);
        size_t i = probe(&m, h, p, len, NULL, 0);
        m.slots[i] = id;
        m.hashes[i] = h;
    }
    *out = m;
    return LKV_OK;
}

void lkv_token_map_free(lkv_token_map *m)
{
    free(m->slots);
    free(m->hashes);
    m->slots = NULL;
    m->hashes = NULL;
}

int32_t lkv_token_map_find2(const lkv_token_map *m, const char *a, size_t alen, const char *b,
                            size_t blen)
{
    uint32_t h = fnv(fnv(FNV_OFFSET, a, alen), b, blen);
    return m->slots[probe(m, h, a, alen, b, blen)];
}
