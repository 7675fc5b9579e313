/* score: the oracle's scores (ref_score.c), bit for bit, rows spread over
 * the pool. A row's scores depend only on that row (and, for GROUP_MEAN, on
 * the rows of its group, which stay in one share), so any split gives the
 * oracle's result.
 *
 * The lazy score (RECURRENCE) is the one eviction steps of many heads pay
 * for: two double exps per slot. It is computed here with the oracle's
 * expressions, less the exps whose result is already known: h2 depends on
 * the integer mri alone, so it comes from a table filled once with the same
 * expression (same bits); h1 is skipped where it is below half an ulp of h2
 * (old slots with a small mri: the sum is h2 exactly), and its exp
 * overflows to inf (h1 = 0 exactly) once its argument passes ln(DBL_MAX).
 * Equal (mri, delta) pairs, frequent within an eviction, are computed once
 * per share of rows (score_memo). The other kinds run the oracle's code. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "ref/ref_ops.h"

/* exp(mri - 1) is inf from mri = 711 on, so the table's last entries are
 * already 0; larger mri (and a negative one, which the core never makes)
 * take the expression itself. */
#define H2_TABLE 712
/* a little above ln(DBL_MAX) = 709.7827: exp of anything larger is inf */
#define H1_EXP_OVERFLOW 709.79

/* Per mri: h2, and the delta from which h1 is too small to change h1 + h2
 * in double (so the sum is h2 itself, bit for bit). h1 < 2 exp(-x) and half
 * an ulp of h2 exceeds h2 2^-54, so x >= 40 - ln(h2) (ln 2^55 = 38.1, plus
 * a margin) is enough; delta >= skip_delta[mri] guarantees that x, with one
 * slot of margin for the division's rounding. Where h2 = 0 nothing is
 * skipped this way (only the overflow cut applies). */
typedef struct h2_entry {
    double h2;
    int64_t skip_delta;
} h2_entry;

static h2_entry h2_table[H2_TABLE];
static pthread_once_t h2_once = PTHREAD_ONCE_INIT;

static double h2_of(int32_t mri)
{
    return mri == 0 ? 0.0 : 2.0 / (1.0 + exp((double)mri - 1.0));
}

static void h2_fill(void)
{
    for (int32_t m = 0; m < H2_TABLE; m++) {
        double h2 = h2_of(m), x_skip = 40.0 - log(h2);
        double d = ceil((x_skip - 1.0) * ((double)m + 1e-5)) + 1.0;
        h2_table[m].h2 = h2;
        h2_table[m].skip_delta = h2 > 0.0 && d < (double)INT32_MAX ? (int64_t)d : INT64_MAX;
    }
}

static float lazy_score(int32_t mri, int32_t delta)
{
    double h2;
    if (mri >= 0 && mri < H2_TABLE) {
        h2 = h2_table[mri].h2;
        if (delta >= h2_table[mri].skip_delta)
            return (float)h2;
    } else {
        h2 = h2_of(mri);
    }
    double x = 1.0 + (double)delta / ((double)mri + 1e-5);
    double h1 = x > H1_EXP_OVERFLOW ? 0.0 : 2.0 / (1.0 + exp(x));
    return (float)(h1 + h2);
}

/* The score is a function of (mri, delta) alone, both small integers that
 * repeat across the slots and rows of one eviction (delta is a step count,
 * mri one too), so a share of rows keeps the scores it computed in a
 * direct-mapped table and reuses their bits. */
#define MEMO_BITS 12

typedef struct score_memo {
    uint64_t key[1 << MEMO_BITS];
    float score[1 << MEMO_BITS];
} score_memo;

static float memo_score(score_memo *m, int32_t mri, int32_t delta)
{
    if (!m || mri < 0 || delta < 0)
        return lazy_score(mri, delta);
    uint64_t key = (uint64_t)(uint32_t)delta << 32 | (uint32_t)mri;
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - MEMO_BITS));
    if (m->key[h] != key) {
        m->key[h] = key;
        m->score[h] = lazy_score(mri, delta);
    }
    return m->score[h];
}

static void lazy_row(const lkv_score_args *a, int32_t r, score_memo *m)
{
    const lkv_cache_buffers *c = a->cache;
    int32_t row = a->rows[r], n = a->row_n[r], cap = c->capacity;
    float *s = lkv_hostmem_row_f32(a->scores, cap, row);
    const int32_t *last = lkv_hostmem_row_i32(c->state_a, cap, row);
    const int32_t *mri = lkv_hostmem_row_i32(c->state_b, cap, row);
    int32_t lo = a->protect_head, hi = n - a->protect_tail;
    int32_t t = a->row_t ? a->row_t[r] : a->t;
    for (int32_t i = 0; i < n; i++)
        s[i] = i < lo || i >= hi ? INFINITY : memo_score(m, mri[i], t - last[i]);
    lkv_ref_score_prior(a, r, s);
}

typedef struct score_job {
    const lkv_score_args *a;
    lkv_device *dev;
    int32_t unit; /* rows per share unit: a GROUP_MEAN group, else 1 */
    lkv_status st;
} score_job;

static void score_units(void *ctx, int64_t begin, int64_t end)
{
    score_job *j = ctx;
    if (j->a->kind == LKV_SCORE_RECURRENCE) {
        score_memo *m = malloc(sizeof *m); /* 48 KiB: not on a pool thread's stack */
        if (m)
            memset(m->key, 0xff, sizeof m->key); /* empty: no key has a negative delta */
        for (int64_t r = begin; r < end; r++)
            lazy_row(j->a, (int32_t)r, m); /* without the table: every score computed */
        free(m);
        return;
    }
    lkv_score_args part = *j->a;
    int32_t first = (int32_t)begin * j->unit;
    part.n_rows = (int32_t)(end - begin) * j->unit;
    part.rows = j->a->rows + first;
    part.row_n = j->a->row_n + first;
    part.row_t = j->a->row_t ? j->a->row_t + first : NULL;
    lkv_status st = lkv_ref_score(j->dev, &part);
    if (st != LKV_OK)
        j->st = st; /* the oracle's score cannot fail today; kept for when it can */
}

lkv_status lkv_cpu_score(lkv_device *dev, const lkv_score_args *a)
{
    int32_t unit = a->kind == LKV_SCORE_GROUP_MEAN && a->rows_per_group > 1 ? a->rows_per_group
                                                                            : 1;
    if (a->n_rows % unit != 0)
        return lkv_ref_score(dev, a); /* a ragged group: let the oracle see all of it */
    if (a->kind == LKV_SCORE_RECURRENCE && pthread_once(&h2_once, h2_fill) != 0)
        return lkv_ref_score(dev, a);
    int64_t slots = 0;
    for (int32_t r = 0; r < a->n_rows; r++)
        slots += a->row_n[r];
    score_job job = {a, dev, unit, LKV_OK};
    lkv_pool *pool = slots >= 8192 ? lkv_cpu_state_of(dev)->pool : NULL;
    lkv_pool_run(pool, a->n_rows / unit, score_units, &job);
    return job.st;
}
