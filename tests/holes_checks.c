#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "holes_checks.h"
#include "twin_caches.h"

lkv_cache *hc_make(lkv_runtime *rt, lkv_cache_config cfg, lkv_placement placement)
{
    cfg.placement = placement;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

void hc_lazy_twins(lkv_runtime *rt, lkv_cache_config cfg, lkv_dtype dtype, int32_t budget,
                   int32_t window, lkv_cache **out_compact, lkv_cache **out_holes)
{
    cfg.dtype = dtype;
    lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    cfg.policy.budget = budget;
    cfg.policy.window = window;
    *out_compact = hc_make(rt, cfg, LKV_PLACEMENT_COMPACT);
    *out_holes = hc_make(rt, cfg, LKV_PLACEMENT_HOLES);
}

void hc_run_twins(lkv_runtime *rt, lkv_dtype dtype, lkv_gqa_mode gqa, lkv_eviction_timing when)
{
    for (size_t i = 0; i < TWIN_POLICIES; i++) {
        lkv_policy_kind kind = twin_every_policy[i];
        lkv_cache_config cfg = twin_config(kind);
        cfg.dtype = dtype;
        cfg.gqa = gqa;
        cfg.eviction = when;
        lkv_cache *compact = hc_make(rt, cfg, LKV_PLACEMENT_COMPACT);
        lkv_cache *holes = hc_make(rt, cfg, LKV_PLACEMENT_HOLES);
        twin_run(compact, holes, 31 + (uint64_t)kind, 60, lkv_policy_name(kind));
        lkv_cache_stats st;
        TU_OK(lkv_cache_get_stats(holes, &st));
        cr_expect(kind == LKV_POLICY_FULL || st.evictions > 0, "%s: no eviction to test",
                  lkv_policy_name(kind));
        lkv_cache_destroy(compact);
        lkv_cache_destroy(holes);
    }
}

/* Rows of 24 KiB (f32, head_dim 64, 97 slots): under ctest's
 * test_holes_opencl_windows (OpenCL bindings of 64 KiB) K, V, the metadata
 * and the map are bound as windows of a few rows with a skew. One token a
 * step from an empty cache, lazy evicting every 16 steps. */
void hc_long_rows(lkv_runtime *rt, const char *what)
{
    lkv_cache_config cfg = tu_config(2, 8, 2, 64, 97); /* 97: rows off the alignment */
    lkv_cache *compact, *holes;
    hc_lazy_twins(rt, cfg, LKV_DTYPE_F32, 64, 16, &compact, &holes);
    enum { QW = 8 * 64, KW = 2 * 64 };
    float q[QW], k[KW], v[KW], oa[QW], ob[QW];
    uint64_t rng = 21;
    for (int32_t t = 0; t < 200; t++) {
        tu_fill_normal(q, QW, &rng, 3.0);
        tu_fill_normal(k, KW, &rng, 1.0);
        tu_fill_normal(v, KW, &rng, 1.0);
        for (int32_t l = 0; l < 2; l++) {
            lkv_decode_io da = {q, k, v, oa, LKV_MEMORY_HOST}, db = {q, k, v, ob, LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(compact, 0, l, &da));
            TU_OK(lkv_cache_decode(holes, 0, l, &db));
            cr_assert(!memcmp(oa, ob, sizeof oa), "%s step %d layer %d: outputs differ", what, t,
                      l);
        }
    }
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(holes, &st));
    cr_expect_gt(st.evictions, 10, "%s: %lld evictions", what, (long long)st.evictions);
    lkv_cache_destroy(compact);
    lkv_cache_destroy(holes);
}

/* ---- what the buffers hold ---- */

typedef struct bufs {
    int32_t *phys; /* [rows][cap] */
    unsigned char *k;
    size_t rows, kv_row; /* bytes of a K slot */
} bufs;

static bufs read_bufs(const lkv_cache *c)
{
    bufs b;
    b.rows = (size_t)c->cfg.sequences * (size_t)c->cfg.layers * (size_t)c->heads;
    b.kv_row = (size_t)c->buf.head_dim * lkv_dtype_size(c->buf.dtype);
    size_t slots = b.rows * (size_t)c->cfg.capacity;
    b.phys = malloc(slots * 4);
    b.k = malloc(slots * b.kv_row);
    cr_assert(b.phys && b.k);
    if (c->buf.phys)
        TU_OK(c->ops->read(c->dev, c->buf.phys, 0, b.phys, slots * 4));
    else
        for (size_t i = 0; i < slots; i++)
            b.phys[i] = (int32_t)(i % (size_t)c->cfg.capacity);
    TU_OK(c->ops->read(c->dev, c->buf.k, 0, b.k, slots * b.kv_row));
    return b;
}

static const unsigned char *k_of(const bufs *b, int32_t cap, size_t row, int32_t slot)
{
    int32_t at = b->phys[row * (size_t)cap + (size_t)slot];
    return b->k + (row * (size_t)cap + (size_t)at) * b->kv_row;
}

static void free_bufs(bufs *b)
{
    free(b->phys);
    free(b->k);
}

void hc_expect_same_k(const lkv_cache *compact, const lkv_cache *holes, int32_t step)
{
    bufs a = read_bufs(compact), b = read_bufs(holes);
    int32_t cap = holes->cfg.capacity;
    char *seen = malloc((size_t)cap);
    for (size_t r = 0; r < b.rows; r++) {
        memset(seen, 0, (size_t)cap);
        for (int32_t j = 0; j < cap; j++) {
            int32_t at = b.phys[r * (size_t)cap + (size_t)j];
            cr_assert(at >= 0 && at < cap && !seen[at], "step %d row %zu: place %d twice or out "
                      "of range", step, r, at);
            seen[at] = 1;
        }
        int32_t s = (int32_t)(r / ((size_t)holes->cfg.layers * (size_t)holes->heads));
        int32_t l = (int32_t)(r / (size_t)holes->heads % (size_t)holes->cfg.layers);
        int32_t n = holes->seqs[s].len[l];
        for (int32_t j = 0; j < n; j++)
            cr_assert(!memcmp(k_of(&a, cap, r, j), k_of(&b, cap, r, j), b.kv_row),
                      "step %d row %zu slot %d: K differs", step, r, j);
    }
    free(seen);
    free_bufs(&a);
    free_bufs(&b);
}

/* Places written between two reads of the K buffer, per row. */
static int32_t places_written(const bufs *before, const bufs *after, int32_t cap, size_t row)
{
    int32_t n = 0;
    for (int32_t at = 0; at < cap; at++) {
        size_t off = (row * (size_t)cap + (size_t)at) * before->kv_row;
        n += memcmp(before->k + off, after->k + off, before->kv_row) != 0;
    }
    return n;
}

/* One sequence, one layer, lazy: each decode step writes one token, so an
 * evicting step changes exactly one place per row in the cache that fills
 * holes (more in the one that compacts), and the K through the map is the
 * compacting cache's throughout. head_dim up to 16. */
void hc_eviction_moves_no_kv(lkv_runtime *rt, int32_t dim, lkv_dtype dtype)
{
    lkv_cache *compact, *holes;
    hc_lazy_twins(rt, tu_config(1, 4, 2, dim, 64), dtype, 16, 4, &compact, &holes);
    uint64_t rng = 8;
    float q[4 * 16 * 20], k[2 * 16 * 20], v[2 * 16 * 20], oa[4 * 16 * 20], ob[4 * 16 * 20];
    tu_fill_normal(q, (size_t)4 * dim * 20, &rng, 2.0);
    tu_fill_normal(k, (size_t)2 * dim * 20, &rng, 1.0);
    tu_fill_normal(v, (size_t)2 * dim * 20, &rng, 1.0);
    lkv_prefill_io p = {.n_tokens = 20, .q = q, .k = k, .v = v, .out = oa};
    TU_OK(lkv_cache_prefill(compact, 0, 0, &p));
    p.out = ob;
    TU_OK(lkv_cache_prefill(holes, 0, 0, &p));
    int evicting = 0, moved_by_compaction = 0;
    for (int32_t t = 1; t <= 40; t++) {
        tu_fill_normal(q, (size_t)4 * dim, &rng, 2.0);
        tu_fill_normal(k, (size_t)2 * dim, &rng, 1.0);
        tu_fill_normal(v, (size_t)2 * dim, &rng, 1.0);
        bufs ha = read_bufs(holes), ca = read_bufs(compact);
        lkv_cache_stats before, after;
        TU_OK(lkv_cache_get_stats(holes, &before));
        lkv_decode_io da = {q, k, v, oa, LKV_MEMORY_HOST}, db = {q, k, v, ob, LKV_MEMORY_HOST};
        TU_OK(lkv_cache_decode(compact, 0, 0, &da));
        TU_OK(lkv_cache_decode(holes, 0, 0, &db));
        cr_assert(!memcmp(oa, ob, sizeof(float) * 4 * (size_t)dim), "step %d: outputs differ", t);
        TU_OK(lkv_cache_get_stats(holes, &after));
        bufs hb = read_bufs(holes), cb = read_bufs(compact);
        for (size_t r = 0; r < hb.rows; r++) {
            cr_assert_eq(places_written(&ha, &hb, 64, r), 1, "step %d row %zu", t, r);
            moved_by_compaction += after.evictions > before.evictions &&
                                   places_written(&ca, &cb, 64, r) > 1;
        }
        evicting += after.evictions > before.evictions;
        free_bufs(&ha);
        free_bufs(&hb);
        free_bufs(&ca);
        free_bufs(&cb);
        hc_expect_same_k(compact, holes, t);
    }
    cr_expect_gt(evicting, 3, "the run should evict: %d evicting steps", evicting);
    cr_expect_gt(moved_by_compaction, 0, "compaction never moved a slot: the test shows nothing");
    lkv_cache_destroy(compact);
    lkv_cache_destroy(holes);
}

