/* Splitting attention across threads must not change a single bit. */
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "test_util.h"

static float *attend_with_threads(const char *threads, size_t *out_len)
{
    setenv("LAZYKV_CPU_THREADS", threads, 1);
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    enum { N = 3000, QH = 8, KVH = 4, D = 64 };
    lkv_cache_config cfg = tu_config(1, QH, KVH, D, N + 1);
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    uint64_t rng = 37;
    float *k = tu_alloc_normal((size_t)N * KVH * D, &rng, 1.0);
    float *v = tu_alloc_normal((size_t)N * KVH * D, &rng, 1.0);
    float *q = tu_alloc_normal(QH * D, &rng, 1.0);
    lkv_prefill_io p = {.n_tokens = N, .k = k, .v = v};
    TU_OK(lkv_cache_prefill(c, 0, 0, &p));
    float *out = malloc(sizeof(float) * QH * D);
    lkv_decode_io io = {q, k, v, out, LKV_MEMORY_HOST};
    TU_OK(lkv_cache_decode(c, 0, 0, &io));
    lkv_cache_destroy(c);
    lkv_runtime_close(rt);
    free(k);
    free(v);
    free(q);
    *out_len = QH * D;
    return out;
}

Test(cpu_threads, results_do_not_depend_on_the_thread_count)
{
    size_t n1, n2, n3;
    float *one = attend_with_threads("1", &n1);
    float *two = attend_with_threads("2", &n2);
    float *five = attend_with_threads("5", &n3);
    cr_assert_eq(memcmp(one, two, sizeof(float) * n1), 0, "1 vs 2 threads differ");
    cr_assert_eq(memcmp(one, five, sizeof(float) * n1), 0, "1 vs 5 threads differ");
    free(one);
    free(two);
    free(five);
}

/* One shared pool per thread count at a time: the forward pass and the cpu
 * backend asking for the same count get the same workers; another count
 * gets a pool of its own; the last release frees the shared one, so the
 * next acquire may size it anew. */
Test(cpu_threads, the_shared_pool_is_one_per_count_and_counted)
{
    lkv_pool *a = NULL, *b = NULL, *other = NULL, *again = NULL;
    TU_OK(lkv_pool_acquire_shared(2, &a));
    TU_OK(lkv_pool_acquire_shared(2, &b));
    TU_OK(lkv_pool_acquire_shared(3, &other));
    cr_assert_eq(a, b, "two acquires of 2 threads got different pools");
    cr_assert_neq(a, other, "a pool of 3 threads came back as the shared pool of 2");
    cr_assert_eq(lkv_pool_threads(other), 3);
    lkv_pool_release(other);
    lkv_pool_release(a);
    TU_OK(lkv_pool_acquire_shared(2, &again));
    cr_assert_eq(again, b, "the shared pool went with a reference still held");
    lkv_pool_release(again);
    lkv_pool_release(b);
    TU_OK(lkv_pool_acquire_shared(3, &again));
    cr_assert_eq(lkv_pool_threads(again), 3, "the freed shared pool was not sized anew");
    lkv_pool_release(again);
    cr_assert_eq(lkv_pool_acquire_shared(0, &again), LKV_INVALID_ARGUMENT);
}
