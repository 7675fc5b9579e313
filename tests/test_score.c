/* The LazyEviction score, checked on the CPU backend's score op against the
 * table of spec/policies.md (computed by the authors' formula in float64). */
#include <math.h>
#include <stdlib.h>

#include "registry.h"
#include "test_util.h"

static const int32_t mris[] = {0, 1, 2, 3, 5, 10, 50, 175};
static const int32_t deltas[] = {0, 1, 2, 5, 10, 50, 100, 175, 400};
static const double table[8][9] = {
    {0.537883, 0, 0, 0, 0, 0, 0, 0, 0},
    {1.537883, 1.238408, 1.094854, 1.004945, 1.000033, 1.0, 1.0, 1.0, 1.0},
    {1.075766, 0.902735, 0.776290, 0.596508, 0.542828, 0.537883, 0.537883, 0.537883, 0.537883},
    {0.776289, 0.655623, 0.556145, 0.368345, 0.264314, 0.238406, 0.238406, 0.238406, 0.238406},
    {0.573855, 0.498923, 0.431605, 0.274379, 0.130825, 0.036006, 0.035972, 0.035972, 0.035972},
    {0.538130, 0.499727, 0.463197, 0.365098, 0.238653, 0.005192, 0.000280, 0.000247, 0.000247},
    {0.537883, 0.530055, 0.522300, 0.499480, 0.462950, 0.238406, 0.094852, 0.021974, 0.000247},
    {0.537883, 0.535639, 0.533401, 0.526722, 0.515712, 0.433158, 0.344026, 0.238406, 0.072129},
};

enum { ROWS = 8, COLS = 9, T = 1000 };

typedef struct score_rig {
    const lkv_backend_ops *be;
    lkv_device *dev;
    lkv_cache_buffers cache;
    lkv_buffer *scores;
} score_rig;

static lkv_buffer *buffer_of(score_rig *r, const int32_t *src)
{
    lkv_buffer *b = NULL;
    TU_OK(r->be->alloc(r->dev, sizeof(int32_t) * ROWS * COLS, &b));
    if (src)
        TU_OK(r->be->write(r->dev, b, 0, src, sizeof(int32_t) * ROWS * COLS));
    return b;
}

/* One row per MRI value, one slot per delta, at step T. */
static void run_lazy_score(score_rig *r, float *out)
{
    int32_t last[ROWS * COLS], mri[ROWS * COLS];
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) {
            last[i * COLS + j] = T - deltas[j];
            mri[i * COLS + j] = mris[i];
        }
    r->be = &lkv_backend_cpu;
    TU_OK(r->be->open(0, &r->dev));
    r->cache = (lkv_cache_buffers){.k = buffer_of(r, NULL), .v = buffer_of(r, NULL),
                                   .pos = buffer_of(r, NULL), .state_a = buffer_of(r, last),
                                   .state_b = buffer_of(r, mri), .state_f = buffer_of(r, NULL),
                                   .capacity = COLS, .head_dim = 1, .dtype = LKV_DTYPE_F32};
    r->scores = buffer_of(r, NULL);
    int32_t rows[ROWS], row_n[ROWS];
    for (int i = 0; i < ROWS; i++) {
        rows[i] = i;
        row_n[i] = COLS;
    }
    lkv_score_args a = {.cache = &r->cache, .n_rows = ROWS, .rows = rows, .row_n = row_n,
                        .rows_per_group = 1, .kind = LKV_SCORE_RECURRENCE, .t = T,
                        .scores = r->scores};
    TU_OK(r->be->score(r->dev, &a));
    TU_OK(r->be->read(r->dev, r->scores, 0, out, sizeof(float) * ROWS * COLS));
}

Test(score, lazy_matches_the_spec_table_to_1e6)
{
    score_rig r = {0};
    float got[ROWS * COLS];
    run_lazy_score(&r, got);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            cr_expect(fabs(got[i * COLS + j] - table[i][j]) <= 1e-6,
                      "score(mri=%d, delta=%d) = %.7f, spec says %.6f", mris[i], deltas[j],
                      (double)got[i * COLS + j], table[i][j]);
}

Test(score, lazy_never_produces_nan_for_huge_exponents)
{
    score_rig r = {0};
    float got[ROWS * COLS];
    run_lazy_score(&r, got);
    for (int i = 0; i < ROWS * COLS; i++)
        cr_assert(isfinite(got[i]) && got[i] >= 0.0f, "score %d is %f", i, (double)got[i]);
}

Test(score, mri_zero_and_past_scores_exactly_zero)
{
    score_rig r = {0};
    float got[ROWS * COLS];
    run_lazy_score(&r, got);
    for (int j = 1; j < COLS; j++)
        cr_assert_eq(got[j], 0.0f, "mri 0, delta %d scored %g", deltas[j], (double)got[j]);
}
