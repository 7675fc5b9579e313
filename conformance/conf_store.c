/* store cases: a batch of entries, each one sequence and layer, writes its
 * tokens' f32 keys and values into consecutive slots of every cache head,
 * rounded to the storage type, with positions and fresh policy state.
 *
 * Threshold: bit-exact in all six buffers. Rounding to f16 and bf16 is
 * nearest-even on every backend (the hardware conversions and base/dtype.h
 * agree), so there is nothing to forgive; the inputs carry the values where
 * a backend would go wrong: exact rounding ties, f16 subnormals, -0, and the
 * rule for inputs a device cannot have checked (NaN and infinities stored as
 * +0, finite values past the type's largest stored as the largest with
 * their sign; 65520 is exactly where f16 rounding would reach infinity).
 *
 * Guards: entry e may write slots slot0 .. slot0 + count - 1 of its rows;
 * the slots before slot0 hold old data the op must leave (they are inside
 * the compared region, so a write there is a mismatch), slots past the entry
 * hold the sentinel, one group of rows is in no entry, and the K/V inputs
 * are read back to check they were not written. Entries take their tokens
 * from the inputs out of order, counts are ragged, and GQA runs grouped
 * (one cache head per KV head) and expanded (cache heads reading KV head
 * h * kv_heads / cache_heads). */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "conf_internal.h"
#include "dtype.h"

#define STORE_MAX_ENTRIES 64

typedef struct store_shape {
    int32_t d, kv_heads, cache_heads, entries, max_count;
} store_shape;

/* 64 entries of 1 or 2 tokens: a decode batch; 300-token entries: a
 * prefill chunk; 33 columns: rows that no vector load covers. */
static const store_shape quick_grid[] = {
    {64, 2, 2, 3, 5}, {128, 2, 8, 4, 17}, {33, 1, 3, 5, 9}, {64, 4, 4, 64, 2}, {128, 8, 8, 2, 300}};
static const store_shape full_grid[] = {
    {64, 2, 2, 3, 5},  {128, 2, 8, 4, 17},   {33, 1, 3, 5, 9},     {64, 4, 4, 64, 2},
    {128, 8, 8, 2, 300}, {128, 8, 32, 16, 40}, {256, 1, 1, 3, 1000}, {1, 2, 4, 7, 6}};

typedef struct store_case {
    const conf_family *family;
    store_shape s;
    lkv_dtype dtype;
    int32_t capacity, tokens;
    int32_t row0[STORE_MAX_ENTRIES], slot0[STORE_MAX_ENTRIES], count[STORE_MAX_ENTRIES];
    int32_t src_token[STORE_MAX_ENTRIES], position0[STORE_MAX_ENTRIES];
    int32_t last_init[STORE_MAX_ENTRIES];
    int cache, k, v;
} store_case;

/* Inputs that test rounding and the finite rule rather than plain values. */
static float special_input(conf_rng *rng)
{
    static const float values[] = {
        NAN, INFINITY, -INFINITY,
        65520.0f, -65520.0f,           /* f16: would round to infinity */
        65519.0f, 70000.0f, -1.0e6f,    /* f16: past the largest */
        3.3895314e38f, 3.39e38f, FLT_MAX, -FLT_MAX, /* bf16: past its largest */
        1.00048828125f,                /* 1 + 2^-11: an f16 tie, to even (1) */
        1.00146484375f,                /* 1 + 3 * 2^-11: an f16 tie, to even (up) */
        1.00390625f,                   /* 1 + 2^-8: a bf16 tie, to even (1) */
        1.01171875f,                   /* 1 + 3 * 2^-8: a bf16 tie, up */
        2.98023224e-8f,                /* 2^-25: half the least f16 subnormal: to 0 */
        8.94069672e-8f,                /* 3 * 2^-25: a subnormal tie, up */
        -0.0f, 1.0e-40f,               /* negative zero; an f32 subnormal */
    };
    return values[conf_rng_below(rng, (int32_t)(sizeof values / sizeof values[0]))];
}

static void fill_inputs(conf_case *c, const store_case *sc, conf_rng *rng)
{
    size_t n = (size_t)sc->tokens * (size_t)sc->s.kv_heads * (size_t)sc->s.d;
    float *k = conf_host(c, sc->k), *v = conf_host(c, sc->v);
    for (size_t i = 0; i < n; i++) {
        k[i] = conf_rng_below(rng, 16) == 0 ? special_input(rng) : (float)conf_rng_normal(rng);
        v[i] = conf_rng_below(rng, 16) == 0 ? special_input(rng) : (float)conf_rng_normal(rng);
    }
}

/* Old contents of slots [0, n) of a row: the op must keep them. */
static void fill_old(conf_case *c, const store_case *sc, conf_rng *rng, int32_t row, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        void *k = conf_slot(c, sc->cache + CONF_K, row, i);
        void *v = conf_slot(c, sc->cache + CONF_V, row, i);
        for (int32_t e = 0; e < sc->s.d; e++) {
            lkv_dtype_store(sc->dtype, k, (size_t)e, (float)conf_rng_normal(rng));
            lkv_dtype_store(sc->dtype, v, (size_t)e, (float)conf_rng_normal(rng));
        }
        *(int32_t *)conf_slot(c, sc->cache + CONF_POS, row, i) = i;
        *(int32_t *)conf_slot(c, sc->cache + CONF_STATE_A, row, i) = 7 * i;
        *(int32_t *)conf_slot(c, sc->cache + CONF_STATE_B, row, i) = -i;
        *(float *)conf_slot(c, sc->cache + CONF_STATE_F, row, i) = 0.5f * (float)i;
    }
}

/* Counts and the order entries take their tokens in (not list order). */
static void draw_entries(store_case *sc, conf_rng *rng)
{
    int32_t order[STORE_MAX_ENTRIES];
    sc->tokens = 0;
    for (int32_t e = 0; e < sc->s.entries; e++) {
        sc->count[e] = e == 0 ? sc->s.max_count : 1 + conf_rng_below(rng, sc->s.max_count);
        order[e] = e;
    }
    conf_rng_shuffle(rng, order, sc->s.entries);
    for (int32_t i = 0; i < sc->s.entries; i++) {
        sc->src_token[order[i]] = sc->tokens;
        sc->tokens += sc->count[order[i]];
    }
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    store_case *sc = params;
    const store_shape *s = &sc->s;
    int32_t groups = s->entries + 1, rows = groups * s->cache_heads;
    draw_entries(sc, rng);
    sc->capacity = s->max_count + 1 + conf_rng_below(rng, 8);
    sc->cache = conf_add_cache(c, rows, sc->capacity, s->d, sc->dtype);
    size_t token_bytes = (size_t)s->kv_heads * (size_t)s->d * sizeof(float);
    sc->k = conf_add_image(c, "k_in", CONF_ELEM_F32, 1, sc->tokens, token_bytes);
    sc->v = conf_add_image(c, "v_in", CONF_ELEM_F32, 1, sc->tokens, token_bytes);
    if (c->failed_alloc)
        return 0;
    fill_inputs(c, sc, rng);
    int32_t order[STORE_MAX_ENTRIES + 1];
    for (int32_t g = 0; g < groups; g++)
        order[g] = g;
    conf_rng_shuffle(rng, order, groups);
    for (int32_t e = 0; e < s->entries; e++) {
        sc->row0[e] = order[e] * s->cache_heads;
        sc->slot0[e] = conf_rng_below(rng, sc->capacity - sc->count[e] + 1);
        sc->position0[e] = conf_rng_below(rng, 1 << 20);
        sc->last_init[e] = conf_rng_below(rng, 4) == 0 ? -1 : conf_rng_below(rng, 1 << 20);
        for (int32_t h = 0; h < s->cache_heads; h++) {
            int32_t row = sc->row0[e] + h;
            fill_old(c, sc, rng, row, sc->slot0[e]);
            for (int img = 0; img < CONF_CACHE_IMAGES; img++)
                conf_allow(c, sc->cache + img, row, sc->slot0[e] + sc->count[e]);
        }
    }
    conf_watch(c, sc->k);
    conf_watch(c, sc->v);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const store_case *sc = params;
    lkv_cache_buffers cache =
        conf_cache_view(c, side, sc->cache, sc->capacity, sc->s.d, sc->dtype);
    lkv_store_args args = {
        .cache = &cache, .n_entries = sc->s.entries, .row0 = sc->row0, .slot0 = sc->slot0,
        .count = sc->count, .src_token = sc->src_token, .position0 = sc->position0,
        .last_init = sc->last_init, .cache_heads = sc->s.cache_heads,
        .kv_heads = sc->s.kv_heads, .k = conf_dev(c, side, sc->k), .v = conf_dev(c, side, sc->v),
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->store(rt->dev, &args);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const store_case *sc = params;
    for (int img = 0; img < CONF_CACHE_IMAGES; img++)
        conf_check_exact(c, sc->cache + img, v);
    conf_check_guards(c, v);
}

static const conf_family family = {sizeof(store_case), build, invoke, check};

void conf_run_store(conf_run *r)
{
    const store_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    int total = (int)(shapes * conf_dtype_count), index = 0;
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++) {
            store_case sc = {.family = &family, .s = grid[i], .dtype = conf_dtypes[dt]};
            char name[192];
            snprintf(name, sizeof name, "store(d=%d,hkv=%d,heads=%d,entries=%d,count<=%d,%s,%s)",
                     sc.s.d, sc.s.kv_heads, sc.s.cache_heads, sc.s.entries, sc.s.max_count,
                     sc.s.cache_heads == sc.s.kv_heads ? "grouped" : "expanded",
                     conf_dtype_name(sc.dtype));
            conf_progress(r, "store", index++, total);
            conf_group_run(r, name, "store", conf_dtype_name(sc.dtype),
                           r->rt[CONF_TESTED]->ops->store != NULL, conf_case_seed, &sc);
        }
}
