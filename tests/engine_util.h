/* What a test engine computes over its own K (tests/test_engine_qk_device.c,
 * tests/opencl/engine_checks.h): the softmax statistics its fused attention
 * would hand lazykv. */
#ifndef LKV_TEST_ENGINE_UTIL_H
#define LKV_TEST_ENGINE_UTIL_H

#include <stdint.h>

#include "lazykv.h"

/* The log-sum-exp of query q over slots 0 .. n-1 of (seq, head) in layer K
 * `k` laid out as kv (dense or paged, its block table): logits scale *
 * dot(q, K_j) in double, max + log(sum exp(logit - max)), rounded to f32. */
float tu_engine_lse(const lkv_kv_layout *kv, const void *k, int32_t seq, int32_t head, int32_t n,
                    const float *q, float scale);

#endif
