/* select cases: per row keep the k highest scores, ties to the older slot,
 * NaN below everything, kept slots listed ascending.
 *
 * Comparison: the backend's first k entries must be distinct slots of
 * 0 .. n-1 in ascending order, and as a set equal the oracle's, with one
 * allowance (the tie rule): a slot kept by one side and not the other is
 * forgiven only when every slot in the disagreement has a finite score within
 * FLT_MIN + 1e-6 relative of the others (the tolerance scores are held to;
 * the absolute part covers a flushed subnormal), but never between exactly
 * equal scores, whose order the contract fixes (older first). A forgiven
 * case passes with "near tie" in its detail.
 *
 * Inputs: normal scores; rows where scores are quantised so that many tie
 * exactly; pairs one float apart (near ties), one of them at the cut between
 * kept and dropped; +Inf at both ends as protected slots are; in the "nan"
 * variants also NaN, +Inf and -Inf anywhere. Every slot past n holds +Inf,
 * so a kernel that reads past n keeps it. Each row has its own n and k (0, 1,
 * n - 1, n, or anything between). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define SELECT_NEAR_TIE_RTOL 1e-6
#define SELECT_MAX_ROWS 16

typedef struct select_shape {
    int32_t n, rows;
} select_shape;

static const select_shape quick_grid[] = {{1, 2}, {100, 5}, {4097, 6}};
static const select_shape full_grid[] = {{1, 2}, {100, 5}, {4097, 6}, {65537, 4}, {131072, 3}};

typedef struct select_case {
    const conf_family *family;
    select_shape s;
    int nan;
    int32_t capacity;
    int32_t rows[SELECT_MAX_ROWS], row_n[SELECT_MAX_ROWS], row_k[SELECT_MAX_ROWS];
    int scores, kept;
} select_case;

static float score_value(conf_rng *rng, int quantised, int nan)
{
    int pick = conf_rng_below(rng, 40);
    if (nan && pick < 3)
        return conf_special(pick);
    double x = conf_rng_normal(rng);
    return (float)(quantised ? floor(x * 4.0) / 4.0 : x);
}

/* The float next to x, up or down; x itself where that would be infinite or
 * subnormal (a GPU may flush subnormals, which is no selection bug). */
static float neighbour(float x, conf_rng *rng)
{
    float y = nextafterf(x, conf_rng_below(rng, 2) ? INFINITY : -INFINITY);
    return isfinite(y) && (y == 0.0f || fabsf(y) >= FLT_MIN) ? y : x;
}

/* Descending, NaN last: the oracle's order of scores (ties aside). */
static int rank_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x < y) - (x > y);
}

/* Puts a score one float from the k-th best on a random slot, so the cut
 * itself is a near tie: the place where a comparator that rounds goes wrong.
 * 0 when host memory runs out. */
static int straddle_cut(float *s, conf_rng *rng, int32_t n, int32_t k)
{
    if (k < 1 || k >= n)
        return 1;
    float *sorted = malloc(sizeof *sorted * (size_t)n);
    if (!sorted)
        return 0;
    memcpy(sorted, s, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, rank_desc);
    float cut = sorted[k - 1];
    free(sorted);
    int32_t j = conf_rng_below(rng, n);
    if (isfinite(cut) && isfinite(s[j]) && s[j] != cut)
        s[j] = neighbour(cut, rng);
    return 1;
}

static int fill_row(float *s, conf_rng *rng, int32_t n, int32_t k, int32_t capacity, int nan)
{
    int quantised = conf_rng_below(rng, 3) == 0;
    for (int32_t i = 0; i < n; i++)
        s[i] = score_value(rng, quantised, nan);
    for (int32_t j = 0; j < n / 16; j++) { /* near ties: one float apart */
        int32_t a = conf_rng_below(rng, n), b = conf_rng_below(rng, n);
        s[b] = neighbour(s[a], rng);
    }
    int32_t head = conf_rng_below(rng, 5), tail = conf_rng_below(rng, 17);
    for (int32_t i = 0; i < n; i++)
        if (i < head || i >= n - tail)
            s[i] = INFINITY;
    for (int32_t i = n; i < capacity; i++)
        s[i] = INFINITY;
    return straddle_cut(s, rng, n, k);
}

static int32_t draw_k(conf_rng *rng, int32_t n, int first)
{
    if (first)
        return n / 2;
    switch (conf_rng_below(rng, 5)) {
    case 0: return 0;
    case 1: return n < 1 ? n : 1;
    case 2: return n - 1;
    case 3: return n;
    default: return conf_rng_below(rng, n + 1);
    }
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    select_case *sc = params;
    int32_t rows = sc->s.rows + 1;
    sc->capacity = sc->s.n + 1 + conf_rng_below(rng, 3);
    sc->scores = conf_add_image(c, "scores", CONF_ELEM_F32, rows, sc->capacity, 4);
    sc->kept = conf_add_image(c, "kept", CONF_ELEM_I32, rows, sc->capacity, 4);
    if (c->failed_alloc)
        return 0;
    int32_t order[SELECT_MAX_ROWS + 1];
    for (int32_t i = 0; i < rows; i++)
        order[i] = i;
    conf_rng_shuffle(rng, order, rows);
    for (int32_t i = 0; i < sc->s.rows; i++) {
        sc->rows[i] = order[i];
        sc->row_n[i] = i == 0 ? sc->s.n : 1 + conf_rng_below(rng, sc->s.n);
        sc->row_k[i] = draw_k(rng, sc->row_n[i], i == 0);
        if (!fill_row(conf_slot(c, sc->scores, sc->rows[i], 0), rng, sc->row_n[i],
                      sc->row_k[i], sc->capacity, sc->nan))
            return 0;
        /* the whole of 0..n-1 is the op's scratch (the oracle sorts in place) */
        conf_allow(c, sc->kept, sc->rows[i], sc->row_n[i]);
    }
    conf_watch(c, sc->scores);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const select_case *sc = params;
    lkv_select_args args = {
        .capacity = sc->capacity, .n_rows = sc->s.rows, .rows = sc->rows,
        .row_n = sc->row_n, .row_k = sc->row_k,
        .scores = conf_dev(c, side, sc->scores), .kept = conf_dev(c, side, sc->kept),
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->select(rt->dev, &args);
}

/* ---- the comparison ---- */

typedef struct row_view {
    const float *score;    /* the inputs, as both sides saw them */
    const int32_t *oracle; /* first k entries */
    const int32_t *got;
    int32_t row, n, k;
} row_view;

static int same_score(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* 1 when the backend's list is k distinct ascending slots of 0..n-1. */
static int well_formed(const row_view *rv, char *why, size_t len)
{
    for (int32_t j = 0; j < rv->k; j++) {
        int32_t x = rv->got[j];
        if (x < 0 || x >= rv->n) {
            snprintf(why, len, "row %d (n %d, k %d): kept[%d] = %d is not a slot of the row",
                     rv->row, rv->n, rv->k, j, x);
            return 0;
        }
        if (j > 0 && x <= rv->got[j - 1]) {
            snprintf(why, len, "row %d (n %d, k %d): kept[%d] = %d after kept[%d] = %d: not "
                     "strictly ascending", rv->row, rv->n, rv->k, j, x, j - 1, rv->got[j - 1]);
            return 0;
        }
    }
    return 1;
}

/* Slots of sorted list a missing from sorted list b, into out; their count. */
static int32_t missing(const int32_t *a, const int32_t *b, int32_t k, int32_t *out)
{
    int32_t m = 0;
    for (int32_t i = 0, j = 0; i < k; i++) {
        while (j < k && b[j] < a[i])
            j++;
        if (j >= k || b[j] != a[i])
            out[m++] = a[i];
    }
    return m;
}

/* 1 when some slot of `x` and some slot of `y` have equal scores. */
static int equal_across(const float *score, const int32_t *x, const int32_t *y, int32_t m)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < m; j++)
            if (same_score(score[x[i]], score[y[j]]))
                return 1;
    return 0;
}

/* 0: same set; 1: a near tie (forgiven); -1: a real disagreement. */
static int compare_row(const row_view *rv, int32_t *scratch, char *why, size_t len)
{
    int32_t *only_oracle = scratch, *only_got = scratch + rv->k;
    int32_t m = missing(rv->oracle, rv->got, rv->k, only_oracle);
    if (m == 0)
        return 0;
    missing(rv->got, rv->oracle, rv->k, only_got); /* as many: both lists hold k slots */
    double lo = INFINITY, hi = -INFINITY;
    int finite = 1;
    for (int32_t i = 0; i < 2 * m; i++) {
        float s = rv->score[scratch[i < m ? i : rv->k + i - m]];
        finite &= isfinite(s) != 0;
        lo = fmin(lo, s);
        hi = fmax(hi, s);
    }
    int near = finite && hi - lo <= FLT_MIN + SELECT_NEAR_TIE_RTOL * fmax(fabs(lo), fabs(hi));
    /* a tie the contract decides is no near tie; the pair scan is quadratic,
     * but only runs when every differing score sits within 1e-6 */
    int exact = near && equal_across(rv->score, only_oracle, only_got, m);
    int32_t o = only_oracle[0], g = only_got[0];
    snprintf(why, len, "row %d (n %d, k %d): %d slot(s) kept differently, e.g. the backend keeps "
             "%d (score %.9g) where the oracle keeps %d (score %.9g)%s", rv->row, rv->n, rv->k, m,
             g, (double)rv->score[g], o, (double)rv->score[o],
             exact ? ": equal scores go to the older slot" : "");
    return near && !exact ? 1 : -1;
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const select_case *sc = params;
    const conf_image *s = &c->img[sc->scores], *kept = &c->img[sc->kept];
    int32_t *scratch = malloc(sizeof(int32_t) * 2 * ((size_t)sc->s.n + 1));
    /* room for both differences of the longest row (k <= n) */
    if (!scratch) {
        conf_verdict_set(v, LKV_CONF_FAIL, "host out of memory comparing selections");
        return;
    }
    int bad = 0, near = 0;
    char first_bad[320] = "", first_near[320] = "";
    for (int32_t i = 0; i < sc->s.rows; i++) {
        size_t off = (size_t)sc->rows[i] * (size_t)sc->capacity * 4;
        row_view rv = {(const float *)(const void *)(s->host + off),
                       (const int32_t *)(const void *)(kept->got[CONF_ORACLE] + off),
                       (const int32_t *)(const void *)(kept->got[CONF_TESTED] + off),
                       sc->rows[i], sc->row_n[i], sc->row_k[i]};
        char why[320];
        int verdict = well_formed(&rv, why, sizeof why) ? compare_row(&rv, scratch, why, sizeof why)
                                                        : -1;
        if (verdict < 0 && bad++ == 0)
            snprintf(first_bad, sizeof first_bad, "%s", why);
        if (verdict > 0 && near++ == 0)
            snprintf(first_near, sizeof first_near, "%s", why);
    }
    free(scratch);
    conf_verdict_check(v, bad > 0, "rows differing", bad, 0, "%s",
                       bad ? first_bad : "every row keeps the oracle's slots");
    if (near)
        conf_verdict_note(v, "near tie in %d row(s), forgiven: %s", near, first_near);
    conf_check_guards(c, v);
}

static const conf_family family = {sizeof(select_case), build, invoke, check};

void conf_run_select(conf_run *r)
{
    const select_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    int total = (int)shapes * 2, index = 0;
    for (int nan = 0; nan <= 1; nan++)
        for (size_t i = 0; i < shapes; i++, index++) {
            select_case sc = {.family = &family, .s = grid[i], .nan = nan};
            char name[192];
            snprintf(name, sizeof name, "select(n=%d,rows=%d%s)", sc.s.n, sc.s.rows,
                     nan ? ",nan" : "");
            conf_progress(r, "select", index, total);
            conf_group_run(r, name, "select", "f32", r->rt[CONF_TESTED]->ops->select != NULL,
                           conf_case_seed, &sc);
        }
}
