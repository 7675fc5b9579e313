/* The engine-owned measurement (bench_engine.h). An engine-owned cache of n
 * sequences takes a prompt of L = batch_slots tokens each (no votes: lazy
 * needs none), then W decode steps of one layer with host probabilities:
 * steps 1 .. W-1 only observe, step W evicts every row back to L. Its plan
 * then goes to the engine's side, on the host: paged f16 K/V, every
 * sequence's blocks in the pool, compacted by lkv_plan_apply (the same plan
 * applied again to the moved data does the same work, so it repeats) or
 * applied as holes to a slot map (re-placed between runs, untimed). Last,
 * the engine's attention over the kept slots, compacted against read through
 * the map: what holes cost every later step. Then a few observe-only steps
 * more, handed the queries and the engine's paged K instead of
 * probabilities (lkv_cache_observe_batch_qk, no lse): what an engine whose
 * fused attention keeps no probabilities pays. Where the backend's device
 * memory is host memory (ref, cpu), the device forms too: the same qk steps
 * on device arrays (with an lse; recomputed by the qk_probs op, combined by
 * reduce_rows), and the plan moved from the cache's kept lists
 * (lkv_cache_apply_plan_device) beside lkv_plan_apply of the plan read
 * back.
 *
 * The probabilities are random in [0, 2 alpha): about half the slots are
 * important at each step, so the kept sets scatter across the rows the way
 * a real eviction's do and compaction moves most of them. */
#include "bench_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timer.h"
#include "clock.h"
#include "error.h"
#include "fp16.h"

enum { BS = LKV_BENCH_ENGINE_BLOCK, RUNS = 5 };

typedef struct engine_side {
    int32_t n, heads, q_heads, d, slots, window, blocks_per_seq;
    uint16_t *k, *v;      /* [n * blocks_per_seq][BS][heads][d] */
    int32_t *table;       /* [n][blocks_per_seq], identity */
    lkv_slot_map *map;
} engine_side;

static uint32_t next(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static lkv_status fail(lkv_bench_engine *out, lkv_status st, const char *what)
{
    out->status = st;
    snprintf(out->error, sizeof out->error, "%s: %.120s", what, lkv_last_error());
    return st;
}

static lkv_status open_cache(lkv_runtime *rt, const lkv_bench_settings *s, int32_t n,
                             lkv_cache **out)
{
    lkv_cache_config cfg = lkv_bench_batch_config(s, n);
    cfg.kv_owner = LKV_KV_ENGINE;
    return lkv_cache_create(rt, &cfg, out);
}

/* The prompt, then W steps, each timed; the last one evicts, and its plan
 * is the cache's (lkv_cache_get_plan). */
static lkv_status run_steps(lkv_cache *c, const lkv_bench_settings *s, int32_t n,
                            lkv_bench_engine *out)
{
    int32_t stride = s->batch_slots + s->window, *seqs = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *len = malloc(sizeof(int32_t) * (size_t)n);
    size_t np = (size_t)n * (size_t)s->decode_shape.q_heads * (size_t)stride;
    float *probs = malloc(sizeof(float) * np);
    lkv_status st = seqs && len && probs ? LKV_OK
                                         : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    lkv_cache_config cfg;
    if (st == LKV_OK)
        st = lkv_cache_get_config(c, &cfg);
    uint32_t x = 0x2545f491u;
    for (size_t i = 0; st == LKV_OK && i < np; i++)
        probs[i] = 2.0f * cfg.policy.alpha * (float)(next(&x) >> 8) / 16777216.0f;
    for (int32_t i = 0; st == LKV_OK && i < n; i++)
        seqs[i] = i, len[i] = s->batch_slots;
    lkv_observe_prompt_io p = {.n_sequences = n, .sequences = seqs, .n_tokens = len};
    if (st == LKV_OK)
        st = lkv_cache_observe_prompt(c, 0, &p);
    lkv_observe_batch_io io = {.n_sequences = n, .sequences = seqs, .probs = probs,
                               .stride = stride};
    double observing = 0.0;
    for (int32_t t = 1; st == LKV_OK && t <= s->window; t++) {
        double t0 = lkv_clock_seconds();
        st = lkv_cache_observe_batch(c, 0, &io);
        double dt = lkv_clock_seconds() - t0;
        if (t < s->window)
            observing += dt;
        else
            out->evict_s = dt;
    }
    out->observe_s = s->window > 1 ? observing / (double)(s->window - 1) : 0.0;
    free(seqs);
    free(len);
    free(probs);
    return st;
}

static lkv_status side_open(engine_side *e, const lkv_bench_settings *s, int32_t n,
                            int32_t heads)
{
    memset(e, 0, sizeof *e);
    e->n = n, e->heads = heads, e->q_heads = s->decode_shape.q_heads;
    e->d = s->decode_shape.head_dim, e->slots = s->batch_slots, e->window = s->window;
    e->blocks_per_seq = (s->batch_slots + s->window + BS - 1) / BS;
    size_t blocks = (size_t)n * (size_t)e->blocks_per_seq;
    size_t elems = blocks * BS * (size_t)heads * (size_t)e->d;
    e->k = malloc(elems * sizeof(uint16_t));
    e->v = malloc(elems * sizeof(uint16_t));
    e->table = malloc(blocks * sizeof(int32_t));
    lkv_slot_map_config mc = {n, 1, heads, s->batch_slots + s->window, BS, (int32_t)blocks};
    lkv_status st = e->k && e->v && e->table
                        ? lkv_slot_map_create(&mc, &e->map)
                        : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %zu blocks", blocks);
    if (st != LKV_OK)
        return st;
    uint32_t x = 0x9e3779b9u;
    for (size_t i = 0; i < elems; i++) {
        e->k[i] = lkv_float_to_half((float)(next(&x) >> 8) / 16777216.0f - 0.5f);
        e->v[i] = lkv_float_to_half((float)(next(&x) >> 8) / 16777216.0f - 0.5f);
    }
    for (size_t b = 0; b < blocks; b++)
        e->table[b] = (int32_t)b;
    return LKV_OK;
}

static void side_close(engine_side *e)
{
    free(e->k);
    free(e->v);
    free(e->table);
    lkv_slot_map_destroy(e->map);
}

static lkv_status time_compact(engine_side *e, const lkv_eviction_plan *plan,
                               lkv_bench_engine *out)
{
    void *k = e->k, *v = e->v;
    lkv_kv_layout kv = {
        .dtype = LKV_DTYPE_F16, .head_dim = e->d, .layers = 1, .heads = e->heads,
        .sequences = e->n, .k_layers = &k, .v_layers = &v,
        .slot_stride = (size_t)e->heads * (size_t)e->d * 2, .head_stride = (size_t)e->d * 2,
        .block_stride = (size_t)BS * (size_t)e->heads * (size_t)e->d * 2, .block_size = BS,
        .block_table = e->table, .max_blocks = e->blocks_per_seq,
        .n_blocks = e->n * e->blocks_per_seq,
    };
    double runs[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = lkv_clock_seconds();
        lkv_status st = lkv_plan_apply(plan, &kv, NULL, 0, NULL);
        runs[r] = lkv_clock_seconds() - t0;
        if (st != LKV_OK)
            return st;
    }
    out->compact_s = lkv_bench_median(runs, RUNS);
    for (int32_t i = 0; i < plan->n_rows; i++)
        out->moved_slots += plan->rows[i].n_kept - plan->rows[i].first_move;
    int32_t per_seq = (e->slots + BS - 1) / BS;
    out->blocks_compact = e->n * per_seq;
    return LKV_OK;
}

static lkv_kv_layout k_layout(const engine_side *e, void *const *layers)
{
    size_t slot = (size_t)e->heads * (size_t)e->d * sizeof(uint16_t);
    return (lkv_kv_layout){
        .dtype = LKV_DTYPE_F16, .head_dim = e->d, .layers = 1, .heads = e->heads,
        .sequences = e->n, .k_layers = layers, .slot_stride = slot,
        .head_stride = (size_t)e->d * sizeof(uint16_t), .block_stride = BS * slot,
        .block_size = BS, .block_table = e->table, .max_blocks = e->blocks_per_seq,
        .n_blocks = e->n * e->blocks_per_seq};
}

/* The same plan moved from the cache's own kept lists
 * (lkv_cache_apply_plan_device), on a backend whose device memory is host
 * memory, so the engine's K/V serve as its device arrays. */
static lkv_status time_apply_lists(lkv_cache *c, engine_side *e, lkv_bench_engine *out)
{
    void *layers[1] = {e->k};
    lkv_kv_layout kv = k_layout(e, layers);
    lkv_device_array k = {(uint64_t)(uintptr_t)e->k, 0}, v = {(uint64_t)(uintptr_t)e->v, 0};
    double runs[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = lkv_clock_seconds();
        lkv_status st = lkv_cache_apply_plan_device(c, &kv, &k, &v, NULL, 0, NULL);
        runs[r] = lkv_clock_seconds() - t0;
        if (st != LKV_OK)
            return st;
    }
    out->apply_lists_s = lkv_bench_median(runs, RUNS);
    return LKV_OK;
}

static lkv_status fill_map(engine_side *e, int32_t *scratch)
{
    lkv_status st = LKV_OK;
    for (int32_t s = 0; s < e->n && st == LKV_OK; s++) {
        st = lkv_slot_map_remove(e->map, s, NULL, 0, NULL);
        if (st == LKV_OK)
            st = lkv_slot_map_place(e->map, s, 0, e->slots + e->window, scratch);
    }
    return st;
}

static lkv_status time_holes(engine_side *e, const lkv_eviction_plan *plan,
                             lkv_bench_engine *out)
{
    int32_t *scratch = malloc(sizeof(int32_t) * (size_t)(e->slots + e->window) * (size_t)e->heads);
    if (!scratch)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    double runs[RUNS];
    lkv_status st = LKV_OK;
    for (int r = 0; r < RUNS && st == LKV_OK; r++) {
        st = fill_map(e, scratch);
        double t0 = lkv_clock_seconds();
        if (st == LKV_OK)
            st = lkv_slot_map_apply(e->map, plan, NULL, 0, NULL);
        runs[r] = lkv_clock_seconds() - t0;
    }
    free(scratch);
    lkv_slot_map_stats ms;
    if (st == LKV_OK)
        st = lkv_slot_map_get_stats(e->map, &ms);
    if (st != LKV_OK)
        return st;
    out->holes_s = lkv_bench_median(runs, RUNS);
    out->blocks_holes = ms.blocks_in_use;
    out->live_holes = ms.cells_held ? (double)ms.cells_live / (double)ms.cells_held : 0.0;
    return LKV_OK;
}

/* One query head's attention over n slots of (sequence s, head h), slot j
 * at physical slot at ? at[j] : j; returns a value so the work is kept. */
static float attend_row(const engine_side *e, int32_t s, int32_t h, const int32_t *at,
                        int32_t n, const float *q, float *w)
{
    size_t slot = (size_t)e->heads * (size_t)e->d;
    const int32_t *table = e->table + (size_t)s * (size_t)e->blocks_per_seq;
    float m = -INFINITY, z = 0.0f, acc = 0.0f;
    for (int32_t j = 0; j < n; j++) {
        int32_t p = at ? at[j] : j;
        const uint16_t *k = e->k + ((size_t)table[p / BS] * BS + (size_t)(p % BS)) * slot +
                            (size_t)h * (size_t)e->d;
        float dot = 0.0f;
        for (int32_t i = 0; i < e->d; i++)
            dot += q[i] * lkv_half_to_float(k[i]);
        w[j] = dot;
        m = dot > m ? dot : m;
    }
    for (int32_t j = 0; j < n; j++) {
        int32_t p = at ? at[j] : j;
        const uint16_t *v = e->v + ((size_t)table[p / BS] * BS + (size_t)(p % BS)) * slot +
                            (size_t)h * (size_t)e->d;
        float pj = expf(w[j] - m);
        z += pj;
        for (int32_t i = 0; i < e->d; i++)
            acc += pj * lkv_half_to_float(v[i]);
    }
    return acc / z;
}

static lkv_status time_attend(const engine_side *e, int holes, double *out_s, float *sink)
{
    float *w = malloc(sizeof(float) * (size_t)(e->slots + e->window));
    float *q = calloc((size_t)e->d, sizeof(float));
    if (!w || !q) {
        free(w);
        free(q);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    }
    for (int32_t i = 0; i < e->d; i++)
        q[i] = 0.125f * (float)((i % 7) - 3);
    double runs[RUNS];
    lkv_status st = LKV_OK;
    for (int r = 0; r < RUNS && st == LKV_OK; r++) {
        double t0 = lkv_clock_seconds();
        for (int32_t s = 0; s < e->n && st == LKV_OK; s++)
            for (int32_t h = 0; h < e->heads && st == LKV_OK; h++) {
                const int32_t *at = NULL;
                int32_t n = e->slots;
                if (holes)
                    st = lkv_slot_map_row(e->map, s, 0, h, &at, &n);
                for (int32_t g = 0; st == LKV_OK && g < e->q_heads / e->heads; g++)
                    *sink += attend_row(e, s, h, at, n, q, w);
            }
        runs[r] = lkv_clock_seconds() - t0;
    }
    free(w);
    free(q);
    *out_s = lkv_bench_median(runs, RUNS);
    return st;
}

/* The engine's paged K as lkv_cache_observe_batch_qk reads it. */

/* Observe-only steps after the eviction handed q and the engine's K instead
 * of probabilities (no lse: lazykv normalises), as many as stay short of
 * the next eviction. */
static lkv_status time_qk(lkv_cache *c, const engine_side *e, int device, lkv_bench_engine *out)
{
    /* host then device steps, all short of the next eviction */
    int32_t half = (e->window - 1) / (device ? 2 : 1);
    int32_t runs = half < RUNS ? half : RUNS;
    int32_t *seqs = malloc(sizeof(int32_t) * (size_t)e->n);
    float *q = malloc(sizeof(float) * (size_t)e->n * (size_t)e->q_heads * (size_t)e->d);
    if (!seqs || !q) {
        free(seqs);
        free(q);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the queries");
    }
    uint32_t x = 0x51ed270bu;
    for (size_t i = 0; i < (size_t)e->n * (size_t)e->q_heads * (size_t)e->d; i++)
        q[i] = (float)(next(&x) >> 8) / 16777216.0f - 0.5f;
    for (int32_t i = 0; i < e->n; i++)
        seqs[i] = i;
    void *layers[1] = {e->k};
    lkv_kv_layout kv = k_layout(e, layers);
    lkv_observe_qk_io io = {.n_sequences = e->n, .sequences = seqs, .q = q,
                            .scale = 1.0f / sqrtf((float)e->d), .k = &kv};
    lkv_status st = LKV_OK;
    double t0 = lkv_clock_seconds();
    for (int32_t r = 0; r < runs && st == LKV_OK; r++)
        st = lkv_cache_observe_batch_qk(c, 0, &io);
    out->observe_qk_s = runs > 0 ? (lkv_clock_seconds() - t0) / runs : 0.0;
    /* the same steps handed as device arrays with an lse (any finite one
     * times the same work: nothing is checked on the device) */
    float *lse = st == LKV_OK && device ? calloc((size_t)e->n * (size_t)e->q_heads, 4) : NULL;
    lkv_device_array k_dev = {(uint64_t)(uintptr_t)e->k, 0};
    io.memory = LKV_MEMORY_DEVICE;
    io.q_dev = (lkv_device_array){(uint64_t)(uintptr_t)q, 0};
    io.lse_dev = (lkv_device_array){(uint64_t)(uintptr_t)lse, 0};
    io.k_dev = &k_dev;
    t0 = lkv_clock_seconds();
    for (int32_t r = 0; lse && r < runs && st == LKV_OK; r++)
        st = lkv_cache_observe_batch_qk(c, 0, &io);
    out->observe_qk_dev_s = lse && runs > 0 ? (lkv_clock_seconds() - t0) / runs : -1.0;
    free(lse);
    free(seqs);
    free(q);
    return st;
}

static lkv_status apply_both(lkv_cache *c, const lkv_bench_settings *s, int32_t n, int device,
                             lkv_bench_engine *out)
{
    lkv_eviction_plan plan;
    lkv_status st = lkv_cache_get_plan(c, &plan);
    int32_t heads = lkv_cache_heads(c);
    if (st == LKV_OK && plan.n_rows != n * heads)
        return lkv_fail(LKV_INTERNAL, "step %d evicted %d rows, not the %d of every sequence",
                        s->window, plan.n_rows, n * heads);
    engine_side e;
    if (st == LKV_OK)
        st = side_open(&e, s, n, heads);
    if (st == LKV_OK)
        st = time_holes(&e, &plan, out);
    if (st == LKV_OK)
        st = time_compact(&e, &plan, out);
    out->apply_lists_s = -1.0;
    if (st == LKV_OK && device)
        st = time_apply_lists(c, &e, out);
    float sink = 0.0f;
    if (st == LKV_OK)
        st = time_attend(&e, 0, &out->attend_dense_s, &sink);
    if (st == LKV_OK)
        st = time_attend(&e, 1, &out->attend_holes_s, &sink);
    if (st == LKV_OK)
        st = time_qk(c, &e, device, out);
    if (st == LKV_OK && !isfinite(sink))
        st = lkv_fail(LKV_INTERNAL, "the engine's attention gave %g", (double)sink);
    side_close(&e);
    return st;
}

/* Whether the runtime's device memory is host memory (ref, cpu: a device
 * array's handle is a host address), where the bench's host buffers can
 * stand for the engine's device arrays. */
static int host_memory(const lkv_runtime *rt)
{
    lkv_runtime_info info;
    return lkv_runtime_get_info(rt, &info) == LKV_OK &&
           (strcmp(info.backend, "cpu") == 0 || strcmp(info.backend, "ref") == 0);
}

void lkv_bench_engine_run(lkv_runtime *rt, const lkv_bench_settings *s, int32_t sequences,
                          const char *label, lkv_bench_progress *progress, lkv_bench_engine *out)
{
    memset(out, 0, sizeof *out);
    out->sequences = sequences;
    out->slots = s->batch_slots;
    out->window = s->window;
    lkv_bench_progress_step(progress, "%s engine-owned, batch of %d", label, sequences);
    lkv_cache *c = NULL;
    lkv_status st = open_cache(rt, s, sequences, &c);
    if (st != LKV_OK) {
        fail(out, st, "engine-owned cache");
        return;
    }
    if ((st = run_steps(c, s, sequences, out)) != LKV_OK)
        fail(out, st, "observe and plan");
    else if ((st = apply_both(c, s, sequences, host_memory(rt), out)) != LKV_OK)
        fail(out, st, "applying the plan");
    lkv_cache_destroy(c);
}
