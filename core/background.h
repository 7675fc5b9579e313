/* The after-step evictions of a cache created with eviction =
 * LKV_EVICTION_BACKGROUND, run on the cache's helper thread (lazykv.h,
 * lkv_eviction_timing). The thread only runs lkv_schedule; every public
 * call that reads or changes the cache joins first, so the two never touch
 * the cache at once. */
#ifndef LKV_BACKGROUND_H
#define LKV_BACKGROUND_H

#include <stdint.h>

#include "lazykv.h"

typedef struct lkv_background lkv_background;
struct lkv_cache;

/* State for a cache of `sequences` sequences; NULL on no memory (the
 * evictions then run inline). The thread starts with the first eviction. */
lkv_background *lkv_background_create(int32_t sequences);

/* Waits for a pending eviction, stops the thread, frees. NULL is a no-op. */
void lkv_background_free(lkv_background *bg);

/* Runs the step's scheduled evictions (lkv_schedule, LKV_DUE_DECODE) of the
 * listed sequences at their steps: handed to the thread when there is one
 * (LKV_OK at once), inline otherwise (bg NULL, or the thread would not
 * start). Times them into the cache's stats. */
lkv_status lkv_background_evict(lkv_background *bg, struct lkv_cache *c, const int32_t *seqs,
                                const int32_t *steps, int32_t n);

/* Waits for the pending eviction, if any; its failure comes back here, with
 * its message, once. Adds the wait to the stats. Safe with bg NULL. */
lkv_status lkv_background_join(lkv_background *bg);

#endif /* LKV_BACKGROUND_H */
