/* A paged cache's block pool (LKV_PLACEMENT_PAGED): which blocks of the
 * K/V pool each (sequence, layer, cache head) row holds, who shares them,
 * and the row's hole map kept in step with them.
 *
 * The map (lkv_cache_buffers.phys) holds pool places (block * block_size +
 * offset). A row's map entries [0, places) are a permutation of its
 * blocks' places (places: held x block_size, but at most the capacity, the
 * map row's length; a block cut there has places no slot uses): the first
 * len are its slots' (in slot order, as with holes), the rest its free
 * places, the next token's first. So the host always knows how many places
 * a row has, and takes a block exactly when a store needs more; which places an
 * eviction freed it learns from the map itself (host memory on the
 * backends that take paged caches). Every function here runs between
 * calls or inside one, never beside another (the background helper is
 * joined first), so the pool has no lock. */
#ifndef LKV_PAGES_H
#define LKV_PAGES_H

#include "cache.h"

typedef struct lkv_pages lkv_pages;

/* The pool of cfg's placement paged, all blocks free; NULL pages for
 * another placement. The map buffer must exist. */
lkv_status lkv_pages_create(lkv_cache *c);
void lkv_pages_destroy(lkv_pages *p);

/* OUT_OF_MEMORY naming the counts when the pool lacks what a store of
 * these tokens would need (at worst, where a layer is full and an early
 * eviction comes first); else OK. The check a call makes before it
 * changes anything. */
lkv_status lkv_pages_check(lkv_cache *c, const int32_t *seqs, const int32_t *counts, int32_t n,
                           int32_t layer, const char *call);

/* Makes every head's row of the listed sequences ready for the store of
 * counts[i] tokens at its length: blocks taken for places past the row's
 * own, shared blocks the tokens land in copied (copy on write), the map
 * updated. Fails (OUT_OF_MEMORY) before changing anything when the pool is
 * short. */
lkv_status lkv_pages_prepare(lkv_cache *c, const int32_t *seqs, const int32_t *counts, int32_t n,
                             int32_t layer);

/* After an eviction kept row_k[i] slots of rows[i]: the blocks that hold
 * none of them go back to the pool, and the row's free places shrink to
 * the rest. */
lkv_status lkv_pages_trim(lkv_cache *c, const int32_t *rows, const int32_t *row_k, int32_t n);

/* Every block of sequence seq's rows back to the pool (reset; fork's
 * destination before it shares). */
void lkv_pages_release(lkv_cache *c, int32_t seq);

/* Sequence dst's rows take sequence src's blocks, shared (fork). The maps
 * are copied by the caller. */
void lkv_pages_share(lkv_cache *c, int32_t src, int32_t dst);

#endif
