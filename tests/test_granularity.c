/* The layer and token granularities' score union (core/granularity.c) on
 * every backend at hand: on the device (two reduce_rows, no read-back, no
 * wait) it must give every row of a group the same bits as the host path
 * (each row read, fmaxf, written back), and both the per-slot max the test
 * computes itself. Scores mix ties, zeros of both signs and infinities, as
 * the policies' scores and protected slots do; a token group whose layers
 * are not consecutive takes the host path on every backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "test_util.h"

#define SEQS 3
#define LAYERS 4
#define HEADS 3
#define CAP 29

static lkv_cache *make(lkv_runtime *rt, lkv_granularity g)
{
    lkv_cache_config cfg = tu_config(LAYERS, 2 * HEADS, HEADS, 4, CAP);
    cfg.sequences = SEQS;
    cfg.granularity = g;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

/* Fills the batch lists of `pairs` as the scheduler does, each pair's rows
 * holding n slots. */
static int32_t list_rows(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs, int32_t n)
{
    int32_t rows = 0;
    for (int32_t i = 0; i < n_pairs; i++)
        for (int32_t h = 0; h < c->heads; h++, rows++) {
            c->rows[rows] = lkv_row_of(c, pairs[i].seq, pairs[i].layer, h);
            c->row_n[rows] = n;
        }
    return rows;
}

/* The same score to select: equal bits, or zeros of either sign (select
 * ties -0 with +0, and fmaxf may return either of the two). */
static int same_score(float a, float b)
{
    return tu_bits_of_float(a) == tu_bits_of_float(b) || (a == 0.0f && b == 0.0f);
}

static void random_scores(float *s, size_t count, uint64_t *rng)
{
    static const float pick[] = {0.0f, -0.0f, 1.0f, 0.5f, INFINITY, 2.5e-3f, 1.0f};
    for (size_t i = 0; i < count; i++)
        s[i] = i % 3 ? (float)tu_uniform(rng) : pick[(size_t)(tu_uniform(rng) * 7) % 7];
}

/* The union of `pairs` both ways from the same scores; every listed row
 * must come out as the max over its group, computed here, and the device
 * path must not read back or wait where it runs. */
static void check_union(lkv_runtime *rt, lkv_cache *c, const lkv_due_pair *pairs,
                        int32_t n_pairs, int device_expected, const char *what)
{
    size_t all = (size_t)SEQS * LAYERS * HEADS * CAP;
    float *before = malloc(all * 4), *dev = malloc(all * 4), *host = malloc(all * 4);
    cr_assert(before && dev && host);
    uint64_t rng = 11 + (uint64_t)n_pairs;
    random_scores(before, all, &rng);
    int32_t n = CAP - 4;
    int32_t rows = list_rows(c, pairs, n_pairs, n);

    TU_OK(c->ops->write(c->dev, c->scores, 0, before, all * 4));
    lkv_counters c0, c1;
    TU_OK(lkv_runtime_get_counters(rt, &c0));
    TU_OK(lkv_scores_unite(c, pairs, n_pairs));
    TU_OK(lkv_runtime_get_counters(rt, &c1));
    TU_OK(c->ops->read(c->dev, c->scores, 0, dev, all * 4));
    int64_t launches = c1.launches - c0.launches; /* 0 where the backend counts none */
    if (device_expected)
        cr_assert(c1.d2h_copies == c0.d2h_copies && c1.syncs == c0.syncs &&
                      (launches == 0 || launches == 2),
                  "%s: the device union read back or waited (%lld reads, %lld syncs, %lld "
                  "launches)", what, (long long)(c1.d2h_copies - c0.d2h_copies),
                  (long long)(c1.syncs - c0.syncs), (long long)launches);

    TU_OK(c->ops->write(c->dev, c->scores, 0, before, all * 4));
    TU_OK(lkv_scores_unite_host(c, pairs, n_pairs));
    TU_OK(c->ops->read(c->dev, c->scores, 0, host, all * 4));
    for (size_t i = 0; i < all; i++)
        cr_assert(same_score(dev[i], host[i]), "%s: score %zu is %g on the device, %g on the host",
                  what, i, dev[i], host[i]);

    for (int32_t r = 0; r < rows; r++) {
        int token = c->cfg.granularity == LKV_GRANULARITY_TOKEN;
        for (int32_t i = 0; i < n; i++) {
            float m = NAN;
            for (int32_t q = 0; q < rows; q++) {
                int same = token ? pairs[q / HEADS].seq == pairs[r / HEADS].seq
                                 : q / HEADS == r / HEADS;
                if (same)
                    m = fmaxf(m, before[(size_t)c->rows[q] * CAP + (size_t)i]);
            }
            float got = host[(size_t)c->rows[r] * CAP + (size_t)i];
            cr_assert(same_score(got, m),
                      "%s: row %d slot %d is %g, its group's max %g", what, c->rows[r], i, got, m);
        }
    }
    /* rows outside the batch are untouched */
    for (size_t i = 0; i < all; i++) {
        int listed = 0;
        for (int32_t r = 0; r < rows && !listed; r++)
            listed = i / CAP == (size_t)c->rows[r] && i % CAP < (size_t)n;
        if (!listed)
            cr_assert(tu_bits_of_float(dev[i]) == tu_bits_of_float(before[i]),
                      "%s: score %zu outside the batch changed", what, i);
    }
    free(before);
    free(dev);
    free(host);
}

static void run_backend(const char *backend)
{
    lkv_runtime *rt = tu_open_backend(backend);
    if (!rt)
        return;
    lkv_cache *layer = make(rt, LKV_GRANULARITY_LAYER);
    int device = layer->ops->reduce_rows != NULL;
    /* every layer of two sequences, and one layer of the third */
    lkv_due_pair pairs[2 * LAYERS + 1];
    memset(pairs, 0, sizeof pairs);
    int32_t np = 0;
    for (int32_t s = 0; s < 2; s++)
        for (int32_t l = 0; l < LAYERS; l++, np++) {
            pairs[np].seq = s == 0 ? 0 : 2;
            pairs[np].layer = l;
        }
    pairs[np].seq = 1;
    pairs[np++].layer = 2;
    check_union(rt, layer, pairs, np, device, backend);
    lkv_cache_destroy(layer);

    lkv_cache *token = make(rt, LKV_GRANULARITY_TOKEN);
    check_union(rt, token, pairs, 2 * LAYERS, device, backend); /* consecutive layers */
    lkv_due_pair gap[2] = {{.seq = 1, .layer = 0}, {.seq = 1, .layer = 2}};
    check_union(rt, token, gap, 2, 0, backend); /* layers 0 and 2: the host path */
    lkv_cache_destroy(token);
    lkv_runtime_close(rt);
}

Test(granularity, the_device_union_is_the_host_union_on_every_backend)
{
    const char *backends[] = {"ref", "cpu", "vulkan", "opencl"};
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        run_backend(backends[i]);
}
