/* The block pool of a paged cache (pages.h). */
#include "pages.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"

struct lkv_pages {
    int32_t block;     /* slots per block */
    int32_t n_blocks;  /* the pool */
    int32_t per_row;   /* the most a row holds: ceil(capacity / block) */
    int32_t *free_ids; /* a stack of the free blocks, n_free of them */
    int32_t n_free;
    int32_t *refs;     /* [n_blocks] rows holding each block */
    int32_t *table;    /* [rows][per_row] each row's blocks, in the order taken */
    int32_t *held;     /* [rows] how many */
    /* [rows] map entries the row's blocks fill: held * block but at most
     * the capacity (a row's map has that many entries), so one block may
     * have places the row never uses */
    int32_t *places;
    int32_t *map;      /* [capacity] one row's map, read and patched here */
    int32_t *run;      /* trim's maps of a run of rows, grown on demand */
    size_t run_cap;    /* entries */
    unsigned char *mark; /* [n_blocks] trim's scratch, all 0 between calls */
};

static void account(lkv_cache *c)
{
    const lkv_pages *p = c->pages;
    c->stats.pool_blocks = p->n_blocks;
    c->stats.blocks_in_use = p->n_blocks - p->n_free;
    if (c->stats.blocks_in_use > c->stats.blocks_peak)
        c->stats.blocks_peak = c->stats.blocks_in_use;
}

lkv_status lkv_pages_create(lkv_cache *c)
{
    if (c->cfg.placement != LKV_PLACEMENT_PAGED)
        return LKV_OK;
    lkv_pages *p = calloc(1, sizeof *p);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the block pool");
    c->pages = p;
    size_t rows = (size_t)c->cfg.sequences * (size_t)c->cfg.layers * (size_t)c->heads;
    p->block = c->cfg.block_size;
    p->n_blocks = c->cfg.pool_blocks;
    p->per_row = (c->cfg.capacity + p->block - 1) / p->block;
    p->free_ids = malloc(sizeof(int32_t) * (size_t)p->n_blocks);
    p->refs = calloc((size_t)p->n_blocks, sizeof(int32_t));
    p->table = malloc(sizeof(int32_t) * rows * (size_t)p->per_row);
    p->held = calloc(rows, sizeof(int32_t));
    p->places = calloc(rows, sizeof(int32_t));
    p->map = malloc(sizeof(int32_t) * (size_t)c->cfg.capacity);
    p->mark = calloc((size_t)p->n_blocks, 1);
    if (!p->free_ids || !p->refs || !p->table || !p->held || !p->places || !p->map || !p->mark)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a pool of %d blocks",
                        p->n_blocks);
    /* popped from the top: block 0 first, so a fresh cache fills the pool
     * from its start */
    for (int32_t i = 0; i < p->n_blocks; i++)
        p->free_ids[i] = p->n_blocks - 1 - i;
    p->n_free = p->n_blocks;
    account(c);
    return LKV_OK;
}

void lkv_pages_destroy(lkv_pages *p)
{
    if (!p)
        return;
    free(p->free_ids);
    free(p->refs);
    free(p->table);
    free(p->held);
    free(p->places);
    free(p->map);
    free(p->run);
    free(p->mark);
    free(p);
}

static int32_t *row_table(const lkv_pages *p, int32_t row)
{
    return p->table + (size_t)row * (size_t)p->per_row;
}

static size_t map_offset(const lkv_cache *c, int32_t row)
{
    return (size_t)row * (size_t)c->cfg.capacity * sizeof(int32_t);
}

/* Map entries [first, first + n) of `row` (past its end: the next rows')
 * to and from map[first ..]: p->map for one row, trim's run for several. */
static lkv_status read_map(lkv_cache *c, int32_t row, int32_t first, size_t n, int32_t *map)
{
    return c->ops->read(c->dev, c->buf.phys, map_offset(c, row) + (size_t)first * 4,
                        map + first, n * 4);
}

static lkv_status write_map(lkv_cache *c, int32_t row, int32_t first, size_t n,
                            const int32_t *map)
{
    return c->ops->write(c->dev, c->buf.phys, map_offset(c, row) + (size_t)first * 4,
                         map + first, n * 4);
}

static void give_back(lkv_pages *p, int32_t block)
{
    if (--p->refs[block] == 0)
        p->free_ids[p->n_free++] = block;
}

/* Distinct shared blocks among map entries [from, to) of the row, read
 * into p->map; marks them (the caller clears). */
static int32_t count_shared(lkv_cache *c, int32_t from, int32_t to)
{
    lkv_pages *p = c->pages;
    int32_t n = 0;
    for (int32_t j = from; j < to; j++) {
        int32_t b = p->map[j] / p->block;
        if (p->refs[b] > 1 && !p->mark[b]) {
            p->mark[b] = 1;
            n++;
        }
    }
    return n;
}

static void clear_marks(lkv_cache *c, int32_t from, int32_t to)
{
    lkv_pages *p = c->pages;
    for (int32_t j = from; j < to; j++)
        p->mark[p->map[j] / p->block] = 0;
}

static int row_has_shared(const lkv_pages *p, int32_t row)
{
    const int32_t *tab = row_table(p, row);
    for (int32_t i = 0; i < p->held[row]; i++)
        if (p->refs[tab[i]] > 1)
            return 1;
    return 0;
}

/* What one row needs for tokens [len, len + count): blocks past its places
 * and copies of the shared blocks among its free places they land in (the
 * map entries read into p->map). */
static lkv_status row_need(lkv_cache *c, int32_t row, int32_t len, int32_t count,
                           int64_t *out_need)
{
    lkv_pages *p = c->pages;
    int32_t places = p->places[row], end = len + count;
    int32_t grow = end > places ? (end - places + p->block - 1) / p->block : 0;
    int32_t last = end < places ? end : places;
    *out_need = grow;
    if (last <= len)
        return LKV_OK;
    if (!row_has_shared(p, row))
        return LKV_OK;
    lkv_status st = read_map(c, row, len, (size_t)(last - len), p->map);
    if (st != LKV_OK)
        return st;
    *out_need += count_shared(c, len, last);
    clear_marks(c, len, last);
    return LKV_OK;
}

/* Blocks that storing counts[i] tokens into `layer` of sequence seqs[i]
 * would take from the pool (new blocks past each row's places, and copies
 * of shared blocks the tokens would land in), into *out_need. With
 * `worst`, a sequence whose layer is full (an early eviction comes first,
 * its freed places unknown yet) counts what is left to grow and a copy per
 * token and head. */
static lkv_status pages_need(lkv_cache *c, const int32_t *seqs, const int32_t *counts,
                             int32_t n, int32_t layer, int worst, int64_t *out_need)
{
    int64_t need = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t len = c->seqs[seqs[i]].len[layer];
        int full = worst && len + counts[i] > c->cfg.capacity;
        for (int32_t h = 0; h < c->heads; h++) {
            int32_t row = lkv_row_of(c, seqs[i], layer, h);
            int64_t one = 0;
            if (full) /* room is made first: what is left to grow, a copy a token */
                one = c->pages->per_row - c->pages->held[row] +
                      (row_has_shared(c->pages, row) ? counts[i] : 0);
            else {
                lkv_status st = row_need(c, row, len, counts[i], &one);
                if (st != LKV_OK)
                    return st;
            }
            need += one;
        }
    }
    *out_need = need;
    return LKV_OK;
}

/* The pool holds what the listed stores need (pages_need), or
 * OUT_OF_MEMORY naming the counts; `call` starts the message. */
static lkv_status pool_holds(lkv_cache *c, const int32_t *seqs, const int32_t *counts, int32_t n,
                             int32_t layer, int worst, const char *call)
{
    int64_t need = 0;
    lkv_status st = pages_need(c, seqs, counts, n, layer, worst, &need);
    if (st == LKV_OK && need > c->pages->n_free)
        st = lkv_fail(LKV_OUT_OF_MEMORY,
                      "%s: layer %d needs %lld blocks of %d slots and the pool has %d free of "
                      "%d (pool_blocks): finish or reset a sequence, or make the pool larger",
                      call, layer, (long long)need, c->pages->block, c->pages->n_free,
                      c->pages->n_blocks);
    return st;
}

lkv_status lkv_pages_check(lkv_cache *c, const int32_t *seqs, const int32_t *counts, int32_t n,
                           int32_t layer, const char *call)
{
    return c->pages ? pool_holds(c, seqs, counts, n, layer, 1, call) : LKV_OK;
}

/* Blocks for places [places, end) of the row (end <= capacity), its map
 * entries the new blocks' places in order. */
static lkv_status grow_row(lkv_cache *c, int32_t row, int32_t end)
{
    lkv_pages *p = c->pages;
    int32_t first = p->places[row], at = first;
    while (at < end) {
        int32_t b = p->free_ids[--p->n_free];
        p->refs[b] = 1;
        row_table(p, row)[p->held[row]++] = b;
        for (int32_t o = 0; o < p->block && at < c->cfg.capacity; o++)
            p->map[at++] = b * p->block + o;
    }
    p->places[row] = at;
    return at > first ? write_map(c, row, first, (size_t)(at - first), p->map) : LKV_OK;
}

/* A private copy of shared block `old` for the row: K/V copied, the table
 * and every map entry of the row that pointed into it moved. */
static lkv_status copy_block(lkv_cache *c, int32_t row, int32_t old)
{
    lkv_pages *p = c->pages;
    int32_t b = p->free_ids[--p->n_free];
    p->refs[b] = 1;
    p->refs[old]--; /* shared: another row still holds it */
    size_t bytes = (size_t)p->block * (size_t)c->buf.head_dim * lkv_dtype_size(c->buf.dtype);
    lkv_status st = c->ops->copy(c->dev, c->buf.k, (size_t)b * bytes, c->buf.k,
                                 (size_t)old * bytes, bytes);
    if (st == LKV_OK)
        st = c->ops->copy(c->dev, c->buf.v, (size_t)b * bytes, c->buf.v, (size_t)old * bytes,
                          bytes);
    int32_t *tab = row_table(p, row);
    for (int32_t i = 0; i < p->held[row]; i++)
        if (tab[i] == old)
            tab[i] = b;
    int32_t places = p->places[row];
    if (st == LKV_OK)
        st = read_map(c, row, 0, (size_t)places, p->map);
    for (int32_t j = 0; j < places && st == LKV_OK; j++)
        if (p->map[j] / p->block == old)
            p->map[j] = b * p->block + p->map[j] % p->block;
    return st == LKV_OK ? write_map(c, row, 0, (size_t)places, p->map) : st;
}

/* Copies of the shared blocks that places [len, end) of the row lie in.
 * copy_block leaves the whole row's map, patched, in p->map, so the
 * entries still to look at are current. */
static lkv_status unshare(lkv_cache *c, int32_t row, int32_t len, int32_t end)
{
    lkv_pages *p = c->pages;
    if (end <= len || !row_has_shared(p, row))
        return LKV_OK;
    lkv_status st = read_map(c, row, len, (size_t)(end - len), p->map);
    for (int32_t j = len; j < end && st == LKV_OK; j++)
        if (p->refs[p->map[j] / p->block] > 1)
            st = copy_block(c, row, p->map[j] / p->block);
    return st;
}

lkv_status lkv_pages_prepare(lkv_cache *c, const int32_t *seqs, const int32_t *counts, int32_t n,
                             int32_t layer)
{
    lkv_pages *p = c->pages;
    if (!p)
        return LKV_OK;
    /* the call's lkv_pages_check made sure at worst; this is the exact need */
    lkv_status st = pool_holds(c, seqs, counts, n, layer, 0, "store");
    for (int32_t i = 0; i < n && st == LKV_OK; i++) {
        int32_t len = c->seqs[seqs[i]].len[layer], end = len + counts[i];
        for (int32_t h = 0; h < c->heads && st == LKV_OK; h++) {
            int32_t row = lkv_row_of(c, seqs[i], layer, h);
            int32_t places = p->places[row];
            st = unshare(c, row, len, end < places ? end : places);
            if (st == LKV_OK)
                st = grow_row(c, row, end);
        }
    }
    account(c);
    return st;
}

/* The fewest places a block gives a row: a whole block, or the places
 * of one cut at the capacity. A row with fewer free places than this
 * cannot have an empty block. */
static int32_t fewest_places(const lkv_cache *c)
{
    int32_t cut = c->cfg.capacity % c->pages->block;
    return cut ? cut : c->pages->block;
}

/* One row after its eviction kept k slots, its map (all `places`
 * entries) in `map`: blocks with no kept place go back (mark 2), and the
 * free places left are rewritten after the kept ones. A row's table never
 * holds a block twice, so clearing the marks over it clears them all. */
static lkv_status trim_row(lkv_cache *c, int32_t row, int32_t k, int32_t *map)
{
    lkv_pages *p = c->pages;
    int32_t places = p->places[row], held = p->held[row];
    int32_t *tab = row_table(p, row), kept_blocks = 0;
    for (int32_t j = 0; j < k; j++)
        p->mark[map[j] / p->block] = 1;
    for (int32_t i = 0; i < held; i++)
        if (!p->mark[tab[i]])
            p->mark[tab[i]] = 2;
    int32_t free_at = k;
    for (int32_t j = k; j < places; j++)
        if (p->mark[map[j] / p->block] != 2)
            map[free_at++] = map[j];
    for (int32_t i = 0; i < held; i++) {
        int32_t b = tab[i];
        if (p->mark[b] == 2)
            give_back(p, b);
        else
            tab[kept_blocks++] = b;
        p->mark[b] = 0;
    }
    p->held[row] = kept_blocks;
    p->places[row] = free_at;
    return kept_blocks < held ? write_map(c, row, k, (size_t)(free_at - k), map) : LKV_OK;
}

/* rows[first..end) are consecutive row ids (an eviction lists a sequence's
 * layers and heads in order): their maps come back in one read, so a GPU
 * waits once per run rather than once per row. */
static lkv_status trim_run(lkv_cache *c, const int32_t *rows, const int32_t *row_k,
                           int32_t first, int32_t end)
{
    lkv_pages *p = c->pages;
    int32_t any = 0;
    for (int32_t i = first; i < end && !any; i++)
        any = p->places[rows[i]] - row_k[i] >= fewest_places(c);
    if (!any)
        return LKV_OK;
    size_t cap = (size_t)c->cfg.capacity, n = (size_t)(end - first) * cap;
    if (n > p->run_cap) {
        int32_t *grown = realloc(p->run, n * sizeof(int32_t));
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %zu map entries", n);
        p->run = grown;
        p->run_cap = n;
    }
    lkv_status st = read_map(c, rows[first], 0, n, p->run);
    for (int32_t i = first; i < end && st == LKV_OK; i++)
        if (p->places[rows[i]] - row_k[i] >= fewest_places(c))
            st = trim_row(c, rows[i], row_k[i], p->run + (size_t)(i - first) * cap);
    return st;
}

lkv_status lkv_pages_trim(lkv_cache *c, const int32_t *rows, const int32_t *row_k, int32_t n)
{
    if (!c->pages)
        return LKV_OK;
    lkv_status st = LKV_OK;
    for (int32_t i = 0, end; i < n && st == LKV_OK; i = end) {
        for (end = i + 1; end < n && rows[end] == rows[end - 1] + 1; end++)
            ;
        st = trim_run(c, rows, row_k, i, end);
    }
    account(c);
    return st;
}

void lkv_pages_release(lkv_cache *c, int32_t seq)
{
    lkv_pages *p = c->pages;
    if (!p)
        return;
    int32_t first = lkv_row_of(c, seq, 0, 0), rows = c->cfg.layers * c->heads;
    for (int32_t r = first; r < first + rows; r++) {
        for (int32_t i = 0; i < p->held[r]; i++)
            give_back(p, row_table(p, r)[i]);
        p->held[r] = 0;
        p->places[r] = 0;
    }
    account(c);
}

void lkv_pages_share(lkv_cache *c, int32_t src, int32_t dst)
{
    lkv_pages *p = c->pages;
    if (!p)
        return;
    lkv_pages_release(c, dst);
    int32_t rows = c->cfg.layers * c->heads;
    int32_t s0 = lkv_row_of(c, src, 0, 0), d0 = lkv_row_of(c, dst, 0, 0);
    for (int32_t r = 0; r < rows; r++) {
        const int32_t *from = row_table(p, s0 + r);
        memcpy(row_table(p, d0 + r), from, sizeof(int32_t) * (size_t)p->held[s0 + r]);
        p->held[d0 + r] = p->held[s0 + r];
        p->places[d0 + r] = p->places[s0 + r];
        for (int32_t i = 0; i < p->held[s0 + r]; i++)
            p->refs[from[i]]++;
    }
    account(c);
}
