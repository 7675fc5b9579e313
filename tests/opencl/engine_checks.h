/* What an engine that embeds lazykv on its own device objects checks, the
 * same for OpenCL and Vulkan (test_opencl_engine.c, test_vulkan_engine.c):
 * the backend's wrap refuses a misaligned offset naming it and the
 * alignment; store through views of the engine's buffers writes the bits
 * the cpu oracle writes, in one dispatch with no transfer or host wait;
 * a decode batch on device arrays gives the cpu's host-array batch
 * outputs and lengths, with no sync and a fixed number of dispatches per
 * step; and an engine-owned cache observing probabilities the engine keeps
 * on its device makes the cpu's plans, with no transfer or wait at steps
 * that evict nothing; and a plan applied to the engine's paged K/V on its
 * device leaves the bytes lkv_plan_apply leaves on the host. The engine's uploads are queued on its queue without waiting and
 * its downloads wait on that queue, so the results also show the queue
 * hand-off both ways (docs/embedding.md).
 *
 * The including test defines an lkv_engine: buffers in the engine's own
 * memory, named by the handle lkv_device_array takes. */
#ifndef LKV_ENGINE_CHECKS_H
#define LKV_ENGINE_CHECKS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "engine_util.h"
#include "plan_util.h"
#include "runtime.h"
#include "test_util.h"

typedef struct lkv_engine lkv_engine;
/* A zeroed buffer of `bytes` in the engine's memory; its handle. */
static uint64_t engine_buffer(lkv_engine *e, size_t bytes);
/* Queued on the engine's queue, unwaited (the engine keeps a copy). */
static void engine_put(lkv_engine *e, uint64_t h, size_t off, const void *src, size_t bytes);
/* Waits for the engine's queue, then copies out. */
static void engine_get(lkv_engine *e, uint64_t h, size_t off, void *dst, size_t bytes);

/* Where the engine places its arrays: not at 0, a multiple of every
 * alignment a device asks for here. */
#define ENGINE_OFFSET 256

static lkv_counters counters_of(const lkv_runtime *rt)
{
    lkv_counters c;
    TU_OK(lkv_runtime_get_counters(rt, &c));
    return c;
}

static lkv_counters counters_since(const lkv_runtime *rt, lkv_counters before)
{
    lkv_counters c = counters_of(rt);
    c.launches -= before.launches;
    c.h2d_copies -= before.h2d_copies;
    c.h2d_bytes -= before.h2d_bytes;
    c.d2h_copies -= before.d2h_copies;
    c.d2h_bytes -= before.d2h_bytes;
    c.syncs -= before.syncs;
    return c;
}

static void expect_no_transfer_or_wait(lkv_counters d, const char *what)
{
    cr_assert(d.h2d_copies == 0 && d.d2h_copies == 0 && d.syncs == 0,
              "%s: %lld h2d, %lld d2h copies and %lld syncs, expected none", what,
              (long long)d.h2d_copies, (long long)d.d2h_copies, (long long)d.syncs);
}

/* ---- wrap ---- */

static void check_wrap_refuses_misalignment(lkv_runtime *rt, uint64_t handle, uint64_t align)
{
    lkv_buffer *view = NULL;
    uint64_t off = align > 4 ? align / 2 : 2;
    cr_assert_eq(rt->ops->wrap(rt->dev, handle, off, 64, &view), LKV_INVALID_ARGUMENT);
    char want_off[32], want_align[32];
    snprintf(want_off, sizeof want_off, "offset %llu", (unsigned long long)off);
    snprintf(want_align, sizeof want_align, "%llu", (unsigned long long)align);
    cr_assert(strstr(lkv_last_error(), want_off) && strstr(lkv_last_error(), want_align),
              "message: %s", lkv_last_error());
    TU_OK(rt->ops->wrap(rt->dev, handle, align, 64, &view));
    rt->ops->free(rt->dev, view);
}

/* ---- store ---- */

#define ST_CAP 24
#define ST_DIM 33 /* odd: f16 and bf16 words straddle slots and rows */
#define ST_HEADS 4
#define ST_KV 2
#define ST_ROWS 8
#define ST_TOKENS 10
#define ST_ENTRIES 3

static const int32_t st_row0[ST_ENTRIES] = {0, 4, 0}, st_slot0[ST_ENTRIES] = {0, 2, 5},
                     st_count[ST_ENTRIES] = {5, 3, 2}, st_src[ST_ENTRIES] = {3, 0, 8},
                     st_pos0[ST_ENTRIES] = {100, 7, 105}, st_last[ST_ENTRIES] = {-1, 9, 4};

static void store_inputs(float *k, float *v)
{
    uint64_t rng = 7;
    size_t n = (size_t)ST_TOKENS * ST_KV * ST_DIM;
    tu_fill_normal(k, n, &rng, 2.0);
    tu_fill_normal(v, n, &rng, 1.0);
    /* values the finite rule and the rounding decide */
    const float special[] = {NAN, INFINITY, -INFINITY, 70000.0f, -1.0e6f, 65520.0f, 3.0e-6f,
                             -0.0f, 1.0009765625f + 0.00048828125f, 3.39e38f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        k[i * 7 % n] = special[i];
        v[(i * 11 + 3) % n] = special[i];
    }
}

static size_t st_kv_bytes(lkv_dtype dt)
{
    return (size_t)ST_ROWS * ST_CAP * ST_DIM * lkv_dtype_size(dt);
}

/* The six cache buffers' bytes after the store on `rt`, cache buffers from
 * make(), inputs from kbuf/vbuf. */
typedef struct store_result {
    unsigned char *kv[2];
    int32_t meta[4][ST_ROWS * ST_CAP];
} store_result;

static lkv_store_args store_args(const lkv_cache_buffers *c, const lkv_buffer *k,
                                 const lkv_buffer *v)
{
    lkv_store_args a = {c, ST_ENTRIES, st_row0, st_slot0, st_count, st_src, st_pos0, st_last,
                        ST_HEADS, ST_KV, k, v};
    return a;
}

static void store_on_cpu(lkv_dtype dt, const float *k, const float *v, store_result *out)
{
    lkv_runtime *cpu = NULL;
    TU_OK(lkv_runtime_open("ref", &cpu));
    size_t in = sizeof(float) * ST_TOKENS * ST_KV * ST_DIM, meta = 4 * ST_ROWS * ST_CAP;
    lkv_buffer *b[8];
    size_t sizes[8] = {st_kv_bytes(dt), st_kv_bytes(dt), meta, meta, meta, meta, in, in};
    for (int i = 0; i < 8; i++)
        TU_OK(cpu->ops->alloc(cpu->dev, sizes[i], &b[i]));
    TU_OK(cpu->ops->write(cpu->dev, b[6], 0, k, in));
    TU_OK(cpu->ops->write(cpu->dev, b[7], 0, v, in));
    lkv_cache_buffers c = {b[0], b[1], b[2], b[3], b[4], b[5], ST_CAP, ST_DIM, dt, NULL, 0};
    lkv_store_args a = store_args(&c, b[6], b[7]);
    TU_OK(cpu->ops->store(cpu->dev, &a));
    for (int i = 0; i < 2; i++) {
        out->kv[i] = malloc(st_kv_bytes(dt));
        TU_OK(cpu->ops->read(cpu->dev, b[i], 0, out->kv[i], st_kv_bytes(dt)));
    }
    for (int i = 0; i < 4; i++)
        TU_OK(cpu->ops->read(cpu->dev, b[2 + i], 0, out->meta[i], meta));
    for (int i = 0; i < 8; i++)
        cpu->ops->free(cpu->dev, b[i]);
    lkv_runtime_close(cpu);
}

/* Store through views of the engine's buffers, all at ENGINE_OFFSET. */
static void store_on_engine(lkv_runtime *rt, lkv_engine *e, lkv_dtype dt, const float *k,
                            const float *v, store_result *out)
{
    size_t in = sizeof(float) * ST_TOKENS * ST_KV * ST_DIM, meta = 4 * ST_ROWS * ST_CAP;
    size_t sizes[8] = {st_kv_bytes(dt), st_kv_bytes(dt), meta, meta, meta, meta, in, in};
    uint64_t h[8];
    lkv_buffer *view[8];
    for (int i = 0; i < 8; i++) {
        h[i] = engine_buffer(e, ENGINE_OFFSET + sizes[i]);
        TU_OK(rt->ops->wrap(rt->dev, h[i], ENGINE_OFFSET, sizes[i], &view[i]));
    }
    engine_put(e, h[6], ENGINE_OFFSET, k, in);
    engine_put(e, h[7], ENGINE_OFFSET, v, in);
    lkv_cache_buffers c = {view[0], view[1], view[2], view[3], view[4], view[5], ST_CAP, ST_DIM, dt, NULL, 0};
    lkv_store_args a = store_args(&c, view[6], view[7]);
    lkv_counters before = counters_of(rt);
    TU_OK(rt->ops->store(rt->dev, &a));
    lkv_counters d = counters_since(rt, before);
    expect_no_transfer_or_wait(d, "store");
    cr_assert_eq(d.launches, 1, "store: %lld dispatches for one batch", (long long)d.launches);
    for (int i = 0; i < 8; i++)
        rt->ops->free(rt->dev, view[i]); /* the views only: the engine reads its buffers next */
    for (int i = 0; i < 2; i++) {
        out->kv[i] = malloc(st_kv_bytes(dt));
        engine_get(e, h[i], ENGINE_OFFSET, out->kv[i], st_kv_bytes(dt));
    }
    for (int i = 0; i < 4; i++)
        engine_get(e, h[2 + i], ENGINE_OFFSET, out->meta[i], meta);
}

static void check_store_like_cpu(lkv_runtime *rt, lkv_engine *e, lkv_dtype dt)
{
    size_t n = (size_t)ST_TOKENS * ST_KV * ST_DIM;
    float *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
    store_inputs(k, v);
    store_result ref, got;
    store_on_cpu(dt, k, v, &ref);
    store_on_engine(rt, e, dt, k, v, &got);
    const char *names[2] = {"k", "v"};
    for (int i = 0; i < 2; i++) {
        for (size_t b = 0; b < st_kv_bytes(dt); b++)
            cr_assert_eq(got.kv[i][b], ref.kv[i][b], "%s %s byte %zu: 0x%02x, the cpu 0x%02x",
                         lkv_dtype_name(dt), names[i], b, got.kv[i][b], ref.kv[i][b]);
        free(got.kv[i]);
        free(ref.kv[i]);
    }
    cr_assert(memcmp(got.meta, ref.meta, sizeof ref.meta) == 0, "%s: pos or state differ",
              lkv_dtype_name(dt));
    free(k);
    free(v);
}

/* ---- decode batch on device arrays ---- */

#define DB_SEQS 3
#define DB_STEPS 60
/* Sequence 1 joins after this many steps, so a batch holds sequences at
 * different steps (observe and score take each row's own step). */
#define DB_LATE 5
/* Dispatches of a decode step of a layer that evicts nothing: store and
 * the four passes of attend (one each for every sequence of the batch; the
 * fourth also observes), whether the batch holds 2 sequences or 3. */
#define DB_QUIET_LAUNCHES 5

static lkv_cache_config decode_config(lkv_dtype dt)
{
    lkv_cache_config cfg = tu_config(2, 8, 2, 64, 48);
    cfg.dtype = dt;
    cfg.sequences = DB_SEQS;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.window = 16;
    cfg.policy.budget = 32;
    cfg.policy.alpha = 1e-3f;
    return cfg;
}

/* The engine's q, k, v and out arrays, at ENGINE_OFFSET of their buffers. */
typedef struct engine_io {
    uint64_t q, k, v, out;
} engine_io;

static lkv_decode_batch_io device_io(const int32_t *seqs, int32_t n, engine_io b)
{
    lkv_decode_batch_io io = {.n_sequences = n, .sequences = seqs,
                              .memory = LKV_MEMORY_DEVICE};
    io.q_dev = (lkv_device_array){b.q, ENGINE_OFFSET};
    io.k_dev = (lkv_device_array){b.k, ENGINE_OFFSET};
    io.v_dev = (lkv_device_array){b.v, ENGINE_OFFSET};
    io.out_dev = (lkv_device_array){b.out, ENGINE_OFFSET};
    return io;
}

static double worst_error(const float *got, const float *ref, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]) / fmax(1.0, fabs(ref[i]));
        worst = err > worst || err != err ? err : worst;
    }
    return worst;
}

/* Dispatches of each layer's call: the same at every step of that kind. */
typedef struct launch_log {
    int64_t layer0, quiet_last; /* -1 until seen */
} launch_log;

static void expect_fixed(int64_t *seen, int64_t now, const char *what, int step)
{
    if (*seen < 0)
        *seen = now;
    cr_assert_eq(now, *seen, "%s at step %d: %lld dispatches, earlier steps %lld", what, step,
                 (long long)now, (long long)*seen);
}

static void decode_device_step(lkv_runtime *rt, lkv_cache *dev, const int32_t *seqs, int32_t n,
                               engine_io b, int32_t layer, int step, launch_log *log)
{
    lkv_cache_stats before_stats;
    TU_OK(lkv_cache_get_stats(dev, &before_stats));
    lkv_decode_batch_io io = device_io(seqs, n, b);
    lkv_counters before = counters_of(rt);
    TU_OK(lkv_cache_decode_batch(dev, layer, &io));
    lkv_counters d = counters_since(rt, before);
    expect_no_transfer_or_wait(d, "a decode step on device arrays");
    cr_assert_gt(d.launches, 0);
    lkv_cache_stats after;
    TU_OK(lkv_cache_get_stats(dev, &after));
    /* Every op is one pass for the whole batch: the counts do not depend on
     * how many sequences it holds (n is 2 before DB_LATE, 3 after). */
    if (layer == 0)
        expect_fixed(&log->layer0, d.launches, "layer 0", step);
    else if (after.evictions == before_stats.evictions)
        expect_fixed(&log->quiet_last, d.launches, "the last layer without eviction", step);
    if (after.evictions == before_stats.evictions)
        cr_assert_eq(d.launches, DB_QUIET_LAUNCHES, "layer %d step %d (%d sequences), no eviction: "
                     "%lld dispatches", layer, step, n, (long long)d.launches);
}

static void check_decode_batch_like_cpu(lkv_runtime *rt, lkv_engine *e, lkv_dtype dt)
{
    static const int32_t seqs[DB_SEQS] = {2, 0, 1};
    lkv_cache_config cfg = decode_config(dt);
    lkv_runtime *cpu = NULL;
    TU_OK(lkv_runtime_open("ref", &cpu));
    lkv_cache *ref = NULL, *dev = NULL;
    TU_OK(lkv_cache_create(cpu, &cfg, &ref));
    TU_OK(lkv_cache_create(rt, &cfg, &dev));
    size_t qn = (size_t)DB_SEQS * 8 * 64, kvn = (size_t)DB_SEQS * 2 * 64;
    float *q = malloc(4 * qn), *k = malloc(4 * kvn), *v = malloc(4 * kvn);
    float *out_ref = malloc(4 * qn), *out = malloc(4 * qn);
    engine_io b = {engine_buffer(e, ENGINE_OFFSET + 4 * qn), engine_buffer(e, ENGINE_OFFSET + 4 * kvn),
                   engine_buffer(e, ENGINE_OFFSET + 4 * kvn), engine_buffer(e, ENGINE_OFFSET + 4 * qn)};
    launch_log log = {-1, -1};
    uint64_t rng = 11;
    double worst = 0;
    for (int s = 0; s < DB_STEPS; s++)
        for (int32_t l = 0; l < cfg.layers; l++) {
            int32_t n = s < DB_LATE ? DB_SEQS - 1 : DB_SEQS; /* seqs[2] = 1 joins late */
            tu_fill_normal(q, qn, &rng, 1.5);
            tu_fill_normal(k, kvn, &rng, 1.5);
            tu_fill_normal(v, kvn, &rng, 1.0);
            lkv_decode_batch_io hio = {.n_sequences = n, .sequences = seqs,
                                       .memory = LKV_MEMORY_HOST, .q = q, .k = k, .v = v,
                                       .out = out_ref};
            TU_OK(lkv_cache_decode_batch(ref, l, &hio));
            engine_put(e, b.q, ENGINE_OFFSET, q, 4 * qn);
            engine_put(e, b.k, ENGINE_OFFSET, k, 4 * kvn);
            engine_put(e, b.v, ENGINE_OFFSET, v, 4 * kvn);
            decode_device_step(rt, dev, seqs, n, b, l, s, &log);
            engine_get(e, b.out, ENGINE_OFFSET, out, 4 * qn);
            double err = worst_error(out, out_ref, (size_t)n * 8 * 64);
            worst = err > worst || err != err ? err : worst;
        }
    cr_assert_lt(worst, 1e-4, "worst relative output error %g against the cpu", worst);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(dev, &st));
    cr_assert_gt(st.evictions, 0, "the run must evict to test eviction");
    for (int32_t i = 0; i < DB_SEQS; i++) {
        int32_t n_ref = 0, n_dev = 0, t_ref = 0, t_dev = 0;
        TU_OK(lkv_cache_sequence_info(ref, i, &n_ref, &t_ref));
        TU_OK(lkv_cache_sequence_info(dev, i, &n_dev, &t_dev));
        cr_assert(n_ref == n_dev && t_ref == t_dev, "sequence %d: length %d step %d, the cpu %d %d",
                  i, n_dev, t_dev, n_ref, t_ref);
    }
    tu_expect_same_positions(ref, dev, rt->info.backend);
    free(q), free(k), free(v), free(out_ref), free(out);
    lkv_cache_destroy(dev);
    lkv_cache_destroy(ref);
    lkv_runtime_close(cpu);
}

/* ---- an engine-owned cache observing device probabilities ---- */

#define OB_SEQS 2
#define OB_QH 8
#define OB_KV 2
#define OB_CAP 64
#define OB_STEPS 50

static lkv_cache *observe_cache(lkv_runtime *rt, lkv_group_reduce reduce)
{
    lkv_cache_config cfg = tu_config(2, OB_QH, OB_KV, 64, OB_CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.sequences = OB_SEQS;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.window = 8;
    cfg.policy.budget = 30;
    cfg.policy.alpha = 0.02f;
    cfg.policy.group_reduce = reduce;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

/* Softmax rows per query head over n slots, and per cache head their max. */
static void observe_rows(float *q_rows, float *c_rows, int32_t n, uint64_t *rng)
{
    for (int32_t r = 0; r < OB_QH; r++) {
        float *row = q_rows + (size_t)r * OB_CAP;
        double sum = 0;
        for (int32_t j = 0; j < OB_CAP; j++)
            sum += row[j] = j < n ? (float)exp(3.0 * tu_normal(rng)) : 0.0f;
        for (int32_t j = 0; j < n; j++)
            row[j] = (float)(row[j] / sum);
    }
    for (int32_t h = 0; h < OB_KV; h++)
        for (int32_t j = 0; j < OB_CAP; j++) {
            float m = 0.0f;
            for (int32_t g = 0; g < OB_QH / OB_KV; g++)
                m = fmaxf(m, q_rows[(size_t)(h * (OB_QH / OB_KV) + g) * OB_CAP + j]);
            c_rows[(size_t)h * OB_CAP + j] = m;
        }
}

static void expect_plans_equal(const lkv_cache *ref, const lkv_cache *dev, int step)
{
    lkv_eviction_plan a, b;
    TU_OK(lkv_cache_get_plan(ref, &a));
    TU_OK(lkv_cache_get_plan(dev, &b));
    cr_assert_eq(b.n_rows, a.n_rows, "step %d: %d plan rows, the cpu %d", step, b.n_rows, a.n_rows);
    for (int32_t r = 0; r < a.n_rows; r++)
        cr_assert(a.rows[r].n_kept == b.rows[r].n_kept &&
                      memcmp(a.rows[r].kept, b.rows[r].kept,
                             sizeof(int32_t) * (size_t)a.rows[r].n_kept) == 0,
                  "step %d: plan row %d differs from the cpu's", step, r);
}

/* What each step of the device observe checks expects: a step that
 * evicted nothing moved nothing to or from the host and never waited
 * (`moved`, counted around the call), and after the last layer the
 * oracle's plan. The engine then samples its token from `sampled`: a wait
 * on its queue per step, which also retires lazykv's submissions (the
 * Vulkan ring would otherwise fill and wait for one). */
static void expect_device_step(const lkv_cache *ref, const lkv_cache *dev, lkv_engine *e,
                               lkv_counters moved, int64_t evictions_before, int step,
                               int32_t layer, uint64_t sampled, const char *what, int *quiet)
{
    lkv_cache_stats after;
    TU_OK(lkv_cache_get_stats(dev, &after));
    if (after.evictions == evictions_before) {
        expect_no_transfer_or_wait(moved, what);
        (*quiet)++;
    }
    if (layer == 1) {
        expect_plans_equal(ref, dev, step);
        float sample;
        engine_get(e, sampled, ENGINE_OFFSET, &sample, sizeof sample);
    }
}

/* The end of a device observe check: the run evicted, had quiet steps,
 * and holds the oracle's positions. */
static void expect_device_run(const lkv_cache *ref, const lkv_cache *dev, lkv_runtime *rt,
                              int quiet)
{
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(dev, &st));
    cr_assert_gt(st.evictions, 0, "the run must evict to test the plans");
    cr_assert_gt(quiet, 0);
    tu_expect_same_positions(ref, dev, rt->info.backend);
}

/* The engine's rows stay on its device, combined per cache head by the
 * engine (rows = cache heads: their max) or by lazykv's reduce_rows (rows =
 * query heads, max or mean): the plans are the oracle's given the query
 * rows on the host, step by step, and a step that evicts nothing moves
 * nothing to or from the host and never waits. */
static void observe_device_form(lkv_runtime *rt, lkv_engine *e, lkv_probs_rows form,
                                lkv_group_reduce reduce)
{
    static const int32_t seqs[OB_SEQS] = {1, 0};
    lkv_runtime *cpu = NULL;
    TU_OK(lkv_runtime_open("ref", &cpu));
    lkv_cache *ref = observe_cache(cpu, reduce), *dev = observe_cache(rt, reduce);
    int query = form == LKV_ROWS_QUERY_HEADS;
    int32_t n_tok[OB_SEQS] = {9, 14};
    lkv_observe_prompt_io p = {.n_sequences = OB_SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < 2; l++) {
        TU_OK(lkv_cache_observe_prompt(ref, l, &p));
        TU_OK(lkv_cache_observe_prompt(dev, l, &p));
    }
    size_t q_n = (size_t)OB_SEQS * OB_QH * OB_CAP, c_n = (size_t)OB_SEQS * OB_KV * OB_CAP;
    float *q_rows = malloc(4 * q_n), *c_rows = malloc(4 * c_n);
    uint64_t rows_dev = engine_buffer(e, ENGINE_OFFSET + 4 * q_n), rng = 21;
    int quiet = 0;
    for (int s = 0; s < OB_STEPS; s++)
        for (int32_t l = 0; l < 2; l++) {
            for (int32_t i = 0; i < OB_SEQS; i++) {
                int32_t n = 0;
                free(tu_positions(ref, seqs[i], l, 0, &n));
                observe_rows(q_rows + (size_t)i * OB_QH * OB_CAP,
                             c_rows + (size_t)i * OB_KV * OB_CAP, n + 1, &rng);
            }
            lkv_observe_batch_io h = {.n_sequences = OB_SEQS, .sequences = seqs,
                                      .probs = q_rows, .stride = OB_CAP};
            TU_OK(lkv_cache_observe_batch(ref, l, &h));
            engine_put(e, rows_dev, ENGINE_OFFSET, query ? q_rows : c_rows,
                       4 * (query ? q_n : c_n));
            lkv_observe_batch_io d = {.n_sequences = OB_SEQS, .sequences = seqs,
                                      .stride = OB_CAP, .rows = form,
                                      .memory = LKV_MEMORY_DEVICE,
                                      .probs_dev = {rows_dev, ENGINE_OFFSET}};
            lkv_cache_stats before;
            TU_OK(lkv_cache_get_stats(dev, &before));
            lkv_counters c0 = counters_of(rt);
            TU_OK(lkv_cache_observe_batch(dev, l, &d));
            expect_device_step(ref, dev, e, counters_since(rt, c0), before.evictions, s, l,
                               rows_dev, "an observe step on device rows", &quiet);
        }
    expect_device_run(ref, dev, rt, quiet);
    free(q_rows);
    free(c_rows);
    lkv_cache_destroy(dev);
    lkv_cache_destroy(ref);
    lkv_runtime_close(cpu);
}

static void check_observe_device_like_cpu(lkv_runtime *rt, lkv_engine *e)
{
    observe_device_form(rt, e, LKV_ROWS_CACHE_HEADS, LKV_REDUCE_MAX);
    observe_device_form(rt, e, LKV_ROWS_QUERY_HEADS, LKV_REDUCE_MAX);
    observe_device_form(rt, e, LKV_ROWS_QUERY_HEADS, LKV_REDUCE_MEAN);
}

/* ---- a plan applied to the engine's paged K/V on its device ---- */

#define PA_SEQS 3
#define PA_LAYERS 2
#define PA_HEADS 4
#define PA_CAP 200
#define PA_BS 16
#define PA_MAXB (PA_CAP / PA_BS + 1)
#define PA_BLOCKS (PA_SEQS * PA_MAXB)

/* vLLM's [block][slot][head][dim] f16, d 64, blocks shuffled: the bytes
 * lkv_plan_apply leaves on the host, the blocks it frees, and no read-back
 * or host wait (the engine's next kernel sees the moves in queue order). */
static void check_plan_apply_device_like_host(lkv_runtime *rt, lkv_engine *e)
{
    const int32_t dim = 64;
    size_t head = (size_t)dim * 2, bytes = (size_t)PA_BLOCKS * PA_BS * PA_HEADS * head;
    uint64_t rng = 33;
    int32_t table[PA_SEQS * PA_MAXB];
    for (int32_t i = 0; i < PA_BLOCKS; i++)
        table[i] = (i * 7) % PA_BLOCKS; /* 7 is prime to 39: a permutation */
    lkv_kv_layout kv = {.dtype = LKV_DTYPE_F16, .head_dim = dim, .layers = PA_LAYERS,
                        .heads = PA_HEADS, .sequences = PA_SEQS,
                        .slot_stride = PA_HEADS * head, .head_stride = head,
                        .block_stride = PA_BS * PA_HEADS * head, .block_size = PA_BS,
                        .block_table = table, .max_blocks = PA_MAXB, .n_blocks = PA_BLOCKS};
    unsigned char *host[2 * PA_LAYERS], *got = malloc(bytes);
    lkv_device_array dev[2 * PA_LAYERS];
    for (int i = 0; i < 2 * PA_LAYERS; i++) {
        host[i] = malloc(bytes);
        for (size_t b = 0; b < bytes; b++)
            host[i][b] = (unsigned char)(tu_uniform(&rng) * 256);
        dev[i] = (lkv_device_array){engine_buffer(e, ENGINE_OFFSET + bytes), ENGINE_OFFSET};
        engine_put(e, dev[i].handle, ENGINE_OFFSET, host[i], bytes);
    }
    tu_plan p;
    tu_plan_random(&p, PA_SEQS, PA_LAYERS, PA_HEADS, PA_CAP, &rng);
    int32_t freed_d[PA_BLOCKS], freed_h[PA_BLOCKS], n_d = -1, n_h = -1;
    lkv_counters c0 = counters_of(rt);
    TU_OK(lkv_plan_apply_device(rt, &p.plan, &kv, dev, dev + PA_LAYERS, freed_d, PA_BLOCKS, &n_d));
    lkv_counters d = counters_since(rt, c0);
    cr_assert(d.d2h_copies == 0 && d.syncs == 0, "a device apply read back %lld times and "
              "waited %lld times", (long long)d.d2h_copies, (long long)d.syncs);
    kv.k_layers = (void *const *)host;
    kv.v_layers = (void *const *)(host + PA_LAYERS);
    TU_OK(lkv_plan_apply(&p.plan, &kv, freed_h, PA_BLOCKS, &n_h));
    cr_assert(n_d == n_h && n_h > 0 && memcmp(freed_d, freed_h, sizeof(int32_t) * (size_t)n_h) == 0,
              "freed %d blocks, the host %d", n_d, n_h);
    for (int i = 0; i < 2 * PA_LAYERS; i++) {
        engine_get(e, dev[i].handle, ENGINE_OFFSET, got, bytes);
        for (size_t b = 0; b < bytes; b++)
            cr_assert_eq(got[b], host[i][b], "%s layer %d byte %zu: 0x%02x, the host 0x%02x",
                         i < PA_LAYERS ? "K" : "V", i % PA_LAYERS, b, got[b], host[i][b]);
        free(host[i]);
    }
    free(got);
    tu_plan_free(&p);
}

/* ---- the engine's paged K/V for the observe checks ---- */

#define OB_BS 16
#define OB_MAXB (OB_CAP / OB_BS)
#define OB_BLOCKS (OB_SEQS * OB_MAXB + 3)
#define OB_DIM 64

/* vLLM's [block][slot][head][dim] f16 d 64 for observe_cache's caches,
 * blocks shuffled: n buffers (layer 0's and 1's K, then V) of random
 * values, each on the host and in the engine's memory. */
typedef struct ob_paged {
    lkv_kv_layout kv;
    int32_t table[OB_SEQS * OB_MAXB];
    size_t bytes;
    int n;
    unsigned char *host[4];
    lkv_device_array dev[4];
} ob_paged;

static void ob_paged_make(ob_paged *p, lkv_engine *e, int n, uint64_t *rng)
{
    size_t head = OB_DIM * 2;
    for (int32_t i = 0; i < OB_SEQS * OB_MAXB; i++)
        p->table[i] = (i * 3 + 1) % OB_BLOCKS;
    p->kv = (lkv_kv_layout){.dtype = LKV_DTYPE_F16, .head_dim = OB_DIM, .layers = 2,
                            .heads = OB_KV, .sequences = OB_SEQS, .slot_stride = OB_KV * head,
                            .head_stride = head, .block_stride = OB_BS * OB_KV * head,
                            .block_size = OB_BS, .block_table = p->table, .max_blocks = OB_MAXB,
                            .n_blocks = OB_BLOCKS};
    p->bytes = (size_t)OB_BLOCKS * OB_BS * OB_KV * head;
    p->n = n;
    for (int i = 0; i < n; i++) {
        p->host[i] = malloc(p->bytes);
        for (size_t x = 0; x < p->bytes / 2; x++)
            lkv_dtype_store(LKV_DTYPE_F16, p->host[i], x, (float)tu_normal(rng));
        p->dev[i] = (lkv_device_array){engine_buffer(e, ENGINE_OFFSET + p->bytes), ENGINE_OFFSET};
        engine_put(e, p->dev[i].handle, ENGINE_OFFSET, p->host[i], p->bytes);
    }
    p->kv.k_layers = (void *const *)p->host;
    p->kv.v_layers = n > 2 ? (void *const *)(p->host + 2) : NULL;
}

static void ob_paged_free(ob_paged *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->host[i]);
}

/* ---- a cache's own plan applied from its device kept lists ---- */

/* An engine cache observing device rows (observe_device_form's), whose
 * engine keeps vLLM-paged f16 K/V on its device: at every step that
 * evicts, lkv_cache_apply_plan_device moves them with no read-back or wait
 * in the whole step (observe and apply), and the bytes are those
 * lkv_plan_apply leaves on a host copy given the plan read back after. */
static void check_cache_plan_device_like_host(lkv_runtime *rt, lkv_engine *e)
{
    static const int32_t seqs[OB_SEQS] = {1, 0};
    uint64_t rng = 41;
    ob_paged pk;
    ob_paged_make(&pk, e, 4, &rng);
    unsigned char *got = malloc(pk.bytes);
    lkv_cache *c = observe_cache(rt, LKV_REDUCE_MAX);
    int32_t n_tok[OB_SEQS] = {9, 14};
    lkv_observe_prompt_io p = {.n_sequences = OB_SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < 2; l++)
        TU_OK(lkv_cache_observe_prompt(c, l, &p));
    size_t q_n = (size_t)OB_SEQS * OB_QH * OB_CAP;
    float *q_rows = malloc(4 * q_n), *c_rows = malloc(4 * (size_t)OB_SEQS * OB_KV * OB_CAP);
    uint64_t rows_dev = engine_buffer(e, ENGINE_OFFSET + 4 * q_n);
    int evicting = 0;
    for (int s = 0; s < OB_STEPS; s++) {
        lkv_cache_stats before, after;
        TU_OK(lkv_cache_get_stats(c, &before));
        int32_t len[2][OB_SEQS]; /* read before the step: a read is a wait */
        for (int32_t l = 0; l < 2; l++)
            for (int32_t i = 0; i < OB_SEQS; i++)
                free(tu_positions(c, seqs[i], l, 0, &len[l][i]));
        lkv_counters c0 = counters_of(rt);
        for (int32_t l = 0; l < 2; l++) {
            for (int32_t i = 0; i < OB_SEQS; i++)
                observe_rows(q_rows + (size_t)i * OB_QH * OB_CAP,
                             c_rows + (size_t)i * OB_KV * OB_CAP, len[l][i] + 1, &rng);
            engine_put(e, rows_dev, ENGINE_OFFSET, q_rows, 4 * q_n);
            lkv_observe_batch_io d = {.n_sequences = OB_SEQS, .sequences = seqs,
                                      .stride = OB_CAP, .memory = LKV_MEMORY_DEVICE,
                                      .probs_dev = {rows_dev, ENGINE_OFFSET}};
            TU_OK(lkv_cache_observe_batch(c, l, &d));
        }
        TU_OK(lkv_cache_get_stats(c, &after));
        if (after.evictions == before.evictions)
            continue;
        int32_t freed_d[OB_BLOCKS], freed_h[OB_BLOCKS], n_d = -1, n_h = -1;
        TU_OK(lkv_cache_apply_plan_device(c, &pk.kv, pk.dev, pk.dev + 2, freed_d, OB_BLOCKS,
                                          &n_d));
        lkv_counters d = counters_since(rt, c0);
        cr_assert(d.d2h_copies == 0 && d.syncs == 0,
                  "step %d: an evicting step applied on the device read back %lld times and "
                  "waited %lld times", s, (long long)d.d2h_copies, (long long)d.syncs);
        lkv_eviction_plan plan;
        lkv_counters c1 = counters_of(rt);
        TU_OK(lkv_cache_get_plan(c, &plan));
        lkv_counters r = counters_since(rt, c1);
        cr_assert(r.syncs == 1 && r.d2h_copies == 1,
                  "step %d: reading a plan of %d rows back took %lld reads and %lld waits, "
                  "not one", s, plan.n_rows, (long long)r.d2h_copies, (long long)r.syncs);
        TU_OK(lkv_plan_apply(&plan, &pk.kv, freed_h, OB_BLOCKS, &n_h));
        cr_assert(n_d == n_h && memcmp(freed_d, freed_h, sizeof(int32_t) * (size_t)n_h) == 0,
                  "step %d: freed %d blocks, the host %d", s, n_d, n_h);
        for (int i = 0; i < 4; i++) {
            engine_get(e, pk.dev[i].handle, ENGINE_OFFSET, got, pk.bytes);
            for (size_t b = 0; b < pk.bytes; b++)
                cr_assert_eq(got[b], pk.host[i][b], "step %d %s layer %d byte %zu: 0x%02x, the "
                             "host 0x%02x", s, i < 2 ? "K" : "V", i % 2, b, got[b],
                             pk.host[i][b]);
        }
        evicting++;
    }
    cr_assert_gt(evicting, 2, "the run must evict to test the plans");
    ob_paged_free(&pk);
    free(got), free(q_rows), free(c_rows);
    lkv_cache_destroy(c);
}

/* ---- probabilities recomputed from the engine's device q, K and lse ---- */

/* An engine cache fed the engine's device q, lse and vLLM-paged f16 K
 * makes, step by step, the plans of the oracle's cache fed the same arrays
 * on the host (which recomputes in double: this device's kernel runs in
 * double where it has f64, else in f32, a few ulp off); a step that evicts
 * nothing transfers nothing to the host and never waits. */
static void check_qk_device_like_host(lkv_runtime *rt, lkv_engine *e)
{
    static const int32_t seqs[OB_SEQS] = {1, 0};
    uint64_t rng = 57;
    ob_paged pk;
    ob_paged_make(&pk, e, 2, &rng);
    lkv_runtime *cpu = NULL;
    TU_OK(lkv_runtime_open("ref", &cpu));
    lkv_cache *ref = observe_cache(cpu, LKV_REDUCE_MAX), *dev = observe_cache(rt, LKV_REDUCE_MAX);
    int32_t n_tok[OB_SEQS] = {9, 14};
    lkv_observe_prompt_io p = {.n_sequences = OB_SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < 2; l++) {
        TU_OK(lkv_cache_observe_prompt(ref, l, &p));
        TU_OK(lkv_cache_observe_prompt(dev, l, &p));
    }
    float q[OB_SEQS * OB_QH * OB_DIM], lse[OB_SEQS * OB_QH], scale = 0.125f;
    uint64_t q_dev = engine_buffer(e, ENGINE_OFFSET + sizeof q);
    uint64_t lse_dev = engine_buffer(e, ENGINE_OFFSET + sizeof lse);
    int quiet = 0;
    for (int s = 0; s < OB_STEPS; s++)
        for (int32_t l = 0; l < 2; l++) {
            for (int32_t i = 0; i < OB_SEQS; i++) {
                int32_t n = 0;
                free(tu_positions(ref, seqs[i], l, 0, &n));
                for (int32_t qh = 0; qh < OB_QH; qh++) {
                    float *x = q + ((size_t)i * OB_QH + (size_t)qh) * OB_DIM;
                    for (int32_t d = 0; d < OB_DIM; d++)
                        x[d] = (float)(1.5 * tu_normal(&rng));
                    lse[i * OB_QH + qh] = tu_engine_lse(&pk.kv, pk.host[l], seqs[i],
                                                        qh / (OB_QH / OB_KV), n + 1, x, scale);
                }
            }
            lkv_observe_qk_io h = {.n_sequences = OB_SEQS, .sequences = seqs, .q = q,
                                   .lse = lse, .scale = scale, .k = &pk.kv};
            TU_OK(lkv_cache_observe_batch_qk(ref, l, &h));
            engine_put(e, q_dev, ENGINE_OFFSET, q, sizeof q);
            engine_put(e, lse_dev, ENGINE_OFFSET, lse, sizeof lse);
            lkv_observe_qk_io d = {.n_sequences = OB_SEQS, .sequences = seqs, .scale = scale,
                                   .k = &pk.kv, .memory = LKV_MEMORY_DEVICE,
                                   .q_dev = {q_dev, ENGINE_OFFSET},
                                   .lse_dev = {lse_dev, ENGINE_OFFSET}, .k_dev = pk.dev};
            lkv_cache_stats before;
            TU_OK(lkv_cache_get_stats(dev, &before));
            lkv_counters c0 = counters_of(rt);
            TU_OK(lkv_cache_observe_batch_qk(dev, l, &d));
            expect_device_step(ref, dev, e, counters_since(rt, c0), before.evictions, s, l, q_dev,
                               "a qk step on device arrays", &quiet);
        }
    expect_device_run(ref, dev, rt, quiet);
    ob_paged_free(&pk);
    lkv_cache_destroy(dev);
    lkv_cache_destroy(ref);
    lkv_runtime_close(cpu);
}

/* An h2o cache's prompt votes recomputed from the engine's device q, lse
 * and K: every row's vote sums within 1e-5 (relative) of the oracle's fed
 * the same arrays on the host (a device without f64 sums in f32), the
 * same slots held. */
static void check_prompt_qk_device_like_host(lkv_runtime *rt, lkv_engine *e)
{
    enum { TOKENS = 40 + 31 };
    static const int32_t seqs[OB_SEQS] = {1, 0};
    int32_t n_tok[OB_SEQS] = {40, 31};
    uint64_t rng = 63;
    ob_paged pk;
    ob_paged_make(&pk, e, 2, &rng);
    lkv_runtime *cpu = NULL;
    TU_OK(lkv_runtime_open("ref", &cpu));
    lkv_cache *c[2] = {NULL, NULL};
    for (int b = 0; b < 2; b++) {
        lkv_cache_config cfg = tu_config(2, OB_QH, OB_KV, OB_DIM, OB_CAP);
        cfg.kv_owner = LKV_KV_ENGINE;
        cfg.sequences = OB_SEQS;
        TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_H2O));
        cfg.policy.budget = 50;
        TU_OK(lkv_cache_create(b ? rt : cpu, &cfg, &c[b]));
    }
    size_t q_n = (size_t)TOKENS * OB_QH * OB_DIM, lse_n = (size_t)TOKENS * OB_QH;
    float *q = malloc(4 * q_n), *lse = malloc(4 * lse_n), scale = 0.125f;
    uint64_t q_dev = engine_buffer(e, ENGINE_OFFSET + 4 * q_n);
    uint64_t lse_dev = engine_buffer(e, ENGINE_OFFSET + 4 * lse_n);
    for (int32_t l = 0; l < 2; l++) {
        for (int32_t i = 0, at = 0; i < OB_SEQS; at += n_tok[i], i++)
            for (int32_t a = 0; a < n_tok[i]; a++)
                for (int32_t qh = 0; qh < OB_QH; qh++) {
                    float *x = q + ((size_t)(at + a) * OB_QH + (size_t)qh) * OB_DIM;
                    for (int32_t d = 0; d < OB_DIM; d++)
                        x[d] = (float)(1.5 * tu_normal(&rng));
                    lse[(at + a) * OB_QH + qh] = tu_engine_lse(&pk.kv, pk.host[l], seqs[i],
                                                               qh / (OB_QH / OB_KV), a + 1, x,
                                                               scale);
                }
        engine_put(e, q_dev, ENGINE_OFFSET, q, 4 * q_n);
        engine_put(e, lse_dev, ENGINE_OFFSET, lse, 4 * lse_n);
        lkv_observe_prompt_qk_io h = {.n_sequences = OB_SEQS, .sequences = seqs,
                                      .n_tokens = n_tok, .q = q, .lse = lse, .scale = scale,
                                      .k = &pk.kv};
        lkv_observe_prompt_qk_io d = {.n_sequences = OB_SEQS, .sequences = seqs,
                                      .n_tokens = n_tok, .scale = scale, .k = &pk.kv,
                                      .memory = LKV_MEMORY_DEVICE,
                                      .q_dev = {q_dev, ENGINE_OFFSET},
                                      .lse_dev = {lse_dev, ENGINE_OFFSET}, .k_dev = pk.dev};
        TU_OK(lkv_cache_observe_prompt_qk(c[0], l, &h));
        TU_OK(lkv_cache_observe_prompt_qk(c[1], l, &d));
    }
    double most = 0.0;
    for (int32_t i = 0; i < OB_SEQS; i++)
        for (int32_t l = 0; l < 2; l++)
            for (int32_t h = 0; h < OB_KV; h++) {
                float f[2][OB_CAP];
                int32_t n[2] = {0, 0};
                for (int b = 0; b < 2; b++) {
                    lkv_slot_view v = {.cap = OB_CAP, .state_f = f[b]};
                    TU_OK(lkv_cache_read_slots(c[b], seqs[i], l, h, &v, &n[b]));
                }
                cr_assert_eq(n[1], n[0], "sequence %d layer %d head %d: %d slots, the oracle %d",
                             seqs[i], l, h, n[1], n[0]);
                for (int32_t j = 0; j < n[0]; j++) {
                    double err = fabs((double)f[1][j] - (double)f[0][j]) / fmax(1e-30, fabs(f[0][j]));
                    cr_assert(err <= 1e-5, "sequence %d layer %d head %d slot %d: votes %.9g, the "
                              "oracle's %.9g", seqs[i], l, h, j, (double)f[1][j], (double)f[0][j]);
                    most = f[0][j] > most ? f[0][j] : most;
                }
            }
    cr_assert_gt(most, 0.5, "the votes must add up");
    tu_expect_same_positions(c[0], c[1], rt->info.backend);
    free(q), free(lse);
    ob_paged_free(&pk);
    lkv_cache_destroy(c[1]);
    lkv_cache_destroy(c[0]);
    lkv_runtime_close(cpu);
}

/* A test's whole life: the engine, lazykv on it (the including test's
 * engine_open and lazykv_on, after which it is used), one check, both
 * closed. */
#define ON_ENGINE(check)                                                                      \
    do {                                                                                      \
        lkv_engine on_e;                                                                      \
        engine_open(&on_e);                                                                   \
        lkv_runtime *on_rt = lazykv_on(&on_e);                                                \
        check(on_rt, &on_e);                                                                  \
        lkv_runtime_close(on_rt);                                                             \
        engine_close(&on_e);                                                                  \
    } while (0)

#endif /* LKV_ENGINE_CHECKS_H */
