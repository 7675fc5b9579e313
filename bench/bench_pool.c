/* Mixed lengths under one pool (bench_pool.h). A serving engine holds
 * sequences of every length at once; a cache whose rows are each reserved
 * at capacity pays for the longest on every one of them, a paged cache
 * only for the blocks its rows fill. Both caches here see the same prompts
 * and steps: n sequences prefilled with L / 8 .. L tokens (L = batch_slots),
 * lazy at budget L and window W, capacity L + W (what the longest needs),
 * then one eviction period of W batched steps, each synced and timed: the
 * longest sequence fills its capacity and evicts back to L at the last.
 * The paged run is then repeated in a pool of exactly the blocks it held
 * at its peak, which must serve the same work: the memory figure is one a
 * pool can be sized to, not a count after the fact. */
#include "bench_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"
#include "clock.h"
#include "error.h"

int32_t lkv_bench_pool_prompt(int32_t j, int32_t n, int32_t slots)
{
    int32_t lo = slots / 8 > 0 ? slots / 8 : 1;
    if (n <= 1)
        return slots;
    return lo + (int32_t)((int64_t)(slots - lo) * j / (n - 1));
}

typedef struct pool_run {
    double step_s;             /* mean over the W steps, all n sequences */
    lkv_cache_stats stats;     /* after them */
} pool_run;

static lkv_status open_cache(lkv_runtime *rt, const lkv_bench_settings *s,
                             const lkv_bench_decode_inputs *in, int32_t n,
                             lkv_placement placement, int32_t pool_blocks, lkv_cache **out)
{
    lkv_cache_config cfg = lkv_bench_batch_config(s, n);
    cfg.placement = placement;
    cfg.block_size = placement == LKV_PLACEMENT_PAGED ? LKV_BENCH_POOL_BLOCK : 0;
    cfg.pool_blocks = pool_blocks;
    lkv_cache *c = NULL;
    lkv_status st = lkv_cache_create(rt, &cfg, &c);
    for (int32_t j = 0; j < n && st == LKV_OK; j++) {
        lkv_prefill_io io = {.n_tokens = lkv_bench_pool_prompt(j, n, s->batch_slots),
                             .k = in->k, .v = in->v, .memory = LKV_MEMORY_HOST};
        st = lkv_cache_prefill(c, j, 0, &io);
    }
    if (st != LKV_OK) {
        lkv_cache_destroy(c);
        return st;
    }
    *out = c;
    return LKV_OK;
}

/* W steps of one batched call for all n sequences (sequence j takes token
 * i + j at step i), each followed by a sync. */
static lkv_status run(lkv_runtime *rt, const lkv_bench_settings *s,
                      const lkv_bench_decode_inputs *in, int32_t n, lkv_placement placement,
                      int32_t pool_blocks, pool_run *out)
{
    size_t qs = (size_t)in->shape.q_heads * (size_t)in->shape.head_dim;
    float *o = malloc(sizeof(float) * qs * (size_t)n);
    int32_t *seqs = malloc(sizeof(int32_t) * (size_t)n);
    lkv_cache *c = NULL;
    lkv_status st = o && seqs ? open_cache(rt, s, in, n, placement, pool_blocks, &c)
                              : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d sequences",
                                         n);
    for (int32_t j = 0; j < n && st == LKV_OK; j++)
        seqs[j] = j;
    double sum = 0.0;
    for (int32_t i = 0; i < s->window && st == LKV_OK; i++) {
        double t0 = lkv_clock_seconds();
        st = lkv_bench_batch_step(c, in, i, 0, n, seqs, o);
        if (st == LKV_OK)
            st = rt->ops->sync(rt->dev);
        sum += lkv_clock_seconds() - t0;
    }
    if (st == LKV_OK)
        st = lkv_cache_get_stats(c, &out->stats);
    out->step_s = sum / (s->window > 0 ? s->window : 1);
    lkv_cache_destroy(c);
    free(o);
    free(seqs);
    return st;
}

static void fail(lkv_bench_pool *out, lkv_status st, const char *which)
{
    out->status = st;
    snprintf(out->error, sizeof out->error, "%s: %.120s", which, lkv_last_error());
}

void lkv_bench_pool_run(lkv_runtime *rt, const lkv_bench_settings *s,
                        const lkv_bench_decode_inputs *in, int32_t n, lkv_bench_pool *out)
{
    memset(out, 0, sizeof *out);
    if (!rt->ops->paged) {
        out->status = LKV_UNSUPPORTED;
        snprintf(out->error, sizeof out->error, "the backend has no paged caches");
        return;
    }
    pool_run compact, paged, sized;
    lkv_status st = run(rt, s, in, n, LKV_PLACEMENT_COMPACT, 0, &compact);
    if (st != LKV_OK)
        return fail(out, st, "compacting");
    st = run(rt, s, in, n, LKV_PLACEMENT_PAGED, 0, &paged);
    if (st != LKV_OK)
        return fail(out, st, "paged");
    const lkv_cache_stats *p = &paged.stats;
    int64_t block_bytes = p->pool_blocks ? p->kv_bytes_reserved / p->pool_blocks : 0;
    out->compact_step_s = compact.step_s / n;
    out->paged_step_s = paged.step_s / n;
    out->compact_kv_bytes = compact.stats.kv_bytes_reserved;
    out->paged_kv_bytes = p->blocks_peak * block_bytes;
    out->live_kv_bytes = compact.stats.kv_bytes_peak;
    out->peak_blocks = p->blocks_peak;
    st = run(rt, s, in, n, LKV_PLACEMENT_PAGED, (int32_t)p->blocks_peak, &sized);
    if (st != LKV_OK)
        return fail(out, st, "paged in a pool of its peak blocks");
    out->sized_ok = sized.stats.pool_blocks == p->blocks_peak;
}
