/* cpu's observe, score and select are the oracle's bit for bit (they take
 * shortcuts, not other arithmetic): the same inputs on cpu and ref, chosen
 * at the shortcuts' edges (the lazy score's exp table and overflow cut,
 * select's ties, NaN, -0 and infinities, observe's threshold at alpha and
 * its skipped blocks), small and large enough for the pool, must give the
 * same bits. Conformance checks the same ops on random data. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "test_util.h"

/* One backend's copy of a rows x cap set of per-slot buffers. */
typedef struct side {
    const lkv_backend_ops *be;
    lkv_device *dev;
    lkv_cache_buffers cache;
    lkv_buffer *probs, *scores, *kept, *prior;
} side;

typedef struct inputs {
    int32_t rows, cap;
    int32_t *last, *mri, *kept;
    float *f, *probs, *scores;
} inputs;

static lkv_buffer *upload(side *s, const void *src, size_t bytes)
{
    lkv_buffer *b = NULL;
    TU_OK(s->be->alloc(s->dev, bytes, &b));
    if (src)
        TU_OK(s->be->write(s->dev, b, 0, src, bytes));
    return b;
}

static void side_open(side *s, const lkv_backend_ops *be, const inputs *in)
{
    size_t bytes = sizeof(int32_t) * (size_t)in->rows * (size_t)in->cap;
    s->be = be;
    TU_OK(be->open(0, &s->dev));
    s->cache = (lkv_cache_buffers){.k = upload(s, NULL, bytes), .v = upload(s, NULL, bytes),
                                   .pos = upload(s, NULL, bytes),
                                   .state_a = upload(s, in->last, bytes),
                                   .state_b = upload(s, in->mri, bytes),
                                   .state_f = upload(s, in->f, bytes),
                                   .capacity = in->cap, .head_dim = 1,
                                   .dtype = LKV_DTYPE_F32};
    s->probs = upload(s, in->probs, bytes);
    s->scores = upload(s, in->scores, bytes);
    s->kept = upload(s, NULL, bytes);
    s->prior = upload(s, in->kept, bytes);
}

static void side_close(side *s)
{
    lkv_buffer *bufs[] = {s->cache.k,       s->cache.v,       s->cache.pos, s->cache.state_a,
                          s->cache.state_b, s->cache.state_f, s->probs,     s->scores,
                          s->kept,          s->prior};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        s->be->free(s->dev, bufs[i]);
    s->be->close(s->dev);
}

static void *download(const side *s, const lkv_buffer *b, const inputs *in)
{
    size_t bytes = sizeof(int32_t) * (size_t)in->rows * (size_t)in->cap;
    void *out = malloc(bytes);
    cr_assert(out);
    TU_OK(s->be->read(s->dev, b, 0, out, bytes));
    return out;
}

/* The first `n` of each row's cap entries of a and b (4-byte words) agree. */
static void expect_same_rows(const void *a, const void *b, const inputs *in, const int32_t *n,
                             const char *what)
{
    const uint32_t *x = a, *y = b;
    int bad = 0;
    for (int32_t r = 0; r < in->rows; r++)
        for (int32_t i = 0; i < n[r] && bad < 5; i++) {
            size_t at = (size_t)r * (size_t)in->cap + (size_t)i;
            cr_expect(x[at] == y[at], "%s: row %d slot %d: cpu 0x%08x, ref 0x%08x", what, r,
                      i, x[at], y[at]);
            bad += x[at] != y[at];
        }
}

static inputs inputs_make(int32_t rows, int32_t cap)
{
    size_t n = (size_t)rows * (size_t)cap;
    inputs in = {rows, cap, calloc(n, 4), calloc(n, 4), calloc(n, 4),
                 calloc(n, 4), calloc(n, 4), calloc(n, 4)};
    cr_assert(in.last && in.mri && in.kept && in.f && in.probs && in.scores);
    return in;
}

static void inputs_free(inputs *in)
{
    free(in->last);
    free(in->mri);
    free(in->kept);
    free(in->f);
    free(in->probs);
    free(in->scores);
}

static int32_t *row_list(int32_t rows)
{
    int32_t *r = malloc(sizeof(int32_t) * (size_t)rows);
    cr_assert(r);
    for (int32_t i = 0; i < rows; i++)
        r[i] = i;
    return r;
}

static int32_t *filled(int32_t rows, int32_t value)
{
    int32_t *r = row_list(rows);
    for (int32_t i = 0; i < rows; i++)
        r[i] = value;
    return r;
}

/* Which of a side's buffers a check compares. */
typedef enum which { SCORES, KEPT, LAST, MRI, STATE_F } which;

static const lkv_buffer *buffer_of(const side *s, which w)
{
    const lkv_buffer *b[] = {s->scores, s->kept, s->cache.state_a, s->cache.state_b,
                             s->cache.state_f};
    return b[w];
}

/* The op under check, on one side: rows, row_n as built by on_both. */
typedef void (*op_fn)(side *s, const int32_t *rows, const int32_t *row_n, const void *ctx);

/* Runs `op` on cpu and on ref from the same inputs, then compares the
 * first counts[r] entries of each row of each listed buffer. */
static void on_both(const inputs *in, op_fn op, const void *ctx, const int32_t *row_n,
                    const int32_t *counts, const which *ws, int n_ws, const char *what)
{
    side c = {0}, r = {0};
    side_open(&c, &lkv_backend_cpu, in);
    side_open(&r, &lkv_backend_ref, in);
    int32_t *rows = row_list(in->rows);
    op(&c, rows, row_n, ctx);
    op(&r, rows, row_n, ctx);
    for (int i = 0; i < n_ws; i++) {
        void *got = download(&c, buffer_of(&c, ws[i]), in);
        void *want = download(&r, buffer_of(&r, ws[i]), in);
        expect_same_rows(got, want, in, counts, what);
        free(got);
        free(want);
    }
    free(rows);
    side_close(&c);
    side_close(&r);
}

/* ---- score ------------------------------------------------------------- */

enum { T_SCORE = 100000 };

typedef struct score_case {
    int32_t rows, prior_k;
} score_case;

static void lazy_score_op(side *s, const int32_t *rows, const int32_t *row_n, const void *ctx)
{
    const score_case *sc = ctx;
    int32_t prior_k = sc->prior_k;
    lkv_score_args a = {.cache = &s->cache, .n_rows = sc->rows, .rows = rows, .row_n = row_n,
                        .rows_per_group = 1, .kind = LKV_SCORE_RECURRENCE, .t = T_SCORE,
                        .protect_head = 1, .protect_tail = 2,
                        .prior_kept = prior_k ? s->prior : NULL, .prior_k = prior_k,
                        .scores = s->scores};
    TU_OK(s->be->score(s->dev, &a));
}

/* Scores of `in` at step T_SCORE on cpu and ref, protecting one head and two
 * tail slots and the first prior_k slots listed in in->kept. */
static void check_lazy_score(const inputs *in, int32_t prior_k)
{
    int32_t *row_n = filled(in->rows, in->cap);
    score_case sc = {in->rows, prior_k};
    which w = SCORES;
    on_both(in, lazy_score_op, &sc, row_n, row_n, &w, 1, "lazy score");
    free(row_n);
}

Test(cpu_exact, lazy_score_at_the_exp_table_and_overflow_edges)
{
    /* mri around the h2 table's end (711) and beyond; deltas around the
     * h1 overflow cut (x = 1 + delta / mri passing 709.78) for each */
    static const int32_t mris[] = {0, 1, 2, 3, 7, 100, 708, 709, 710, 711, 712, 713, 5000,
                                   1000000, -1};
    static const int32_t deltas[] = {0,    1,    2,    707,   708,    709,   710,  711,
                                     712,  1000, 3000, 70000, 500000, 99999, -3,   4};
    enum { R = sizeof mris / sizeof mris[0], C = sizeof deltas / sizeof deltas[0] };
    inputs in = inputs_make(R, C);
    for (int32_t i = 0; i < R; i++)
        for (int32_t j = 0; j < C; j++) {
            in.mri[i * C + j] = mris[i];
            in.last[i * C + j] = T_SCORE - deltas[j];
        }
    for (int32_t i = 0; i < R; i++)
        in.kept[i * C] = 5; /* a prior keep inside the scored range */
    check_lazy_score(&in, 1);
    inputs_free(&in);
}

Test(cpu_exact, lazy_score_many_rows_over_the_pool)
{
    enum { R = 40, C = 400 }; /* 16000 slots: the pool's share of rows */
    inputs in = inputs_make(R, C);
    uint64_t st = 17;
    for (int32_t i = 0; i < R * C; i++) {
        /* small mri with large deltas reach the overflow cut, as old slots do */
        int32_t m = (int32_t)(tu_uniform(&st) * (i % 3 ? 40 : 1500));
        in.mri[i] = m;
        in.last[i] = T_SCORE - (int32_t)(tu_uniform(&st) * (i % 2 ? 2000 : 90000));
    }
    check_lazy_score(&in, 0);
    inputs_free(&in);
}

/* ---- select ------------------------------------------------------------ */

typedef struct select_case {
    int32_t rows;
    const int32_t *row_k;
} select_case;

static void select_op(side *s, const int32_t *rows, const int32_t *row_n, const void *ctx)
{
    const select_case *sc = ctx;
    lkv_select_args a = {.capacity = s->cache.capacity, .n_rows = sc->rows, .rows = rows,
                         .row_n = row_n, .row_k = sc->row_k, .scores = s->scores,
                         .kept = s->kept};
    TU_OK(s->be->select(s->dev, &a));
}

static void check_select(const inputs *in, const int32_t *row_k)
{
    int32_t *row_n = filled(in->rows, in->cap);
    select_case sc = {in->rows, row_k};
    which w = KEPT;
    on_both(in, select_op, &sc, row_n, row_k, &w, 1, "select");
    free(row_n);
}

/* Row r draws its scores from a few values (ties everywhere), NaN, both
 * zeros and both infinities among them; k sweeps 1 .. cap. */
static void select_grid(int32_t rows, int32_t cap, uint64_t seed)
{
    static const float pick[] = {0.0f, -0.0f, 1.0f, 0.5f, -2.0f, INFINITY, -INFINITY, NAN,
                                 1.0f, 0.25f, 3.0e38f, 1.0e-45f, -1.0e-45f};
    enum { P = sizeof pick / sizeof pick[0] };
    inputs in = inputs_make(rows, cap);
    uint64_t st = seed;
    int32_t *row_k = malloc(sizeof(int32_t) * (size_t)rows);
    cr_assert(row_k);
    for (int32_t r = 0; r < rows; r++) {
        int32_t distinct = 1 + r % P; /* row 0: one value, a tie of the whole row */
        for (int32_t i = 0; i < cap; i++) {
            int32_t p = (int32_t)(tu_uniform(&st) * distinct) % distinct;
            in.scores[r * cap + i] = r % 4 == 3 ? (float)tu_uniform(&st) : pick[p];
        }
        row_k[r] = 1 + (int32_t)((int64_t)r * (cap - 1) / (rows > 1 ? rows - 1 : 1));
    }
    check_select(&in, row_k);
    free(row_k);
    inputs_free(&in);
}

Test(cpu_exact, select_ties_nan_zeros_and_infinities)
{
    select_grid(26, 97, 5);
}

Test(cpu_exact, select_many_rows_over_the_pool)
{
    select_grid(24, 1500, 9); /* 36000 slots: the pool's share of rows */
}

/* Scores that share all but their last bits (a few ulps around one value,
 * of either sign, with ties), as a lazy row's scores share their sign and
 * exponent: the radix passes start at the first bit the row's scores
 * differ in, down to the last byte and below it. */
Test(cpu_exact, select_within_a_few_ulps)
{
    static const float bases[] = {1.5378828f, -0.75f, 3.0e-39f, 2.0f};
    static const int32_t spans[] = {1, 2, 7, 130, 300, 70000};
    enum { B = sizeof bases / sizeof bases[0], S = sizeof spans / sizeof spans[0] };
    enum { R = B * S, C = 211 };
    inputs in = inputs_make(R, C);
    int32_t row_k[R];
    uint64_t st = 23;
    for (int32_t r = 0; r < R; r++) {
        uint32_t bits;
        memcpy(&bits, &bases[r / S], sizeof bits);
        for (int32_t i = 0; i < C; i++) {
            uint32_t b = bits + (uint32_t)(tu_uniform(&st) * spans[r % S]);
            memcpy(&in.scores[r * C + i], &b, sizeof b);
        }
        row_k[r] = 1 + (int32_t)((int64_t)(r * 37 % R) * (C - 1) / (R - 1));
    }
    check_select(&in, row_k);
    inputs_free(&in);
}

/* ---- observe ----------------------------------------------------------- */

typedef struct observe_case {
    int32_t rows;
    lkv_observe_kind kind;
    float alpha;
    const int32_t *row_t;
} observe_case;

static void observe_op(side *s, const int32_t *rows, const int32_t *row_n, const void *ctx)
{
    const observe_case *oc = ctx;
    lkv_observe_args a = {.cache = &s->cache, .n_rows = oc->rows, .rows = rows,
                          .row_n = row_n, .probs = s->probs, .kind = oc->kind, .t = 4000,
                          .row_t = oc->row_t, .alpha = oc->alpha};
    TU_OK(s->be->observe(s->dev, &a));
}

/* Ragged rows (blocks end inside a row), each at its own step; every slot
 * of the state compared, those past row_n included (they must not move). */
static void check_observe(const inputs *in, lkv_observe_kind kind, float alpha)
{
    int32_t *row_n = filled(in->rows, in->cap), *row_t = filled(in->rows, 0);
    int32_t *all = filled(in->rows, in->cap);
    for (int32_t i = 0; i < in->rows; i++) {
        row_n[i] = in->cap - i % 37;
        row_t[i] = 5000 + 3 * i;
    }
    observe_case oc = {in->rows, kind, alpha, row_t};
    const which ws[3] = {LAST, MRI, STATE_F};
    on_both(in, observe_op, &oc, row_n, all, ws, 3, "observe state");
    free(row_n);
    free(row_t);
    free(all);
}

/* Probabilities mostly below alpha with runs above it, exactly alpha, the
 * floats beside it and NaN; state that makes some gaps exceed mri. */
static inputs observe_inputs(int32_t rows, int32_t cap, float alpha)
{
    inputs in = inputs_make(rows, cap);
    uint64_t st = 23;
    for (int32_t i = 0; i < rows * cap; i++) {
        double u = tu_uniform(&st);
        float p = (float)(alpha * 0.5 * u);
        if ((i / 64) % 5 == 0)
            p = (float)(alpha * (1.0 + u)); /* a block that passes */
        else if (u < 0.01)
            p = alpha;
        else if (u < 0.02)
            p = nextafterf(alpha, 0.0f);
        else if (u < 0.03)
            p = nextafterf(alpha, 1.0f);
        else if (u < 0.035)
            p = NAN;
        in.probs[i] = p;
        in.last[i] = (int32_t)(tu_uniform(&st) * 4000);
        in.mri[i] = (int32_t)(tu_uniform(&st) * 3000);
        in.f[i] = (float)tu_uniform(&st);
    }
    return in;
}

Test(cpu_exact, observe_lazy_threshold_and_skipped_blocks)
{
    inputs in = observe_inputs(9, 1000, 1e-4f);
    check_observe(&in, LKV_OBSERVE_RECURRENCE, 1e-4f);
    check_observe(&in, LKV_OBSERVE_ACCUMULATE, 1e-4f);
    check_observe(&in, LKV_OBSERVE_ASSIGN, 1e-4f);
    inputs_free(&in);
}

Test(cpu_exact, observe_many_rows_over_the_pool)
{
    inputs in = observe_inputs(80, 4000, 1e-4f); /* 320000 slots: the pool's share */
    check_observe(&in, LKV_OBSERVE_RECURRENCE, 1e-4f);
    check_observe(&in, LKV_OBSERVE_ACCUMULATE, 1e-4f);
    inputs_free(&in);
}
