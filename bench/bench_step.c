/* The batched engine step's scaling (bench_step.h). One cache per batch
 * size n of n sequences, lazy at a budget above every length (so no
 * eviction falls in the timed steps: each does store, attend with the
 * probabilities and observe at 4 layers); sequence j prefilled with
 * 256 + 144 (2j + 1) / 2n tokens, so every batch's lengths lie in 256..400
 * with the same mean (328). A sample is STEPS steps of the whole batch, one
 * lkv_cache_decode_batch call per layer, then a sync, timed on the host
 * clock; the sequences are then truncated back (outside the timing), so
 * every sample sees the same lengths. The batch sizes take turns sample by
 * sample (round robin), so a slow patch of a shared machine lands on all of
 * them alike, and the ratio of each size's per-sequence time to batch 1's
 * is taken of the medians, as the median of each round's own ratio (the
 * samples of a round ran back to back, so a slow patch cancels), and of
 * the minima, all from one run. */
#include "bench_step.h"

#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"
#include "bench_inputs.h"
#include "bench_devices.h"
#include "bench_timer.h"
#include "clock.h"
#include "error.h"

#define LAYERS 4
#define SLOTS_LO 256
#define SLOTS_HI 400
#define STEPS 4  /* steps per sample */
#define WARMUP 3 /* samples */
#define SAMPLES 101
#define SAMPLES_QUICK 21
#define N_SIZES 3

static const int32_t sizes[N_SIZES] = {1, 8, 32};

typedef struct step_cache {
    lkv_cache *c;
    int32_t n, seqs[32];
    float *out;
    double *t; /* [samples] seconds per step */
} step_cache;

static int32_t prompt_of(int32_t j, int32_t n)
{
    return SLOTS_LO + (int32_t)((int64_t)(SLOTS_HI - SLOTS_LO) * (2 * j + 1) / (2 * n));
}

static lkv_status open_step(lkv_runtime *rt, const lkv_bench_decode_inputs *in, step_cache *sc)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = LAYERS;
    cfg.q_heads = in->shape.q_heads;
    cfg.kv_heads = in->shape.kv_heads;
    cfg.head_dim = in->shape.head_dim;
    cfg.dtype = in->shape.dtype;
    cfg.sequences = sc->n;
    cfg.capacity = SLOTS_HI + STEPS + 8; /* window 8 */
    lkv_status st = lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    /* lazy's peak is budget + window: the budget holds the longest
     * sequence's every step, so no eviction, every step the same work */
    cfg.policy.window = 8;
    cfg.policy.budget = cfg.capacity - cfg.policy.window;
    if (st == LKV_OK)
        st = lkv_cache_create(rt, &cfg, &sc->c);
    for (int32_t j = 0; j < sc->n && st == LKV_OK; j++) {
        sc->seqs[j] = j;
        for (int32_t l = 0; l < LAYERS && st == LKV_OK; l++) {
            lkv_prefill_io io = {.n_tokens = prompt_of(j, sc->n), .k = in->k, .v = in->v,
                                 .memory = LKV_MEMORY_HOST};
            st = lkv_cache_prefill(sc->c, j, l, &io);
        }
    }
    return st;
}

/* One sample: STEPS steps of every layer, synced, then the tokens dropped. */
static lkv_status sample(lkv_runtime *rt, const lkv_bench_decode_inputs *in, step_cache *sc,
                         double *out_s)
{
    lkv_status st = LKV_OK;
    double t0 = lkv_clock_seconds();
    for (int32_t i = 0; i < STEPS && st == LKV_OK; i++)
        for (int32_t l = 0; l < LAYERS && st == LKV_OK; l++)
            st = lkv_bench_batch_step(sc->c, in, i, l, sc->n, sc->seqs, sc->out);
    if (st == LKV_OK)
        st = rt->ops->sync(rt->dev);
    *out_s = (lkv_clock_seconds() - t0) / STEPS;
    for (int32_t j = 0; j < sc->n && st == LKV_OK; j++)
        st = lkv_cache_truncate_sequence(sc->c, j, STEPS);
    return st;
}

static double min_of(const double *x, int n)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

static lkv_status measure(lkv_runtime *rt, const lkv_bench_settings *s,
                          const lkv_bench_decode_inputs *in, const char *label, FILE *out)
{
    int samples = s->quick ? SAMPLES_QUICK : SAMPLES;
    step_cache sc[N_SIZES];
    memset(sc, 0, sizeof sc);
    lkv_status st = LKV_OK;
    size_t qs = (size_t)in->shape.q_heads * (size_t)in->shape.head_dim;
    for (int b = 0; b < N_SIZES && st == LKV_OK; b++) {
        sc[b].n = sizes[b];
        sc[b].out = malloc(sizeof(float) * qs * (size_t)sizes[b]);
        sc[b].t = malloc(sizeof(double) * (size_t)samples);
        st = sc[b].out && sc[b].t ? open_step(rt, in, &sc[b])
                                  : lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    }
    for (int k = -WARMUP; k < samples && st == LKV_OK; k++)
        for (int b = 0; b < N_SIZES && st == LKV_OK; b++) {
            double t = 0.0;
            st = sample(rt, in, &sc[b], &t);
            if (k >= 0)
                sc[b].t[k] = t;
        }
    double *paired = st == LKV_OK ? malloc(sizeof(double) * (size_t)samples) : NULL;
    if (st == LKV_OK && !paired)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory");
    if (st == LKV_OK) {
        double med[N_SIZES], lo[N_SIZES], pair[N_SIZES];
        for (int b = 0; b < N_SIZES; b++) { /* before the medians sort the samples */
            for (int k = 0; k < samples; k++)
                paired[k] = sc[b].t[k] / sizes[b] / sc[0].t[k];
            pair[b] = lkv_bench_median(paired, samples);
        }
        for (int b = 0; b < N_SIZES; b++) {
            lo[b] = min_of(sc[b].t, samples);
            med[b] = lkv_bench_median(sc[b].t, samples);
        }
        for (int b = 0; b < N_SIZES; b++)
            fprintf(out, "%-10s %5d %12.1f %12.1f %12.1f %9.2f %9.2f %9.2f\n", label, sizes[b],
                    med[b] * 1e6, lo[b] * 1e6, med[b] / sizes[b] * 1e6,
                    med[b] / sizes[b] / med[0], pair[b], lo[b] / sizes[b] / lo[0]);
    } else {
        fprintf(out, "%-10s failed: %s\n", label, lkv_last_error());
    }
    free(paired);
    for (int b = 0; b < N_SIZES; b++) {
        lkv_cache_destroy(sc[b].c);
        free(sc[b].out);
        free(sc[b].t);
    }
    return st;
}

lkv_status lkv_bench_step_ratios(const lkv_bench_settings *s, FILE *out)
{
    lkv_bench_shape shape = {"--step-ratios", 8, 2, 64, s->decode_shape.dtype};
    lkv_bench_decode_inputs in;
    /* sequence j of a batch takes token i + j at step i */
    lkv_status st = lkv_bench_decode_inputs_make(&shape, SLOTS_HI, STEPS + 32, s->seed, &in);
    if (st != LKV_OK)
        return st;
    lkv_runtime *rts[LKV_BENCH_MAX_DEVICES];
    lkv_bench_device devs[LKV_BENCH_MAX_DEVICES];
    int n = 0;
    st = lkv_bench_devices_open(s, rts, devs, &n);
    if (st != LKV_OK) {
        lkv_bench_decode_inputs_free(&in);
        return st;
    }
    char sh[64];
    lkv_bench_shape_label(&shape, sh, sizeof sh);
    fprintf(out, "engine step: %d layers, %s, each sequence at %d..%d slots (mean %d), lazy, no "
            "eviction;\none lkv_cache_decode_batch per layer; %d steps a sample, %d samples "
            "per batch size, round robin\n", LAYERS, sh, SLOTS_LO, SLOTS_HI,
            (SLOTS_LO + SLOTS_HI) / 2, STEPS, s->quick ? SAMPLES_QUICK : SAMPLES);
    fprintf(out, "%-10s %5s %12s %12s %12s %9s %9s %9s\n", "DEVICE", "BATCH", "STEP_MED_US",
            "STEP_MIN_US", "PER_SEQ_US", "RATIO_MED", "RATIO_PAIR", "RATIO_MIN");
    lkv_status worst = LKV_OK;
    for (int d = 0; d < n; d++) {
        lkv_status r = measure(rts[d], s, &in, devs[d].label, out);
        worst = worst == LKV_OK ? r : worst;
    }
    fprintf(out, "RATIO: per-sequence time at the batch over batch 1's: of the medians; the "
            "median of each round's ratio; of the minima\n");
    lkv_bench_devices_close(rts, n);
    lkv_bench_decode_inputs_free(&in);
    return worst;
}
