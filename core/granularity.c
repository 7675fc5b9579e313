/* Decisions shared by several rows (lkv_granularity): before select, every
 * row of a group gets the group's highest score per slot, so select, which
 * is deterministic, keeps the same slots in all of them. The rows are read
 * and written through the backend's copies, one round trip per eviction;
 * the policies' own ops stay per row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"

static const char *const names[] = {"head", "layer", "token"};

const char *lkv_granularity_name(lkv_granularity g)
{
    return (unsigned)g < sizeof names / sizeof names[0] ? names[g] : NULL;
}

lkv_status lkv_granularity_from_name(const char *name, lkv_granularity *out)
{
    for (size_t i = 0; name && out && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (lkv_granularity)i;
            return LKV_OK;
        }
    return lkv_fail(LKV_INVALID_ARGUMENT, "granularity \"%s\" is not head, layer or token",
                    name ? name : "(null)");
}

/* Rows r of the batch (c->rows) in group `first`'s decision: the heads of
 * pair `first` (layer), or of every pair of its sequence (token). */
static int in_group(const lkv_cache *c, const lkv_due_pair *pairs, int32_t first, int32_t r)
{
    int32_t pair = r / c->heads;
    return c->cfg.granularity == LKV_GRANULARITY_LAYER ? pair == first
                                                       : pairs[pair].seq == pairs[first].seq;
}

static lkv_status unite_group(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                              int32_t first, float *best, float *row, unsigned char *done)
{
    int32_t n = c->row_n[first * c->heads];
    size_t cap = (size_t)c->cfg.capacity;
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < n; i++)
        best[i] = NAN; /* NaN ranks below everything: fmaxf skips it */
    for (int32_t r = first * c->heads; r < n_pairs * c->heads && st == LKV_OK; r++) {
        if (!in_group(c, pairs, first, r))
            continue;
        if (c->row_n[r] != n)
            return lkv_fail(LKV_INTERNAL, "granularity %s: rows of one decision hold %d and %d "
                            "slots", lkv_granularity_name(c->cfg.granularity), n, c->row_n[r]);
        done[r / c->heads] = 1;
        st = c->ops->read(c->dev, c->scores, (size_t)c->rows[r] * cap * 4, row, (size_t)n * 4);
        for (int32_t i = 0; i < n && st == LKV_OK; i++)
            best[i] = fmaxf(best[i], row[i]);
    }
    for (int32_t r = first * c->heads; r < n_pairs * c->heads && st == LKV_OK; r++)
        if (in_group(c, pairs, first, r))
            st = c->ops->write(c->dev, c->scores, (size_t)c->rows[r] * cap * 4, best,
                               (size_t)n * 4);
    return st;
}

lkv_status lkv_scores_unite(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs)
{
    if (c->cfg.granularity == LKV_GRANULARITY_HEAD || n_pairs == 0)
        return LKV_OK;
    float *best = malloc(sizeof *best * 2 * (size_t)c->cfg.capacity);
    unsigned char *done = calloc((size_t)n_pairs, 1);
    lkv_status st = best && done ? LKV_OK
                                 : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory uniting "
                                            "%d rows' scores", n_pairs * c->heads);
    for (int32_t i = 0; i < n_pairs && st == LKV_OK; i++)
        if (!done[i])
            st = unite_group(c, pairs, n_pairs, i, best, best + c->cfg.capacity, done);
    free(best);
    free(done);
    return st;
}
