/* score: the oracle's code (ref_score.c), its rows spread over the pool. A
 * row's scores depend only on that row (and, for GROUP_MEAN, on the rows of
 * its group, which stay in one share), so the result is the oracle's bit
 * for bit; the lazy score's two double exps per slot are what make
 * eviction steps of many heads pay for the threads. */
#include "cpu_internal.h"
#include "ref/ref_ops.h"

typedef struct score_job {
    const lkv_score_args *a;
    lkv_device *dev;
    int32_t unit; /* rows per share unit: a GROUP_MEAN group, else 1 */
    lkv_status st;
} score_job;

static void score_units(void *ctx, int64_t begin, int64_t end)
{
    score_job *j = ctx;
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
    int64_t slots = 0;
    for (int32_t r = 0; r < a->n_rows; r++)
        slots += a->row_n[r];
    score_job job = {a, dev, unit, LKV_OK};
    lkv_pool *pool = slots >= 8192 ? lkv_cpu_state_of(dev)->pool : NULL;
    lkv_pool_run(pool, a->n_rows / unit, score_units, &job);
    return job.st;
}
