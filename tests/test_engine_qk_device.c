/* lkv_cache_observe_batch_qk with q, lse and K in device memory against the
 * same call on host arrays: two engine-owned caches, one fed each way, must
 * keep the same slots at every step (the plans) and hold the same positions
 * at the end, for grouped caches (max and mean), dense and paged K in f32,
 * f16 and bf16. On ref and cpu the device is host memory, so the device
 * arrays are host addresses and the recomputation's arithmetic is the host
 * path's bit for bit; the GPU kernels are checked against the host path
 * on lavapipe and PoCL (tests/opencl/engine_checks.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "engine_util.h"
#include "test_util.h"

#define SEQS 2
#define LAYERS 2
#define QH 4
#define KVH 2
#define DIM 8
#define CAP 56
#define BS 8
#define MAXB (CAP / BS)
#define BLOCKS (SEQS * MAXB + 3)
#define STEPS 50

/* The engine's K: one buffer per layer, dense [seq][slot][head][dim] or
 * vLLM-paged over a shuffled table, every slot written with random values
 * up front (a step's new token reads what is already there). */
typedef struct engine_k {
    lkv_kv_layout kv;
    size_t bytes;
    unsigned char *k[LAYERS];
    int32_t table[SEQS * MAXB];
} engine_k;

static void make_k(engine_k *e, lkv_dtype dt, int paged, uint64_t *rng)
{
    memset(e, 0, sizeof *e);
    size_t head = DIM * lkv_dtype_size(dt);
    e->kv = (lkv_kv_layout){.dtype = dt, .head_dim = DIM, .layers = LAYERS, .heads = KVH,
                            .sequences = SEQS, .slot_stride = KVH * head, .head_stride = head};
    if (paged) {
        e->kv.block_size = BS;
        e->kv.max_blocks = MAXB;
        e->kv.n_blocks = BLOCKS;
        e->kv.block_stride = BS * KVH * head;
        for (int32_t i = 0; i < SEQS * MAXB; i++)
            e->table[i] = (i * 5 + 2) % BLOCKS; /* 5 is prime to 17: distinct */
        e->kv.block_table = e->table;
        e->bytes = BLOCKS * e->kv.block_stride;
    } else {
        e->kv.seq_stride = CAP * e->kv.slot_stride;
        e->bytes = SEQS * e->kv.seq_stride;
    }
    for (int32_t l = 0; l < LAYERS; l++) {
        e->k[l] = malloc(e->bytes);
        for (size_t i = 0; i < e->bytes / lkv_dtype_size(dt); i++)
            lkv_dtype_store(dt, e->k[l], i, (float)tu_normal(rng));
    }
    e->kv.k_layers = (void *const *)e->k;
}

/* Queries, and their lse over slots 0 .. n of each sequence's layer in
 * double (rounded to f32, as an engine's kernel hands it). */
static void draw(const engine_k *e, const lkv_cache *c, const int32_t *seqs, int32_t layer,
                 float scale, uint64_t *rng, float *q, float *lse)
{
    for (int32_t i = 0; i < SEQS; i++) {
        int32_t n = 0;
        free(tu_positions(c, seqs[i], layer, 0, &n));
        n++;
        for (int32_t qh = 0; qh < QH; qh++) {
            float *x = q + ((size_t)i * QH + (size_t)qh) * DIM;
            for (int32_t d = 0; d < DIM; d++)
                x[d] = (float)(1.5 * tu_normal(rng));
            lse[(size_t)i * QH + (size_t)qh] =
                tu_engine_lse(&e->kv, e->k[layer], seqs[i], qh / (QH / KVH), n, x, scale);
        }
    }
}

/* The device form of a call's host q and lse (ref and cpu: host addresses). */
static void on_device(lkv_memory *memory, lkv_device_array *q_dev, lkv_device_array *lse_dev,
                      const lkv_device_array **k_dev, const float *q, const float *lse,
                      const lkv_device_array *k)
{
    *memory = LKV_MEMORY_DEVICE;
    *q_dev = (lkv_device_array){(uint64_t)(uintptr_t)q, 0};
    *lse_dev = (lkv_device_array){(uint64_t)(uintptr_t)lse, 0};
    *k_dev = k;
}

static lkv_cache *qk_cache(lkv_runtime *rt, lkv_policy_kind kind, lkv_group_reduce reduce)
{
    lkv_cache_config cfg = tu_config(LAYERS, QH, KVH, DIM, CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.sequences = SEQS;
    cfg.dtype = LKV_DTYPE_F16;
    TU_OK(lkv_policy_init(&cfg.policy, kind));
    cfg.policy.budget = 24;
    cfg.policy.window = 6;
    cfg.policy.alpha = 0.05f;
    cfg.policy.group_reduce = reduce;
    if (kind == LKV_POLICY_NACL) { /* prompts of 31 and 40 evict, 8 and 10 proxies */
        cfg.policy.min_length = 16;
        cfg.policy.proxy_ratio = 0.25f;
    }
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    return c;
}

static void expect_same_plan(const lkv_cache *a, const lkv_cache *b, const char *what)
{
    lkv_eviction_plan x, y;
    TU_OK(lkv_cache_get_plan(a, &x));
    TU_OK(lkv_cache_get_plan(b, &y));
    cr_assert_eq(y.n_rows, x.n_rows, "%s: %d plan rows, the host call's %d", what, y.n_rows,
                 x.n_rows);
    for (int32_t r = 0; r < x.n_rows; r++)
        cr_assert(x.rows[r].n_kept == y.rows[r].n_kept &&
                      memcmp(x.rows[r].kept, y.rows[r].kept,
                             sizeof(int32_t) * (size_t)x.rows[r].n_kept) == 0,
                  "%s: plan row %d differs from the host call's", what, r);
}

static int64_t run(const char *backend, lkv_policy_kind kind, lkv_group_reduce reduce,
                   lkv_dtype dt, int paged)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open(backend, &rt));
    lkv_cache *host = qk_cache(rt, kind, reduce), *dev = qk_cache(rt, kind, reduce);
    static const int32_t seqs[SEQS] = {1, 0};
    int32_t n_tok[SEQS] = {11, 7};
    lkv_observe_prompt_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < LAYERS; l++) {
        TU_OK(lkv_cache_observe_prompt(host, l, &p));
        TU_OK(lkv_cache_observe_prompt(dev, l, &p));
    }
    uint64_t rng = 3 + (uint64_t)kind * 7 + (uint64_t)dt;
    engine_k e;
    make_k(&e, dt, paged, &rng);
    lkv_device_array k_dev[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++)
        k_dev[l] = (lkv_device_array){(uint64_t)(uintptr_t)e.k[l], 0};
    float q[SEQS * QH * DIM], lse[SEQS * QH], scale = 0.35f;
    char what[96];
    for (int s = 0; s < STEPS; s++)
        for (int32_t l = 0; l < LAYERS; l++) {
            draw(&e, host, seqs, l, scale, &rng, q, lse);
            lkv_observe_qk_io h = {.n_sequences = SEQS, .sequences = seqs, .q = q, .lse = lse,
                                   .scale = scale, .k = &e.kv};
            lkv_observe_qk_io d = h;
            d.q = NULL, d.lse = NULL;
            on_device(&d.memory, &d.q_dev, &d.lse_dev, &d.k_dev, q, lse, k_dev);
            TU_OK(lkv_cache_observe_batch_qk(host, l, &h));
            TU_OK(lkv_cache_observe_batch_qk(dev, l, &d));
            snprintf(what, sizeof what, "%s %s reduce %d %s %s step %d", backend,
                     lkv_policy_name(kind), (int)reduce, lkv_dtype_name(dt),
                     paged ? "paged" : "dense", s);
            if (l == LAYERS - 1)
                expect_same_plan(host, dev, what);
        }
    tu_expect_same_positions(host, dev, what);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(dev, &st));
    for (int32_t l = 0; l < LAYERS; l++)
        free(e.k[l]);
    lkv_cache_destroy(host);
    lkv_cache_destroy(dev);
    lkv_runtime_close(rt);
    return st.evictions;
}

Test(engine_qk_device, device_q_k_and_lse_make_the_host_arrays_decisions)
{
    const char *backends[] = {"ref", "cpu"};
    const lkv_dtype dts[] = {LKV_DTYPE_F32, LKV_DTYPE_F16, LKV_DTYPE_BF16};
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 3; t++) {
            cr_expect_gt(run(backends[b], LKV_POLICY_LAZY, LKV_REDUCE_MAX, dts[t], t != 1), 0);
            cr_expect_gt(run(backends[b], LKV_POLICY_H2O, LKV_REDUCE_MEAN, dts[t], t == 1), 0);
        }
}

Test(engine_qk_device, missing_arrays_are_refused_changing_nothing)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    lkv_cache *c = qk_cache(rt, LKV_POLICY_H2O, LKV_REDUCE_MAX);
    static const int32_t seqs[SEQS] = {0, 1};
    int32_t n_tok[SEQS] = {5, 5};
    lkv_observe_prompt_io p = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < LAYERS; l++)
        TU_OK(lkv_cache_observe_prompt(c, l, &p));
    uint64_t rng = 1;
    engine_k e;
    make_k(&e, LKV_DTYPE_F16, 1, &rng);
    lkv_device_array k_dev[LAYERS] = {{(uint64_t)(uintptr_t)e.k[0], 0},
                                      {(uint64_t)(uintptr_t)e.k[1], 0}};
    float q[SEQS * QH * DIM] = {0}, lse[SEQS * QH] = {0};
    lkv_observe_qk_io d = {.n_sequences = SEQS, .sequences = seqs, .scale = 0.5f, .k = &e.kv,
                           .memory = LKV_MEMORY_DEVICE,
                           .q_dev = {(uint64_t)(uintptr_t)q, 0}, .k_dev = k_dev};
    int32_t len0 = 0, t0 = 0, len = 0, t = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &len0, &t0));
    cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &d), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "lse_dev is missing"), "%s", lkv_last_error());
    d.lse_dev = (lkv_device_array){(uint64_t)(uintptr_t)lse, 0};
    e.kv.head_dim = 3; /* 6 bytes a head */
    cr_expect_eq(lkv_cache_observe_batch_qk(c, 0, &d), LKV_INVALID_ARGUMENT);
    e.kv.head_dim = DIM;
    TU_OK(lkv_cache_sequence_info(c, 0, &len, &t));
    cr_expect(len == len0 && t == t0, "a refused call moved the sequence: %d %d, was %d %d", len,
              t, len0, t0);
    TU_OK(lkv_cache_observe_batch_qk(c, 0, &d));
    for (int32_t l = 0; l < LAYERS; l++)
        free(e.k[l]);
    lkv_cache_destroy(c);
    lkv_runtime_close(rt);
}

/* A prompt's votes recomputed from device q, lse and K: the host call's
 * plan and positions, for every policy whose queries vote (h2o and tova
 * causal, snapkv its window, nacl its proxies over the whole prompt). */
static void prompt_like_host(const char *backend, lkv_policy_kind kind, lkv_dtype dt, int paged)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open(backend, &rt));
    lkv_cache *host = qk_cache(rt, kind, LKV_REDUCE_MEAN), *dev = qk_cache(rt, kind, LKV_REDUCE_MEAN);
    static const int32_t seqs[SEQS] = {1, 0};
    int32_t n_tok[SEQS] = {40, 31};
    uint64_t rng = 77 + (uint64_t)kind;
    engine_k e;
    make_k(&e, dt, paged, &rng);
    lkv_device_array k_dev[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++)
        k_dev[l] = (lkv_device_array){(uint64_t)(uintptr_t)e.k[l], 0};
    enum { TOKENS = 71 };
    float q[TOKENS * QH * DIM], lse[TOKENS * QH], scale = 0.3f;
    char what[96];
    snprintf(what, sizeof what, "%s %s prompt %s %s", backend, lkv_policy_name(kind),
             lkv_dtype_name(dt), paged ? "paged" : "dense");
    for (int32_t l = 0; l < LAYERS; l++) {
        for (int32_t i = 0, at = 0; i < SEQS; at += n_tok[i], i++) {
            int32_t first = 0, causal = 0;
            TU_OK(lkv_cache_prompt_voters(host, n_tok[i], &first, &causal, NULL));
            for (int32_t a = 0; a < n_tok[i]; a++)
                for (int32_t qh = 0; qh < QH; qh++) {
                    float *x = q + ((size_t)(at + a) * QH + (size_t)qh) * DIM;
                    for (int32_t d = 0; d < DIM; d++)
                        x[d] = (float)(1.5 * tu_normal(&rng));
                    lse[(at + a) * QH + qh] = tu_engine_lse(&e.kv, e.k[l], seqs[i], qh / (QH / KVH),
                                                            causal ? a + 1 : n_tok[i], x, scale);
                }
        }
        lkv_observe_prompt_qk_io h = {.n_sequences = SEQS, .sequences = seqs, .n_tokens = n_tok,
                                      .q = q, .lse = lse, .scale = scale, .k = &e.kv};
        lkv_observe_prompt_qk_io d = h;
        d.q = NULL, d.lse = NULL;
        on_device(&d.memory, &d.q_dev, &d.lse_dev, &d.k_dev, q, lse, k_dev);
        TU_OK(lkv_cache_observe_prompt_qk(host, l, &h));
        TU_OK(lkv_cache_observe_prompt_qk(dev, l, &d));
    }
    expect_same_plan(host, dev, what);
    tu_expect_same_positions(host, dev, what);
    /* the votes themselves: every row's accumulated state, bit for bit */
    int voted = 0;
    for (int32_t i = 0; i < SEQS; i++)
        for (int32_t l = 0; l < LAYERS; l++)
            for (int32_t h = 0; h < KVH; h++) {
                float fa[CAP], fb[CAP];
                int32_t na = 0, nb = 0;
                lkv_slot_view va = {.cap = CAP, .state_f = fa}, vb = {.cap = CAP, .state_f = fb};
                TU_OK(lkv_cache_read_slots(host, seqs[i], l, h, &va, &na));
                TU_OK(lkv_cache_read_slots(dev, seqs[i], l, h, &vb, &nb));
                cr_assert(na == nb && memcmp(fa, fb, sizeof(float) * (size_t)na) == 0,
                          "%s: sequence %d layer %d head %d state differs", what, seqs[i], l, h);
                for (int32_t j = 0; j < na; j++)
                    voted |= fa[j] != 0.0f;
            }
    lkv_eviction_plan plan; /* nacl evicts by its votes at the prompt's end */
    TU_OK(lkv_cache_get_plan(dev, &plan));
    cr_assert(voted || plan.n_rows > 0, "%s: the votes must leave state or evict", what);
    for (int32_t l = 0; l < LAYERS; l++)
        free(e.k[l]);
    lkv_cache_destroy(host);
    lkv_cache_destroy(dev);
    lkv_runtime_close(rt);
}

Test(engine_qk_device, prompt_votes_from_device_arrays_decide_as_the_host_arrays)
{
    const char *backends[] = {"ref", "cpu"};
    const lkv_policy_kind kinds[] = {LKV_POLICY_H2O, LKV_POLICY_TOVA, LKV_POLICY_SNAPKV,
                                     LKV_POLICY_NACL};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++)
            prompt_like_host(backends[b], kinds[k], k % 2 ? LKV_DTYPE_BF16 : LKV_DTYPE_F16, k < 2);
}
