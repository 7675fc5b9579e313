/* Random eviction plans for the tests of lkv_plan_apply and
 * lkv_plan_apply_device (tests/test_plan_device.c, tests/opencl/engine_checks.h):
 * the plan format's whole range without a cache to produce it. */
#ifndef LKV_TEST_PLAN_UTIL_H
#define LKV_TEST_PLAN_UTIL_H

#include <stdint.h>

#include "lazykv.h"

typedef struct tu_plan {
    lkv_eviction_plan plan;
    lkv_plan_row *rows;
    int32_t *kept;
} tu_plan;

/* Rows of (sequence, layer, head) over `sequences` x `layers` x `heads`:
 * every row of sequence 0, each keeping 10-30% (so a paged layout frees
 * its emptied tail blocks), about half of the others. A sequence's rows held the same n_before (up
 * to cap) slots; each keeps a random ascending subset of them, a prefix
 * included now and then (first_move > 0). */
void tu_plan_random(tu_plan *p, int32_t sequences, int32_t layers, int32_t heads, int32_t cap,
                    uint64_t *rng);
void tu_plan_free(tu_plan *p);

#endif
