/* observe cases: per-slot policy state from one step's probabilities.
 *
 * Threshold: exact, for every kind. lazy is integer state decided by one f32
 * comparison p >= alpha; accumulate is one f32 addition and assign one copy,
 * which every API we target rounds correctly. The inputs avoid subnormals
 * (a GPU may flush them), so a correct backend has no excuse for a single
 * differing bit, and any difference is a decision or a state that will
 * differ at the next eviction.
 *
 * The probabilities sit on the threshold on purpose: exactly alpha (must
 * count), the float just below (must not), the float just above, and zeros,
 * mixed with values spread over nine decades. Rows in one dispatch have
 * different lengths and are listed out of order; one row of the buffer is
 * not listed, and nothing past a row's n may change. The "steps=rows" cases
 * give every listed row its own step (row_t), as a batch of sequences at
 * different steps does, on a backend that says it honours them (row_steps). */
#include <math.h>
#include <stdio.h>

#include "conf_internal.h"

#define OBSERVE_HEAD_DIM 8 /* K/V are not read; small, but real buffers */
#define OBSERVE_MAX_ROWS 16

typedef struct observe_shape {
    int32_t n, rows;
} observe_shape;

static const observe_shape quick_grid[] = {{1, 2}, {777, 5}, {4097, 6}};
static const observe_shape full_grid[] = {{1, 2}, {777, 5}, {4097, 6}, {65537, 8}, {131072, 3}};

/* `name` is the case's name in the report and in conf_xfail.c's patterns
 * (observe(kind=lazy,...)): it stays what it was when the kinds were named
 * after the policies that use them. */
static const struct {
    const char *name;
    lkv_observe_kind kind;
} kinds[] = {
    {"lazy", LKV_OBSERVE_RECURRENCE},
    {"accumulate", LKV_OBSERVE_ACCUMULATE},
    {"assign", LKV_OBSERVE_ASSIGN},
};

typedef struct observe_case {
    const conf_family *family;
    observe_shape s;
    lkv_dtype dtype;
    lkv_observe_kind kind;
    int steps; /* 1: every listed row at its own step (row_t) */
    int32_t capacity, t;
    float alpha;
    int32_t rows[OBSERVE_MAX_ROWS], row_n[OBSERVE_MAX_ROWS], row_t[OBSERVE_MAX_ROWS];
    int cache, probs;
} observe_case;

/* 10^x for x uniform in [top - span, top]: spread over decades, never subnormal. */
static float decades(conf_rng *rng, double top, double span)
{
    return (float)pow(10.0, top - span * conf_rng_uniform(rng));
}

/* A probability: on the threshold, next to it, zero, or anywhere in 1e-9..1. */
static float probability(conf_rng *rng, float alpha)
{
    int pick = conf_rng_below(rng, 20);
    if (pick == 0)
        return 0.0f;
    if (pick == 1)
        return alpha;
    if (pick == 2)
        return nextafterf(alpha, 0.0f);
    if (pick == 3)
        return nextafterf(alpha, 1.0f);
    return decades(rng, 0.0, 9.0);
}

static void fill_row(conf_case *c, const observe_case *o, conf_rng *rng, int32_t row, int32_t n,
                     int32_t t)
{
    float *p = conf_slot(c, o->probs, row, 0);
    int32_t *last = conf_slot(c, o->cache + CONF_STATE_A, row, 0);
    int32_t *mri = conf_slot(c, o->cache + CONF_STATE_B, row, 0);
    float *f = conf_slot(c, o->cache + CONF_STATE_F, row, 0);
    for (int32_t i = 0; i < n; i++) {
        p[i] = probability(rng, o->alpha);
        last[i] = conf_rng_below(rng, t);
        mri[i] = conf_rng_below(rng, 4) == 0 ? 0 : conf_rng_below(rng, 3000);
        f[i] = conf_rng_below(rng, 8) == 0 ? 0.0f : decades(rng, 3.0, 12.0);
    }
}

/* A step in 1..200000 that none of the first `i` rows has. */
static int32_t distinct_step(conf_rng *rng, const int32_t *taken, int32_t i)
{
    for (;;) {
        int32_t t = 1 + conf_rng_below(rng, 200000), j = 0;
        while (j < i && taken[j] != t)
            j++;
        if (j == i)
            return t;
    }
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    observe_case *o = params;
    int32_t rows = o->s.rows + 1;
    o->capacity = o->s.n + 1 + conf_rng_below(rng, 3);
    o->t = 1 + conf_rng_below(rng, 200000);
    o->alpha = conf_rng_below(rng, 2) ? 1e-4f : decades(rng, -2.0, 3.0);
    o->cache = conf_add_cache(c, rows, o->capacity, OBSERVE_HEAD_DIM, o->dtype);
    o->probs = conf_add_image(c, "probs", CONF_ELEM_F32, rows, o->capacity, 4);
    if (c->failed_alloc)
        return 0;
    int32_t order[OBSERVE_MAX_ROWS + 1];
    for (int32_t i = 0; i < rows; i++)
        order[i] = i;
    conf_rng_shuffle(rng, order, rows);
    for (int32_t i = 0; i < o->s.rows; i++) {
        o->rows[i] = order[i];
        o->row_n[i] = i == 0 ? o->s.n : 1 + conf_rng_below(rng, o->s.n);
        o->row_t[i] = o->steps ? distinct_step(rng, o->row_t, i) : o->t;
        fill_row(c, o, rng, o->rows[i], o->row_n[i], o->row_t[i]);
        if (o->kind == LKV_OBSERVE_RECURRENCE) {
            conf_allow(c, o->cache + CONF_STATE_A, o->rows[i], o->row_n[i]);
            conf_allow(c, o->cache + CONF_STATE_B, o->rows[i], o->row_n[i]);
        } else {
            conf_allow(c, o->cache + CONF_STATE_F, o->rows[i], o->row_n[i]);
        }
    }
    for (int i = 0; i < CONF_CACHE_IMAGES; i++)
        conf_watch(c, o->cache + i);
    conf_watch(c, o->probs);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const observe_case *o = params;
    lkv_cache_buffers cache =
        conf_cache_view(c, side, o->cache, o->capacity, OBSERVE_HEAD_DIM, o->dtype);
    lkv_observe_args args = {
        .cache = &cache, .n_rows = o->s.rows, .rows = o->rows, .row_n = o->row_n,
        .probs = conf_dev(c, side, o->probs), .kind = o->kind, .t = o->t,
        .row_t = o->steps ? o->row_t : NULL, .alpha = o->alpha,
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->observe(rt->dev, &args);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const observe_case *o = params;
    if (o->kind == LKV_OBSERVE_RECURRENCE) {
        conf_check_exact(c, o->cache + CONF_STATE_A, v);
        conf_check_exact(c, o->cache + CONF_STATE_B, v);
    } else {
        conf_check_exact(c, o->cache + CONF_STATE_F, v);
    }
    conf_check_guards(c, v);
    conf_verdict_note(v, "t %d%s, alpha %.9g", o->steps ? o->row_t[0] : o->t,
                      o->steps ? " (first row's)" : "", (double)o->alpha);
}

static const conf_family family = {sizeof(observe_case), build, invoke, check};

void conf_run_observe(conf_run *r)
{
    const observe_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    size_t n_kinds = sizeof kinds / sizeof kinds[0];
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int total = (int)(shapes * n_kinds * 2 * 2), index = 0;
    for (size_t k = 0; k < n_kinds; k++)
        for (int steps = 0; steps < 2; steps++)
            for (size_t i = 0; i < shapes; i++)
                for (int dt = 0; dt < 2; dt++, index++) {
                    observe_case o = {.family = &family, .s = grid[i], .dtype = (lkv_dtype)dt,
                                      .kind = kinds[k].kind, .steps = steps};
                    const char *dtype = conf_dtype_name(o.dtype);
                    char name[192];
                    snprintf(name, sizeof name, "observe(kind=%s,n=%d,rows=%d%s,%s)",
                             kinds[k].name, o.s.n, o.s.rows, steps ? ",steps=rows" : "", dtype);
                    conf_progress(r, "observe", index, total);
                    if (steps && ops->observe && !ops->row_steps)
                        conf_group_skip(r, name, "observe", dtype, "row steps unsupported: the "
                                        "backend's row_steps is 0, so core never passes row_t");
                    else
                        conf_group_run(r, name, "observe", dtype, ops->observe != NULL,
                                       conf_case_seed, &o);
                }
}
