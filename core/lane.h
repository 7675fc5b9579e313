/* Background eviction on a second queue (the backend's lanes,
 * core/backend.h): a cache created with eviction = LKV_EVICTION_BACKGROUND
 * on a backend that has them issues each layer's eviction to the lane as
 * soon as the layer has observed the step, so the score, select and
 * compact of layer l run on the device beside the attention of layers
 * l + 1 .. and of the next step's earlier layers. Ordering is the
 * device's, never the host's: the lane waits for the main queue's work so
 * far (a mark) before an eviction, and the main queue waits for a layer's
 * last eviction (its mark) before the next call that touches that layer;
 * any other call waits for every layer. The decisions are the inline ones
 * bit for bit: the same ops on the same data in the same order per layer.
 *
 * Only evictions run on the lane, so the cache's scores and kept scratch
 * belong to it; rkv's redundancy, whose work space is the probabilities
 * the main queue writes, gets a work buffer of its own. */
#ifndef LKV_LANE_H
#define LKV_LANE_H

#include "cache.h"

typedef struct lkv_lane lkv_lane;

/* Opens c->lane when the cache evicts in the background, owns its K/V and
 * the backend has lanes; leaves it NULL (LKV_OK) when not, or when the
 * device cannot open one: the helper thread then runs the evictions. */
lkv_status lkv_lane_open(lkv_cache *c);

/* Waits for the lane's work and frees it. NULL lane: nothing. */
void lkv_lane_close(lkv_cache *c);

/* Whether a decode step's evictions may run layer by layer: not when one
 * decision covers every layer (granularity token). */
int lkv_lane_per_layer(const lkv_cache *c);

/* lkv_schedule on the lane (c->lane must be set). */
lkv_status lkv_lane_schedule(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                             lkv_layer_span span, lkv_due due);

/* The main queue's later work waits for the lane's evictions of `layer`
 * (lkv_lane_join_layer) or of every layer (lkv_lane_join). No host wait. */
lkv_status lkv_lane_join_layer(const lkv_cache *c, int32_t layer);
lkv_status lkv_lane_join(const lkv_cache *c);

#endif /* LKV_LANE_H */
