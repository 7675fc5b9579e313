/* Two owned caches of the same shape fed the same prompts and decode steps
 * (three sequences at different lengths, one sitting some steps out), whose
 * outputs must agree bit for bit at every layer and whose slots, positions,
 * policy state and counters must agree every ten steps: for a setting that
 * must not change any result (eviction timing, placement). */
#ifndef LKV_TWIN_CACHES_H
#define LKV_TWIN_CACHES_H

#include "test_util.h"

enum { TWIN_SEQS = 3, TWIN_LAYERS = 2, TWIN_QH = 4, TWIN_KVH = 2, TWIN_D = 8, TWIN_CAP = 96,
       TWIN_PROMPT = 30 };

/* The shape above, with `kind` at a budget that evicts within a few steps. */
lkv_cache_config twin_config(lkv_policy_kind kind);

/* Fails the test where a's and b's slots, positions, state or counters
 * differ. */
void twin_same_state(lkv_cache *a, lkv_cache *b, const char *what, int32_t step);

/* One decode step of sequences 0 .. n-1 at every layer of both, q, k and v
 * [n][heads][dim]; fails the test where the outputs differ. */
void twin_step(lkv_cache *a, lkv_cache *b, int32_t n, const float *q, const float *k,
               const float *v, const char *what, int32_t t);

/* The prompts and `steps` decode steps of both, compared as above. */
void twin_run(lkv_cache *a, lkv_cache *b, uint64_t seed, int32_t steps, const char *what);

enum { TWIN_POLICIES = 8 };
extern const lkv_policy_kind twin_every_policy[TWIN_POLICIES];

#endif
