/* redundancy cases (rkv): the keys' cosine redundancy of each listed row,
 * mixed into scores that the score op left (finite importance, +infinity in
 * the protected tail), for every K storage type.
 *
 * Keys: Gaussian rows with runs of near-copies (cosine ~0.99 to the run's
 * first key), so the "newest copy above 0.5" rule acts on every row while no
 * pair lands near the 0.5 threshold by design (a random pair of 64-wide
 * keys reaches 0.5 with probability ~3e-5; a flip there moves one column by
 * one similarity, which the threshold below would show as a failure).
 *
 * Threshold: |d| <= atol + rtol |oracle| with rtol 1e-5 and atol 1e-5 / n
 * (n the longest row): R is a softmax of n column means, each a sum of n
 * similarities that an f32 kernel adds in another order (relative error of
 * a few n ulp, ~1e-5 at n = 777 worst case, far less on average), and the
 * mixed score subtracts it from lambda times the importance, so where the
 * two terms nearly cancel only the absolute part, a hundred-thousandth of an
 * average R, can hold. A dropped spare, a wrong norm or softmax moves R by
 * whole percents. */
#include <math.h>
#include <stdio.h>

#include "conf_internal.h"
#include "dtype.h"

#define RED_HEAD_DIM 64
#define RED_MAX_ROWS 8
#define RED_RTOL 1e-5
#define RED_ATOL_TIMES_N 1e-5

typedef struct red_shape {
    int32_t n, rows;
} red_shape;

static const red_shape quick_grid[] = {{1, 2}, {97, 3}, {777, 2}};
static const red_shape full_grid[] = {{1, 2}, {97, 3}, {777, 2}, {2049, 4}};

typedef struct red_case {
    const conf_family *family;
    red_shape s;
    lkv_dtype dtype;
    int32_t capacity, protect_tail;
    float lambda, scale;
    int32_t rows[RED_MAX_ROWS], row_n[RED_MAX_ROWS];
    int cache, work, match, scores;
} red_case;

/* A row of keys: Gaussian, every eighth slot starting a run of up to three
 * near-copies of itself. */
static void fill_keys(conf_case *c, const red_case *rc, conf_rng *rng, int32_t row, int32_t n)
{
    float base[RED_HEAD_DIM];
    int32_t copies = 0;
    for (int32_t j = 0; j < n; j++) {
        void *k = conf_slot(c, rc->cache + CONF_K, row, j);
        int fresh = copies == 0;
        for (int32_t d = 0; d < RED_HEAD_DIM; d++) {
            float x = fresh ? (float)conf_rng_normal(rng)
                            : base[d] + 0.1f * (float)conf_rng_normal(rng);
            if (fresh)
                base[d] = x;
            lkv_dtype_store(rc->dtype, k, (size_t)d, x);
        }
        copies = copies > 0 ? copies - 1 : j % 8 == 0 ? 1 + conf_rng_below(rng, 3) : 0;
    }
}

/* Scores as the score op leaves them: the pooled importance (a sum of up
 * to `window` probabilities) and +infinity in the protected tail. */
static void fill_scores(conf_case *c, const red_case *rc, conf_rng *rng, int32_t row, int32_t n)
{
    float *s = conf_slot(c, rc->scores, row, 0);
    for (int32_t j = 0; j < n; j++)
        s[j] = j >= n - rc->protect_tail ? INFINITY
                                         : (float)(8.0 * pow(conf_rng_uniform(rng), 3.0));
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    red_case *rc = params;
    int32_t rows = rc->s.rows + 2; /* rows not listed stay as they are */
    rc->capacity = rc->s.n + conf_rng_below(rng, 4);
    rc->protect_tail = conf_rng_below(rng, 3) == 0 ? 0 : 1 + conf_rng_below(rng, 16);
    rc->lambda = conf_rng_below(rng, 2) ? 0.1f : (float)conf_rng_uniform(rng);
    rc->scale = 1.0f / (float)(1 + conf_rng_below(rng, 8));
    int32_t order[RED_MAX_ROWS + 2];
    for (int32_t i = 0; i < rows; i++)
        order[i] = i;
    conf_rng_shuffle(rng, order, rows);
    rc->cache = conf_add_cache(c, rows, rc->capacity, RED_HEAD_DIM, rc->dtype);
    rc->work = conf_add_image(c, "work", CONF_ELEM_F32, rows, rc->capacity, 4);
    rc->match = conf_add_image(c, "match", CONF_ELEM_I32, rows, rc->capacity, 4);
    rc->scores = conf_add_image(c, "scores", CONF_ELEM_F32, rows, rc->capacity, 4);
    if (c->failed_alloc)
        return 0;
    for (int32_t i = 0; i < rc->s.rows; i++) {
        rc->rows[i] = order[i];
        rc->row_n[i] = i == 0 ? rc->s.n : 1 + conf_rng_below(rng, rc->s.n);
        fill_keys(c, rc, rng, rc->rows[i], rc->row_n[i]);
        fill_scores(c, rc, rng, rc->rows[i], rc->row_n[i]);
        conf_allow(c, rc->scores, rc->rows[i], rc->row_n[i]);
    }
    for (int i = 0; i < CONF_CACHE_IMAGES; i++)
        conf_watch(c, rc->cache + i);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const red_case *rc = params;
    lkv_cache_buffers cache =
        conf_cache_view(c, side, rc->cache, rc->capacity, RED_HEAD_DIM, rc->dtype);
    lkv_redundancy_args args = {
        .cache = &cache, .n_rows = rc->s.rows, .rows = rc->rows, .row_n = rc->row_n,
        .protect_tail = rc->protect_tail, .threshold = 0.5f, .mix_lambda = rc->lambda,
        .importance_scale = rc->scale, .work = conf_dev(c, side, rc->work),
        .match = conf_dev(c, side, rc->match), .scores = conf_dev(c, side, rc->scores),
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->redundancy(rt->dev, &args);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const red_case *rc = params;
    conf_check_close(c, rc->scores, RED_ATOL_TIMES_N / rc->s.n, RED_RTOL, v);
    conf_check_guards(c, v);
    conf_verdict_note(v, "lambda %g, importance scale %g, protect %d", (double)rc->lambda,
                      (double)rc->scale, rc->protect_tail);
}

static const conf_family family = {sizeof(red_case), build, invoke, check};

void conf_run_redundancy(conf_run *r)
{
    const red_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int total = (int)(shapes * conf_dtype_count), index = 0;
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++, index++) {
            red_case rc = {.family = &family, .s = grid[i], .dtype = conf_dtypes[dt]};
            const char *dtype = conf_dtype_name(rc.dtype);
            char name[192];
            snprintf(name, sizeof name, "redundancy(n=%d,rows=%d,%s)", rc.s.n, rc.s.rows, dtype);
            conf_progress(r, "redundancy", index, total);
            conf_group_run(r, name, "redundancy", dtype, ops->redundancy != NULL,
                           conf_case_seed, &rc);
        }
}
