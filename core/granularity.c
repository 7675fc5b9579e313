/* Decisions shared by several rows (lkv_granularity): before select, every
 * row of a group gets the group's highest score per slot, so select, which
 * is deterministic, keeps the same slots in all of them. The policies' own
 * ops stay per row.
 *
 * On the device: a group's rows are consecutive cache rows (the heads of a
 * layer; for token, the heads of consecutive layers of a sequence), so the
 * backend's reduce_rows takes each group's max into the first of its rows
 * in `kept` (free until select writes it) and a second reduce_rows, of one
 * row each, copies it back over every row of the group: two dispatches per
 * eviction, no read-back and no wait. Its max keeps v > m ? v : m, which is
 * fmaxf wherever no score is NaN, as none is: scores are the policies' own
 * formulas over checked probabilities, and protected slots are infinite.
 * A backend without reduce_rows, or a group of rows that are not
 * consecutive (token granularity with only some layers due), goes through
 * the host: each row read, the max taken with fmaxf, written back. */
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
    lkv_clear_error();
    if (!name || !out)
        return lkv_fail_null("lkv_granularity_from_name", !name ? "name" : "out_granularity");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (lkv_granularity)i;
            return LKV_OK;
        }
    return lkv_fail(LKV_INVALID_ARGUMENT, "granularity \"%s\" is not head, layer or token", name);
}

/* Rows r of the batch (c->rows) in group `first`'s decision: the heads of
 * pair `first` (layer), or of every pair of its sequence (token). */
static int in_group(const lkv_cache *c, const lkv_due_pair *pairs, int32_t first, int32_t r)
{
    int32_t pair = r / c->heads;
    return c->cfg.granularity == LKV_GRANULARITY_LAYER ? pair == first
                                                       : pairs[pair].seq == pairs[first].seq;
}

/* The batch rows past group `first`'s last: its pair's heads (layer), or
 * the rest of the batch, where its sequence's other pairs may stand (token). */
static int32_t group_end(const lkv_cache *c, int32_t n_pairs, int32_t first)
{
    return c->cfg.granularity == LKV_GRANULARITY_LAYER ? (first + 1) * c->heads
                                                       : n_pairs * c->heads;
}

static lkv_status unite_group(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                              int32_t first, float *best, float *row, unsigned char *done)
{
    int32_t n = c->row_n[first * c->heads];
    size_t cap = (size_t)c->cfg.capacity;
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < n; i++)
        best[i] = NAN; /* NaN ranks below everything: fmaxf skips it */
    int32_t end = group_end(c, n_pairs, first);
    for (int32_t r = first * c->heads; r < end && st == LKV_OK; r++) {
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
    for (int32_t r = first * c->heads; r < end && st == LKV_OK; r++)
        if (in_group(c, pairs, first, r))
            st = c->ops->write(c->dev, c->scores, (size_t)c->rows[r] * cap * 4, best,
                               (size_t)n * 4);
    return st;
}

/* Each group as one run of consecutive cache rows: the first batch row of
 * each (first[g]), all of *out_size rows; 0 when a group's rows are not one
 * ascending run, or the groups are not all one size. */
static int32_t device_groups(const lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                             int32_t *first, int32_t *out_size, unsigned char *done)
{
    int32_t groups = 0;
    for (int32_t i = 0; i < n_pairs; i++) {
        if (done[i])
            continue;
        int32_t r0 = i * c->heads, count = 0, end = group_end(c, n_pairs, i);
        for (int32_t r = r0; r < end; r++) {
            if (!in_group(c, pairs, i, r))
                continue;
            if (c->rows[r] != c->rows[r0] + count || c->row_n[r] != c->row_n[r0])
                return 0;
            done[r / c->heads] = 1;
            count++;
        }
        if (groups > 0 && count != *out_size)
            return 0;
        *out_size = count;
        first[groups++] = r0;
    }
    return groups;
}

/* The device's two reduce_rows: each group's max into kept, then back over
 * every row of the group. `lists` has room for three columns of `rows`. */
static lkv_status unite_on_device(lkv_cache *c, int32_t rows, int32_t groups,
                                  const int32_t *first, int32_t size, int32_t *lists)
{
    int32_t *src = lists, *dst = lists + rows, *len = lists + 2 * rows;
    for (int32_t g = 0; g < groups; g++) {
        src[g] = dst[g] = c->rows[first[g]];
        len[g] = c->row_n[first[g]];
    }
    lkv_reduce_rows_args a = {
        .n = groups, .group = size, .reduce = LKV_REDUCE_MAX, .src_stride = c->cfg.capacity,
        .dst_stride = c->cfg.capacity, .src_row = src, .dst_row = dst, .len = len,
        .src = c->scores, .dst = c->kept,
    };
    lkv_status st = c->ops->reduce_rows(c->dev, &a);
    int32_t n = 0;
    for (int32_t g = 0; g < groups; g++)
        for (int32_t j = 0; j < size; j++, n++) {
            src[n] = c->rows[first[g]];
            dst[n] = c->rows[first[g] + j];
            len[n] = c->row_n[first[g]];
        }
    lkv_reduce_rows_args back = a;
    back.n = n;
    back.group = 1;
    back.src = c->kept;
    back.dst = c->scores;
    return st == LKV_OK ? c->ops->reduce_rows(c->dev, &back) : st;
}

static lkv_status unite_device(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs,
                               int *out_done)
{
    int32_t rows = n_pairs * c->heads;
    int32_t *lists = malloc(sizeof(int32_t) * 4 * (size_t)rows);
    unsigned char *seen = calloc((size_t)n_pairs, 1);
    lkv_status st = LKV_OK;
    *out_done = 0;
    if (lists && seen) {
        int32_t *first = lists + 3 * rows, size = 0;
        int32_t groups = device_groups(c, pairs, n_pairs, first, &size, seen);
        *out_done = groups > 0;
        if (groups > 0)
            st = unite_on_device(c, rows, groups, first, size, lists);
    } else {
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory uniting %d rows' scores", rows);
    }
    free(lists);
    free(seen);
    return st;
}

lkv_status lkv_scores_unite_host(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs)
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

lkv_status lkv_scores_unite(lkv_cache *c, const lkv_due_pair *pairs, int32_t n_pairs)
{
    if (c->cfg.granularity == LKV_GRANULARITY_HEAD || n_pairs == 0)
        return LKV_OK;
    int done = 0;
    lkv_status st = c->ops->reduce_rows ? unite_device(c, pairs, n_pairs, &done) : LKV_OK;
    return st != LKV_OK || done ? st : lkv_scores_unite_host(c, pairs, n_pairs);
}
