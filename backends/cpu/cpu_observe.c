/* observe, fast: the oracle's updates (ref_observe.c), bit for bit (integer
 * state and f32 compares and adds, done in the same order per slot).
 *
 * The lazy threshold test is data-dependent: with a tiny alpha most recent
 * slots pass and old ones do not, so a per-slot branch mispredicts. Slots
 * go in blocks: a block no slot of which passes is left untouched (no
 * stores), the others are updated with selects in a branch-free loop the
 * compiler vectorizes for the build's instruction set (SSE2 at least on
 * x86-64, NEON on aarch64). Rows in parallel once a batch is large enough
 * to pay for the threads. */
#include "cpu_internal.h"

#define BLOCK 32
/* slots per call from which the pool pays: observe moves ~12 bytes a slot */
#define POOL_SLOTS 262144

static int block_hits(const float *p, int32_t n, float alpha)
{
    int hits = 0;
    for (int32_t i = 0; i < n; i++)
        hits |= p[i] >= alpha;
    return hits;
}

static void recurrence_block(const float *p, int32_t *last, int32_t *mri, int32_t n, int32_t t,
                             float alpha)
{
    for (int32_t i = 0; i < n; i++) {
        int32_t hit = -(int32_t)(p[i] >= alpha); /* all ones where it passes: masks, not && */
        int32_t gap = t - last[i], m = mri[i];
        int32_t longer = gap > m ? gap : m;
        mri[i] = (longer & hit) | (m & ~hit);
        last[i] = (t & hit) | (last[i] & ~hit);
    }
}

static void recurrence_row(const lkv_observe_args *a, int32_t row, int32_t n, int32_t t)
{
    const lkv_cache_buffers *c = a->cache;
    const float *p = lkv_hostmem_row_f32(a->probs, c->capacity, row);
    int32_t *last = lkv_hostmem_row_i32(c->state_a, c->capacity, row);
    int32_t *mri = lkv_hostmem_row_i32(c->state_b, c->capacity, row);
    for (int32_t i = 0; i < n; i += BLOCK) {
        int32_t len = n - i < BLOCK ? n - i : BLOCK;
        if (block_hits(p + i, len, a->alpha))
            recurrence_block(p + i, last + i, mri + i, len, t, a->alpha);
    }
}

static void state_row(const lkv_observe_args *a, int32_t row, int32_t n)
{
    const lkv_cache_buffers *c = a->cache;
    const float *p = lkv_hostmem_row_f32(a->probs, c->capacity, row);
    float *f = lkv_hostmem_row_f32(c->state_f, c->capacity, row);
    if (a->kind == LKV_OBSERVE_ACCUMULATE)
        for (int32_t i = 0; i < n; i++)
            f[i] += p[i];
    else
        for (int32_t i = 0; i < n; i++)
            f[i] = p[i];
}

static void observe_rows(void *ctx, int64_t begin, int64_t end)
{
    const lkv_observe_args *a = ctx;
    for (int64_t r = begin; r < end; r++) {
        int32_t row = a->rows[r], n = a->row_n[r];
        if (a->kind == LKV_OBSERVE_RECURRENCE)
            recurrence_row(a, row, n, a->row_t ? a->row_t[r] : a->t);
        else
            state_row(a, row, n);
    }
}

lkv_status lkv_cpu_observe(lkv_device *dev, const lkv_observe_args *a)
{
    int64_t slots = 0;
    for (int32_t r = 0; r < a->n_rows; r++)
        slots += a->row_n[r];
    lkv_pool *pool = slots >= POOL_SLOTS ? lkv_cpu_state_of(dev)->pool : NULL;
    lkv_pool_run(pool, a->n_rows, observe_rows, (void *)a);
    return LKV_OK;
}
