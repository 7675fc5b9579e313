#include "bpe.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "text_escape.h"
#include "unicode.h"

#define EMPTY_KEY UINT64_MAX

typedef struct merge_slot {
    uint64_t key; /* left << 32 | right, EMPTY_KEY where unused */
    int32_t rank;
    int32_t merged;
} merge_slot;

struct lkv_bpe {
    merge_slot *slots;
    size_t mask;
    int32_t byte_token[256]; /* -1: the vocabulary lacks that byte */
};

/* A symbol of the piece being merged: a token over a run of bytes, linked to
 * its neighbours; id -1 once merged into its left neighbour. */
typedef struct lkv_bpe_symbol {
    int32_t id;
    int32_t prev, next;
} bpe_symbol;

/* A candidate merge of symbols left and right, valid while they still hold
 * the ids it was made from. */
typedef struct lkv_bpe_pair {
    int32_t rank;
    int32_t left, right;
    int32_t left_id, right_id;
    int32_t merged;
} bpe_pair;

lkv_status lkv_ids_push(lkv_ids *ids, int32_t id)
{
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v)
            return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for %zu token ids", cap);
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return LKV_OK;
}

static uint64_t pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

static size_t key_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key;
}

static const merge_slot *find_merge(const lkv_bpe *bpe, int32_t left, int32_t right)
{
    uint64_t key = pair_key(left, right);
    for (size_t i = key_hash(key) & bpe->mask;; i = (i + 1) & bpe->mask) {
        if (bpe->slots[i].key == key)
            return &bpe->slots[i];
        if (bpe->slots[i].key == EMPTY_KEY)
            return NULL;
    }
}

/* The first of two equal pairs keeps its rank, as in llama.cpp. */
static void add_merge(lkv_bpe *bpe, int32_t left, int32_t right, int32_t rank, int32_t merged)
{
    uint64_t key = pair_key(left, right);
    size_t i = key_hash(key) & bpe->mask;
    while (bpe->slots[i].key != EMPTY_KEY && bpe->slots[i].key != key)
        i = (i + 1) & bpe->mask;
    if (bpe->slots[i].key == key)
        return;
    bpe->slots[i] = (merge_slot){key, rank, merged};
}

static lkv_status parse_merge(const lkv_gguf_str *m, uint64_t index, const lkv_token_map *map,
                              int32_t out_ids[3])
{
    const char *s = m->ptr;
    size_t len = (size_t)m->len;
    /* Byte-level tokens hold no space, so the first one after the first
     * character separates the two. */
    const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    char shown[LKV_ESCAPE_CAP];
    if (!sp)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tokenizer.ggml.merges[%llu] '%s' is not two tokens separated by a space",
                        (unsigned long long)index, lkv_text_escape(s, len, shown, sizeof shown));
    size_t llen = (size_t)(sp - s), rlen = len - llen - 1;
    out_ids[0] = lkv_token_map_find2(map, s, llen, NULL, 0);
    out_ids[1] = lkv_token_map_find2(map, sp + 1, rlen, NULL, 0);
    out_ids[2] = lkv_token_map_find2(map, s, llen, sp + 1, rlen);
    const char *missing = out_ids[0] < 0 ? "its left token" : out_ids[1] < 0 ? "its right token"
                          : out_ids[2] < 0 ? "the merged token" : NULL;
    if (missing)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tokenizer.ggml.merges[%llu] '%s' names a token not in the vocabulary "
                        "(%s)",
                        (unsigned long long)index, lkv_text_escape(s, len, shown, sizeof shown),
                        missing);
    return LKV_OK;
}

static void find_byte_tokens(lkv_bpe *bpe, const lkv_token_map *map)
{
    for (int b = 0; b < 256; b++) {
        unsigned char utf8[4];
        size_t n = lkv_utf8_encode(lkv_byte_to_unicode((uint8_t)b), utf8);
        bpe->byte_token[b] = lkv_token_map_find2(map, (const char *)utf8, n, NULL, 0);
    }
}

lkv_status lkv_bpe_create(const lkv_gguf_str *merges, uint64_t n_merges, const lkv_token_map *map,
                          lkv_bpe **out_bpe)
{
    if (n_merges > INT32_MAX / 4)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tokenizer.ggml.merges has %llu entries (at most %d)",
                        (unsigned long long)n_merges, INT32_MAX / 4);
    size_t cap = 16;
    while (cap < 2 * (size_t)n_merges)
        cap *= 2;
    lkv_bpe *bpe = calloc(1, sizeof *bpe);
    merge_slot *slots = malloc(cap * sizeof *slots);
    if (!bpe || !slots) {
        free(bpe);
        free(slots);
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for %llu merges",
                        (unsigned long long)n_merges);
    }
    for (size_t i = 0; i < cap; i++)
        slots[i].key = EMPTY_KEY;
    bpe->slots = slots;
    bpe->mask = cap - 1;
    for (uint64_t i = 0; i < n_merges; i++) {
        int32_t ids[3] = {-1, -1, -1};
        lkv_status st = parse_merge(&merges[i], i, map, ids);
        if (st != LKV_OK) {
            lkv_bpe_free(bpe);
            return st;
        }
        add_merge(bpe, ids[0], ids[1], (int32_t)i, ids[2]);
    }
    find_byte_tokens(bpe, map);
    *out_bpe = bpe;
    return LKV_OK;
}

size_t lkv_bpe_untokenizable(const lkv_bpe *bpe, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    while (i < len && bpe->byte_token[p[i]] >= 0)
        i++;
    return i;
}

void lkv_bpe_free(lkv_bpe *bpe)
{
    if (!bpe)
        return;
    free(bpe->slots);
    free(bpe);
}

void lkv_bpe_work_free(lkv_bpe_work *w)
{
    free(w->sym);
    free(w->heap);
    w->sym = NULL;
    w->heap = NULL;
    w->cap = 0;
}

/* Room for a piece of n bytes: n symbols, and at most 3n candidate pairs
 * (n - 1 at the start, two more per merge). */
static lkv_status reserve(lkv_bpe_work *w, size_t n)
{
    if (n <= w->cap)
        return LKV_OK;
    if (n > INT32_MAX / 3)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "a pre-tokenized piece of %zu bytes is too long for BPE (at most %d)", n,
                        INT32_MAX / 3);
    bpe_symbol *sym = malloc(n * sizeof *sym);
    bpe_pair *heap = malloc(3 * n * sizeof *heap);
    if (!sym || !heap) {
        free(sym);
        free(heap);
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory to encode a piece of %zu bytes", n);
    }
    lkv_bpe_work_free(w);
    w->sym = sym;
    w->heap = heap;
    w->cap = n;
    return LKV_OK;
}

static int pair_before(const bpe_pair *a, const bpe_pair *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpe_pair *heap, size_t *n, bpe_pair p)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pair_before(&p, &heap[parent]))
            break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = p;
}

static bpe_pair heap_pop(bpe_pair *heap, size_t *n)
{
    bpe_pair top = heap[0];
    bpe_pair last = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && pair_before(&heap[c + 1], &heap[c]))
            c++;
        if (!pair_before(&heap[c], &last))
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (*n > 0)
        heap[i] = last;
    return top;
}

static void offer_pair(const lkv_bpe *bpe, lkv_bpe_work *w, size_t *n_heap, int32_t left,
                       int32_t right)
{
    const merge_slot *m = find_merge(bpe, w->sym[left].id, w->sym[right].id);
    if (m)
        heap_push(w->heap, n_heap,
                  (bpe_pair){m->rank, left, right, w->sym[left].id, w->sym[right].id, m->merged});
}

static int pair_is_current(const lkv_bpe_work *w, const bpe_pair *p)
{
    const bpe_symbol *l = &w->sym[p->left];
    return l->id == p->left_id && l->next == p->right && w->sym[p->right].id == p->right_id;
}

static void merge_all(const lkv_bpe *bpe, lkv_bpe_work *w, size_t n)
{
    size_t n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        offer_pair(bpe, w, &n_heap, (int32_t)i, (int32_t)(i + 1));
    while (n_heap > 0) {
        bpe_pair p = heap_pop(w->heap, &n_heap);
        if (!pair_is_current(w, &p))
            continue;
        bpe_symbol *l = &w->sym[p.left];
        int32_t after = w->sym[p.right].next;
        l->id = p.merged;
        l->next = after;
        w->sym[p.right].id = -1;
        if (after >= 0)
            w->sym[after].prev = p.left;
        if (l->prev >= 0)
            offer_pair(bpe, w, &n_heap, l->prev, p.left);
        if (after >= 0)
            offer_pair(bpe, w, &n_heap, p.left, after);
    }
}

lkv_status lkv_bpe_encode(const lkv_bpe *bpe, lkv_bpe_work *w, const char *piece, size_t len,
                          lkv_ids *out)
{
    if (len == 0)
        return LKV_OK;
    lkv_status st = reserve(w, len);
    if (st != LKV_OK)
        return st;
    const unsigned char *p = (const unsigned char *)piece;
    for (size_t i = 0; i < len; i++) {
        int32_t id = bpe->byte_token[p[i]];
        if (id < 0)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "byte 0x%02x has no token: the vocabulary lacks its byte-level "
                            "character U+%04X",
                            p[i], (unsigned)lkv_byte_to_unicode(p[i]));
        w->sym[i] = (bpe_symbol){id, (int32_t)i - 1, i + 1 < len ? (int32_t)(i + 1) : -1};
    }
    merge_all(bpe, w, len);
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
        st = lkv_ids_push(out, w->sym[i].id);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}
