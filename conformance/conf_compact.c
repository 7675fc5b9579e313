/* compact cases: the kept slots' K, V, position and state move to the front
 * of their rows, in order, in place.
 *
 * Threshold: bit-exact in all six buffers. Compaction moves bytes and
 * computes nothing, so there is no rounding to forgive; state_f carries a few
 * NaNs whose payload must survive the move as well.
 *
 * Guards: the op may write slots 0 .. k-1 of the listed rows and nothing
 * else. Slots k .. n-1 keep their (now unreachable) data, slots past n hold
 * the sentinel, one row of the buffer is not listed, and kept entries past k
 * point at slot 0, so a kernel that reads too much of `kept` copies slot 0
 * where the guard sees it. Kept lists cover the identity (nothing moves),
 * the tail (the longest moves), a single slot, k = 0 and random subsets.
 *
 * Storage types: compact moves 2-byte bf16 elements exactly as f16 ones, so
 * the quick grid runs bf16 only on two shapes (whole 16-byte rows, and odd
 * head_dim); the full grid runs every shape in f32, f16 and bf16. */
#include <math.h>
#include <stdio.h>

#include "conf_internal.h"
#include "dtype.h"

#define COMPACT_MAX_ROWS 16

typedef struct compact_shape {
    int32_t d, n, rows;
    conf_bf16_modes bf16; /* compact has one mode, 0 */
} compact_shape;

/* Slot rows of 33 and 36 elements are 66/132 and 72/144 bytes (2-byte
 * types/f32): moves that cannot all go in 16-byte units. */
static const compact_shape quick_grid[] = {
    {64, 1, 2, CONF_BF16_NONE}, {128, 777, 4, CONF_BF16_ALL}, {64, 4097, 3, CONF_BF16_NONE},
    {33, 300, 2, CONF_BF16_ALL}, {36, 300, 3, CONF_BF16_NONE}};
static const compact_shape full_grid[] = {
    {64, 1, 2, CONF_BF16_ALL}, {128, 777, 4, CONF_BF16_ALL}, {64, 4097, 3, CONF_BF16_ALL},
    {33, 300, 2, CONF_BF16_ALL}, {36, 300, 3, CONF_BF16_ALL}, {128, 4097, 6, CONF_BF16_ALL},
    {64, 131072, 2, CONF_BF16_ALL}};

typedef struct compact_case {
    const conf_family *family;
    compact_shape s;
    lkv_dtype dtype;
    int32_t capacity;
    int32_t rows[COMPACT_MAX_ROWS], row_k[COMPACT_MAX_ROWS];
    int cache, kept;
} compact_case;

static void fill_row(conf_case *c, const compact_case *cc, conf_rng *rng, int32_t row, int32_t n)
{
    int32_t *pos = conf_slot(c, cc->cache + CONF_POS, row, 0);
    int32_t *a = conf_slot(c, cc->cache + CONF_STATE_A, row, 0);
    int32_t *b = conf_slot(c, cc->cache + CONF_STATE_B, row, 0);
    float *f = conf_slot(c, cc->cache + CONF_STATE_F, row, 0);
    for (int32_t i = 0; i < n; i++) {
        void *k = conf_slot(c, cc->cache + CONF_K, row, i);
        void *v = conf_slot(c, cc->cache + CONF_V, row, i);
        for (int32_t e = 0; e < cc->s.d; e++) {
            float x = (float)conf_rng_normal(rng), y = (float)conf_rng_normal(rng);
            lkv_dtype_store(cc->dtype, k, (size_t)e, x);
            lkv_dtype_store(cc->dtype, v, (size_t)e, y);
        }
        pos[i] = i * 3 + conf_rng_below(rng, 3);
        a[i] = (int32_t)(uint32_t)conf_rng_next(rng);
        b[i] = (int32_t)(uint32_t)conf_rng_next(rng);
        f[i] = conf_rng_below(rng, 50) == 0 ? NAN : (float)conf_rng_normal(rng);
    }
}

/* A kept list for a row of n slots: ascending, k entries; 0 past k. */
static int32_t draw_kept(conf_rng *rng, int32_t n, int first, int32_t *kept, int32_t capacity)
{
    int32_t k;
    int how = first ? 4 : conf_rng_below(rng, 5);
    switch (how) {
    case 0: /* identity: nothing moves */
        k = n;
        for (int32_t j = 0; j < k; j++)
            kept[j] = j;
        break;
    case 1: /* the tail: every slot moves as far as it can */
        k = 1 + conf_rng_below(rng, n);
        for (int32_t j = 0; j < k; j++)
            kept[j] = n - k + j;
        break;
    case 2: /* a single slot, or none */
        k = conf_rng_below(rng, 2);
        kept[0] = n - 1;
        break;
    default:
        k = first ? n / 2 : conf_rng_below(rng, n + 1);
        conf_rng_subset(rng, n, k, kept);
        break;
    }
    for (int32_t j = k; j < capacity; j++)
        kept[j] = 0;
    return k;
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    compact_case *cc = params;
    int32_t rows = cc->s.rows + 1;
    cc->capacity = cc->s.n + 1 + conf_rng_below(rng, 3);
    cc->cache = conf_add_cache(c, rows, cc->capacity, cc->s.d, cc->dtype);
    cc->kept = conf_add_image(c, "kept", CONF_ELEM_I32, rows, cc->capacity, 4);
    if (c->failed_alloc)
        return 0;
    int32_t order[COMPACT_MAX_ROWS + 1];
    for (int32_t i = 0; i < rows; i++)
        order[i] = i;
    conf_rng_shuffle(rng, order, rows);
    for (int32_t i = 0; i < cc->s.rows; i++) {
        int32_t row = order[i], n = i == 0 ? cc->s.n : 1 + conf_rng_below(rng, cc->s.n);
        cc->rows[i] = row;
        fill_row(c, cc, rng, row, n);
        cc->row_k[i] = draw_kept(rng, n, i == 0, conf_slot(c, cc->kept, row, 0), cc->capacity);
        for (int img = 0; img < CONF_CACHE_IMAGES; img++)
            conf_allow(c, cc->cache + img, row, cc->row_k[i]);
    }
    conf_watch(c, cc->kept);
    return 1;
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const compact_case *cc = params;
    lkv_cache_buffers cache =
        conf_cache_view(c, side, cc->cache, cc->capacity, cc->s.d, cc->dtype);
    lkv_compact_args args = {
        .cache = &cache, .n_rows = cc->s.rows, .rows = cc->rows, .row_k = cc->row_k,
        .kept = conf_dev(c, side, cc->kept),
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->compact(rt->dev, &args);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const compact_case *cc = params;
    for (int img = 0; img < CONF_CACHE_IMAGES; img++)
        conf_check_exact(c, cc->cache + img, v);
    conf_check_guards(c, v);
}

static const conf_family family = {sizeof(compact_case), build, invoke, check};

void conf_run_compact(conf_run *r)
{
    const compact_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    int total = 0, index = 0;
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++)
            total += conf_runs_dtype(grid[i].bf16, conf_dtypes[dt], 0);
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++) {
            if (!conf_runs_dtype(grid[i].bf16, conf_dtypes[dt], 0))
                continue;
            compact_case cc = {.family = &family, .s = grid[i], .dtype = conf_dtypes[dt]};
            char name[192];
            snprintf(name, sizeof name, "compact(d=%d,n=%d,rows=%d,%s)", cc.s.d, cc.s.n,
                     cc.s.rows, conf_dtype_name(cc.dtype));
            conf_progress(r, "compact", index++, total);
            conf_group_run(r, name, "compact", conf_dtype_name(cc.dtype),
                           r->rt[CONF_TESTED]->ops->compact != NULL, conf_case_seed, &cc);
        }
}
