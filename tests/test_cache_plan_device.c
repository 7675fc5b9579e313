/* lkv_cache_apply_plan_device against lkv_plan_apply of the same plan read
 * back (lkv_cache_get_plan): an engine-owned cache runs lazy and h2o over
 * random attention, and at every step that evicts, one copy of the engine's
 * paged (or dense) K/V is moved from the kept lists on the device, the
 * other on the host; every byte and every freed block must agree. Half the
 * steps apply on the device before the plan is read back, half after, and
 * the device apply must not read back or wait. The host-memory backends'
 * device memory is host memory; the GPU kernels are checked the same way
 * on lavapipe and PoCL (tests/opencl/engine_checks.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SEQS 3
#define LAYERS 2
#define HEADS 2
#define QH 4
#define CAP 48
#define BS 8
#define MAXB (CAP / BS)
#define BLOCKS (SEQS * MAXB + 5)
#define STEPS 60

typedef struct engine_kv {
    lkv_kv_layout kv;
    size_t layer_bytes;
    unsigned char *k[LAYERS], *v[LAYERS];
    int32_t table[SEQS * MAXB];
} engine_kv;

/* vLLM's [block][slot][head][dim] f16 d 8 over a shuffled pool, or dense
 * [seq][slot][head][dim]; random bytes (a move is a move, whatever the
 * values). The copy shares nothing with it but the table's contents. */
static void make_kv(engine_kv *e, int paged, uint64_t *rng)
{
    memset(e, 0, sizeof *e);
    size_t head = 8 * 2;
    e->kv = (lkv_kv_layout){.dtype = LKV_DTYPE_F16, .head_dim = 8, .layers = LAYERS,
                            .heads = HEADS, .sequences = SEQS, .slot_stride = HEADS * head,
                            .head_stride = head};
    if (paged) {
        e->kv.block_size = BS;
        e->kv.max_blocks = MAXB;
        e->kv.n_blocks = BLOCKS;
        e->kv.block_stride = BS * HEADS * head;
        e->layer_bytes = BLOCKS * e->kv.block_stride;
        for (int32_t i = 0; i < SEQS * MAXB; i++)
            e->table[i] = (i * 7 + 3) % BLOCKS; /* 7 is prime to 41: distinct */
        e->kv.block_table = e->table;
    } else {
        e->kv.seq_stride = CAP * e->kv.slot_stride;
        e->layer_bytes = SEQS * e->kv.seq_stride;
    }
    for (int32_t l = 0; l < LAYERS; l++) {
        e->k[l] = malloc(e->layer_bytes);
        e->v[l] = malloc(e->layer_bytes);
        for (size_t i = 0; i < e->layer_bytes; i++) {
            e->k[l][i] = (unsigned char)(tu_uniform(rng) * 256);
            e->v[l][i] = (unsigned char)(tu_uniform(rng) * 256);
        }
    }
    e->kv.k_layers = (void *const *)e->k;
    e->kv.v_layers = (void *const *)e->v;
}

static void copy_kv(engine_kv *dst, const engine_kv *src)
{
    *dst = *src;
    if (src->kv.block_table)
        dst->kv.block_table = dst->table;
    for (int32_t l = 0; l < LAYERS; l++) {
        dst->k[l] = malloc(src->layer_bytes);
        dst->v[l] = malloc(src->layer_bytes);
        memcpy(dst->k[l], src->k[l], src->layer_bytes);
        memcpy(dst->v[l], src->v[l], src->layer_bytes);
    }
    dst->kv.k_layers = (void *const *)dst->k;
    dst->kv.v_layers = (void *const *)dst->v;
}

static void free_kv(engine_kv *e)
{
    for (int32_t l = 0; l < LAYERS; l++)
        free(e->k[l]), free(e->v[l]);
}

static lkv_status apply_device(lkv_cache *c, engine_kv *e, int32_t *freed, int32_t *n_freed)
{
    lkv_device_array k[LAYERS], v[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++) {
        k[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->k[l], 0};
        v[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->v[l], 0};
    }
    return lkv_cache_apply_plan_device(c, &e->kv, k, v, freed, BLOCKS, n_freed);
}

static lkv_cache *engine_cache(lkv_runtime *rt, lkv_policy_kind kind)
{
    lkv_cache_config cfg = tu_config(LAYERS, QH, HEADS, 8, CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.sequences = SEQS;
    TU_OK(lkv_policy_init(&cfg.policy, kind));
    cfg.policy.budget = 20;
    cfg.policy.window = 7;
    cfg.policy.alpha = 0.02f;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

/* One step of every layer with random softmax rows per query head. */
static void step(lkv_cache *c, const int32_t *seqs, uint64_t *rng)
{
    float *rows = calloc((size_t)SEQS * QH * CAP, sizeof(float));
    for (int32_t l = 0; l < LAYERS; l++) {
        for (int32_t i = 0; i < SEQS; i++) {
            int32_t n = 0;
            free(tu_positions(c, seqs[i], l, 0, &n));
            for (int32_t r = 0; r < QH; r++) {
                float *row = rows + ((size_t)i * QH + (size_t)r) * CAP;
                double sum = 0;
                for (int32_t j = 0; j <= n; j++)
                    sum += row[j] = (float)exp(3.0 * tu_normal(rng));
                for (int32_t j = 0; j <= n; j++)
                    row[j] = (float)(row[j] / sum);
            }
        }
        lkv_observe_batch_io io = {.n_sequences = SEQS, .sequences = seqs, .probs = rows,
                                   .stride = CAP};
        TU_OK(lkv_cache_observe_batch(c, l, &io));
    }
    free(rows);
}

static void check_backend(const char *backend, lkv_policy_kind kind, int paged)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open(backend, &rt));
    lkv_cache *c = engine_cache(rt, kind);
    static const int32_t seqs[SEQS] = {2, 0, 1};
    int32_t n_tok[SEQS] = {9, 14, 5};
    lkv_observe_prompt_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < LAYERS; l++)
        TU_OK(lkv_cache_observe_prompt(c, l, &p));
    uint64_t rng = 17 + (uint64_t)kind;
    engine_kv host, dev;
    make_kv(&host, paged, &rng);
    copy_kv(&dev, &host);
    char what[64];
    int evicting = 0;
    for (int s = 0; s < STEPS; s++) {
        step(c, seqs, &rng);
        snprintf(what, sizeof what, "%s %s %s step %d", backend, lkv_policy_name(kind),
                 paged ? "paged" : "dense", s);
        int32_t freed_h[BLOCKS], freed_d[BLOCKS], n_h = -1, n_d = -1;
        lkv_eviction_plan plan;
        if (evicting % 2) { /* the plan read back first: the lists are on both sides */
            TU_OK(lkv_cache_get_plan(c, &plan));
            TU_OK(apply_device(c, &dev, freed_d, &n_d));
        } else {
            lkv_counters before, after;
            TU_OK(lkv_runtime_get_counters(rt, &before));
            TU_OK(apply_device(c, &dev, freed_d, &n_d));
            TU_OK(lkv_runtime_get_counters(rt, &after));
            cr_assert(after.d2h_copies == before.d2h_copies && after.syncs == before.syncs,
                      "%s: the device apply read back or waited", what);
            TU_OK(lkv_cache_get_plan(c, &plan));
        }
        TU_OK(lkv_plan_apply(&plan, &host.kv, freed_h, BLOCKS, &n_h));
        evicting += plan.n_rows > 0;
        for (int32_t l = 0; l < LAYERS; l++)
            cr_assert(memcmp(host.k[l], dev.k[l], host.layer_bytes) == 0 &&
                          memcmp(host.v[l], dev.v[l], host.layer_bytes) == 0,
                      "%s: layer %d differs from the host apply", what, l);
        cr_assert_eq(n_d, n_h, "%s: %d blocks freed, the host %d", what, n_d, n_h);
        cr_assert(memcmp(freed_d, freed_h, sizeof(int32_t) * (size_t)n_h) == 0, "%s", what);
    }
    cr_assert_gt(evicting, 3, "%s: the run must evict", what);
    free_kv(&host);
    free_kv(&dev);
    lkv_cache_destroy(c);
    lkv_runtime_close(rt);
}

Test(cache_plan_device, moves_what_the_read_back_plan_moves_on_the_host)
{
    const char *backends[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++)
        for (int paged = 0; paged < 2; paged++) {
            check_backend(backends[b], LKV_POLICY_LAZY, paged);
            check_backend(backends[b], LKV_POLICY_H2O, paged);
        }
}

Test(cache_plan_device, refuses_an_owned_cache_and_a_table_without_the_rows_blocks)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    uint64_t rng = 5;
    engine_kv e;
    make_kv(&e, 1, &rng);
    lkv_cache_config cfg = tu_config(LAYERS, QH, HEADS, 8, CAP);
    lkv_cache *owned = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &owned));
    cr_expect_eq(apply_device(owned, &e, NULL, NULL), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "owns its K/V"), "%s", lkv_last_error());
    lkv_cache_destroy(owned);
    /* run to an eviction, then take sequence 0's second block away */
    lkv_cache *c = engine_cache(rt, LKV_POLICY_H2O);
    static const int32_t seqs[SEQS] = {0, 1, 2};
    int32_t n_tok[SEQS] = {20, 20, 20};
    lkv_observe_prompt_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < LAYERS; l++)
        TU_OK(lkv_cache_observe_prompt(c, l, &p));
    lkv_eviction_plan plan = {.n_rows = 0, .rows = NULL};
    for (int s = 0; s < 5 && plan.n_rows == 0; s++) {
        step(c, seqs, &rng);
        TU_OK(lkv_cache_get_plan(c, &plan));
    }
    cr_assert_gt(plan.n_rows, 0, "h2o at budget 20 must evict a 21-slot row");
    engine_kv before;
    copy_kv(&before, &e);
    int32_t n = -7;
    /* a layout of another shape than the cache's */
    e.kv.head_dim = 4;
    cr_expect_eq(apply_device(c, &e, NULL, &n), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "head_dim 4; the plan's cache"), "%s", lkv_last_error());
    e.kv.head_dim = 8;
    /* a block the rows may write shared with another sequence (the kept
     * lists are not read: every slot below a row's n_kept counts) */
    e.table[1] = e.table[MAXB];
    cr_expect_eq(apply_device(c, &e, NULL, &n), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "names 2 times"), "%s", lkv_last_error());
    e.table[1] = -1;
    cr_expect_eq(apply_device(c, &e, NULL, &n), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "slot 8"), "%s", lkv_last_error());
    cr_expect_eq(n, -7, "a refused call wrote out_n_freed");
    /* the read-back plan is stale after the next step: lkv_plan_apply_device
     * refuses it */
    step(c, seqs, &rng);
    lkv_device_array k[LAYERS], v[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++) {
        k[l] = (lkv_device_array){(uint64_t)(uintptr_t)e.k[l], 0};
        v[l] = (lkv_device_array){(uint64_t)(uintptr_t)e.v[l], 0};
    }
    e.table[1] = before.table[1];
    cr_expect_eq(lkv_plan_apply_device(rt, &plan, &e.kv, k, v, NULL, 0, &n),
                 LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "stale"), "%s", lkv_last_error());
    cr_expect_eq(n, -7, "a refused call wrote out_n_freed");
    for (int32_t l = 0; l < LAYERS; l++)
        cr_expect(memcmp(before.k[l], e.k[l], e.layer_bytes) == 0, "a refused call moved K");
    free_kv(&before);
    free_kv(&e);
    lkv_cache_destroy(c);
    lkv_runtime_close(rt);
}
