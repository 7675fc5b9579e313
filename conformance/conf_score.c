/* score cases: one eviction priority per valid slot, for every score kind,
 * with protected slots at both ends and a previous selection (prior_kept)
 * forced to +infinity.
 *
 * Thresholds (|d| <= atol + rtol |oracle|, NaN and infinities in the same
 * places), per kind:
 *  - lazy: rtol 1e-6, atol FLT_MIN. The oracle evaluates h1 + h2 in double
 *    and rounds once; a backend is expected to do as well (in f64 if it must):
 *    these scores decide evictions, and the MRI table of spec/policies.md has
 *    entries closer than 1e-5 apart. The absolute part only forgives a GPU
 *    that flushes a subnormal score to 0.
 *  - group_mean, pool_avg: rtol 2e-6: an f32 sum of at most 8 non-negative
 *    terms and one division (2.5 ulp in GLSL) round at most ~10 times
 *    (6e-7); a wrong divisor or a missing term is off by 10% or more.
 *  - noisy: atol 1e-6 + rtol 1e-6: state + Gumbel noise, which the oracle
 *    draws in double from the integer Philox bits; an f32 log near 1 loses
 *    most digits and shows here. Noise values straddle zero, hence atol.
 *  - state, recency, pool_max: exact: a copy, an index, a maximum.
 * Inputs include every edge the oracle defines: mri 0 (h2 = 0), huge mri
 * and delta (exp overflow must give 0, never NaN), protected regions that
 * cover short rows entirely, and in the "nan" variants NaN and +/-Inf in the
 * state (the oracle's max pooling skips NaN; sums propagate it). The
 * "steps=rows" cases give every listed row its own step (row_t), as a batch
 * of sequences at different steps does, on a backend that says it honours
 * them (row_steps). */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "conf_internal.h"

#define SCORE_HEAD_DIM 8
#define SCORE_MAX_ROWS 16
#define SCORE_LAZY_RTOL 1e-6
#define SCORE_SUM_RTOL 2e-6
#define SCORE_NOISY_ATOL 1e-6
#define SCORE_NOISY_RTOL 1e-6
#define SCORE_MAX_PRIOR 16

typedef struct score_shape {
    int32_t n, rows, rows_per_group;
} score_shape;

static const score_shape quick_grid[] = {{1, 2, 2}, {777, 4, 4}, {4097, 6, 3}};
static const score_shape full_grid[] = {
    {1, 2, 2}, {777, 4, 4}, {4097, 6, 3}, {65537, 8, 8}, {131072, 4, 2}};

typedef enum score_check { CHECK_EXACT, CHECK_LAZY, CHECK_SUM, CHECK_NOISY } score_check;

/* `name` is the case's name in the report and in conf_xfail.c's patterns
 * (score(kind=lazy,...)): it stays what it was when the kinds were named
 * after the policies that use them. */
static const struct {
    const char *name;
    lkv_score_kind kind;
    int32_t pool_kernel; /* as the policies use them */
    score_check check;
    int nan_variant;     /* reads state_f, so NaN/Inf can be injected */
} kinds[] = {
    {"lazy", LKV_SCORE_RECURRENCE, 0, CHECK_LAZY, 0},
    {"state", LKV_SCORE_STATE, 0, CHECK_EXACT, 1},
    {"group_mean", LKV_SCORE_GROUP_MEAN, 0, CHECK_SUM, 1},
    {"recency", LKV_SCORE_RECENCY, 0, CHECK_EXACT, 0},
    {"pool_avg", LKV_SCORE_POOL_AVG, 5, CHECK_SUM, 1},
    {"pool_max", LKV_SCORE_POOL_MAX, 7, CHECK_EXACT, 1},
    {"noisy", LKV_SCORE_GUMBEL_NOISE, 0, CHECK_NOISY, 1},
};

typedef struct score_case {
    const conf_family *family;
    score_shape s;
    lkv_dtype dtype;
    int kind; /* index into kinds[] */
    int nan;
    int steps; /* 1: every listed row at its own step (row_t) */
    int32_t capacity, t, protect_head, protect_tail, prior_k;
    uint64_t seed;
    int32_t rows[SCORE_MAX_ROWS], row_n[SCORE_MAX_ROWS], row_t[SCORE_MAX_ROWS];
    int cache, prior, scores;
} score_case;

/* (mri, delta) pairs from the everyday to the overflowing. */
static void lazy_state(conf_rng *rng, int32_t t, int32_t *last, int32_t *mri)
{
    static const int32_t big[] = {90, 1000, 1000000, INT32_MAX / 2};
    int pick = conf_rng_below(rng, 8);
    if (pick == 0)
        *mri = 0;
    else if (pick <= 3)
        *mri = 1 + conf_rng_below(rng, 10);
    else if (pick <= 6)
        *mri = 1 + conf_rng_below(rng, 500);
    else
        *mri = big[conf_rng_below(rng, 4)];
    int32_t delta = conf_rng_below(rng, conf_rng_below(rng, 4) == 0 ? 3 : t + 1);
    *last = t - delta;
}

static float state_value(conf_rng *rng, int nan)
{
    int pick = conf_rng_below(rng, 40);
    if (nan && pick < 3)
        return conf_special(pick);
    if (pick < 6)
        return 0.0f;
    return (float)pow(10.0, 3.0 - 12.0 * conf_rng_uniform(rng));
}

static void fill_row(conf_case *c, const score_case *sc, conf_rng *rng, int32_t row, int32_t n,
                     int32_t t)
{
    int32_t *pos = conf_slot(c, sc->cache + CONF_POS, row, 0);
    int32_t *last = conf_slot(c, sc->cache + CONF_STATE_A, row, 0);
    int32_t *mri = conf_slot(c, sc->cache + CONF_STATE_B, row, 0);
    float *f = conf_slot(c, sc->cache + CONF_STATE_F, row, 0);
    int32_t *prior = conf_slot(c, sc->prior, row, 0);
    int32_t p = conf_rng_below(rng, 1000);
    for (int32_t i = 0; i < n; i++) {
        pos[i] = p;
        p += 1 + conf_rng_below(rng, 3); /* eviction leaves gaps */
        lazy_state(rng, t, &last[i], &mri[i]);
        f[i] = state_value(rng, sc->nan);
    }
    conf_rng_subset(rng, n, sc->prior_k, prior);
    /* past prior_k: valid slots, so a kernel reading too far marks the wrong
     * slot (a visible mismatch) instead of writing out of bounds */
    for (int32_t j = sc->prior_k; j < n; j++)
        prior[j] = j;
}

static void draw_rows(score_case *sc, conf_rng *rng)
{
    int32_t rows = sc->s.rows + sc->s.rows_per_group; /* one group not listed */
    int32_t groups = rows / sc->s.rows_per_group, order[SCORE_MAX_ROWS * 2];
    for (int32_t g = 0; g < groups; g++)
        order[g] = g;
    conf_rng_shuffle(rng, order, groups);
    int32_t shortest = sc->s.n;
    for (int32_t g = 0; g < sc->s.rows / sc->s.rows_per_group; g++) {
        int32_t n = g == 0 ? sc->s.n : 1 + conf_rng_below(rng, sc->s.n);
        shortest = n < shortest ? n : shortest;
        for (int32_t j = 0; j < sc->s.rows_per_group; j++) {
            int32_t i = g * sc->s.rows_per_group + j;
            sc->rows[i] = order[g] * sc->s.rows_per_group + j;
            sc->row_n[i] = n;
        }
    }
    int32_t prior = conf_rng_below(rng, 2) ? 1 + conf_rng_below(rng, SCORE_MAX_PRIOR) : 0;
    sc->prior_k = prior < shortest ? prior : shortest;
}

/* A step in 1000..100999 that none of the first `i` rows has. */
static int32_t distinct_step(conf_rng *rng, const int32_t *taken, int32_t i)
{
    for (;;) {
        int32_t t = 1000 + conf_rng_below(rng, 100000), j = 0;
        while (j < i && taken[j] != t)
            j++;
        if (j == i)
            return t;
    }
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    score_case *sc = params;
    int32_t rows = sc->s.rows + sc->s.rows_per_group;
    sc->capacity = sc->s.n + 1 + conf_rng_below(rng, 3);
    sc->t = 1000 + conf_rng_below(rng, 100000);
    sc->protect_head = conf_rng_below(rng, 2) ? 0 : 1 + conf_rng_below(rng, 8);
    sc->protect_tail = conf_rng_below(rng, 3) == 0 ? 0 : 1 + conf_rng_below(rng, 64);
    sc->seed = conf_rng_next(rng);
    draw_rows(sc, rng);
    sc->cache = conf_add_cache(c, rows, sc->capacity, SCORE_HEAD_DIM, sc->dtype);
    sc->prior = conf_add_image(c, "prior_kept", CONF_ELEM_I32, rows, sc->capacity, 4);
    sc->scores = conf_add_image(c, "scores", CONF_ELEM_F32, rows, sc->capacity, 4);
    if (c->failed_alloc)
        return 0;
    for (int32_t i = 0; i < sc->s.rows; i++) {
        sc->row_t[i] = sc->steps ? distinct_step(rng, sc->row_t, i) : sc->t;
        fill_row(c, sc, rng, sc->rows[i], sc->row_n[i], sc->row_t[i]);
        conf_allow(c, sc->scores, sc->rows[i], sc->row_n[i]);
    }
    for (int i = 0; i < CONF_CACHE_IMAGES; i++)
        conf_watch(c, sc->cache + i);
    conf_watch(c, sc->prior);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const score_case *sc = params;
    lkv_cache_buffers cache =
        conf_cache_view(c, side, sc->cache, sc->capacity, SCORE_HEAD_DIM, sc->dtype);
    lkv_score_args args = {
        .cache = &cache,
        .n_rows = sc->s.rows,
        .rows = sc->rows,
        .row_n = sc->row_n,
        .rows_per_group = sc->s.rows_per_group,
        .kind = kinds[sc->kind].kind,
        .t = sc->t,
        .row_t = sc->steps ? sc->row_t : NULL,
        .protect_head = sc->protect_head,
        .protect_tail = sc->protect_tail,
        .pool_kernel = kinds[sc->kind].pool_kernel,
        .seed = sc->seed,
        .prior_kept = sc->prior_k ? conf_dev(c, side, sc->prior) : NULL,
        .prior_k = sc->prior_k,
        .scores = conf_dev(c, side, sc->scores),
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->score(rt->dev, &args);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const score_case *sc = params;
    switch (kinds[sc->kind].check) {
    case CHECK_EXACT: conf_check_exact(c, sc->scores, v); break;
    case CHECK_LAZY: conf_check_close(c, sc->scores, FLT_MIN, SCORE_LAZY_RTOL, v); break;
    case CHECK_SUM: conf_check_close(c, sc->scores, FLT_MIN, SCORE_SUM_RTOL, v); break;
    case CHECK_NOISY:
        conf_check_close(c, sc->scores, SCORE_NOISY_ATOL, SCORE_NOISY_RTOL, v);
        break;
    }
    conf_check_guards(c, v);
    conf_verdict_note(v, "t %d%s, protect %d+%d, prior %d", sc->steps ? sc->row_t[0] : sc->t,
                      sc->steps ? " (first row's)" : "", sc->protect_head, sc->protect_tail,
                      sc->prior_k);
}

static const conf_family family = {sizeof(score_case), build, invoke, check};

void conf_run_score(conf_run *r)
{
    const score_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    /* variants per kind: plain, nan (state kinds), steps=rows */
    size_t n_kinds = sizeof kinds / sizeof kinds[0], variants = 0;
    for (size_t k = 0; k < n_kinds; k++)
        variants += 2 + (size_t)kinds[k].nan_variant;
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int total = (int)(shapes * variants * 2), index = 0;
    for (size_t k = 0; k < n_kinds; k++)
        for (int v = 0; v < 3; v++) {
            int nan = v == 1, steps = v == 2;
            if (nan && !kinds[k].nan_variant)
                continue;
            for (size_t i = 0; i < shapes; i++)
                for (int dt = 0; dt < 2; dt++, index++) {
                    score_case sc = {.family = &family, .s = grid[i], .dtype = (lkv_dtype)dt,
                                     .kind = (int)k, .nan = nan, .steps = steps};
                    const char *dtype = conf_dtype_name(sc.dtype);
                    char name[192];
                    snprintf(name, sizeof name, "score(kind=%s,n=%d,rows=%d%s,%s)",
                             kinds[k].name, sc.s.n, sc.s.rows,
                             nan ? ",nan" : steps ? ",steps=rows" : "", dtype);
                    conf_progress(r, "score", index, total);
                    if (steps && ops->score && !ops->row_steps)
                        conf_group_skip(r, name, "score", dtype, "row steps unsupported: the "
                                        "backend's row_steps is 0, so core never passes row_t");
                    else
                        conf_group_run(r, name, "score", dtype, ops->score != NULL,
                                       conf_case_seed, &sc);
                }
        }
}
