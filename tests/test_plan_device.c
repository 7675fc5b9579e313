/* lkv_plan_apply_device against lkv_plan_apply: random plans over dense and
 * paged layouts (vLLM's [block][slot][head][dim], FlashInfer's HND, dense
 * [seq][slot][head][dim]) in f32, f16 and bf16 must leave the same bytes
 * in every buffer and free the same blocks. The host-memory backends' device
 * memory is host memory, so the device arrays here are host addresses; the
 * GPU kernels are checked the same way on lavapipe and PoCL
 * (tests/opencl/engine_checks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_util.h"
#include "test_util.h"

#define SEQS 3
#define LAYERS 2
#define HEADS 3
#define CAP 40
#define BLOCKS 64

typedef enum shape { DENSE_NHD, PAGED_NHD, PAGED_HND } shape;

/* Buffers of one layout, the block table shuffled over the pool. */
typedef struct engine_kv {
    lkv_kv_layout kv;
    size_t layer_bytes;
    unsigned char *k[LAYERS], *v[LAYERS];
    int32_t table[SEQS * (CAP / 8 + 1)];
} engine_kv;

static void make_kv(engine_kv *e, shape s, lkv_dtype dt, int32_t dim, uint64_t *rng)
{
    memset(e, 0, sizeof *e);
    size_t head = (size_t)dim * lkv_dtype_size(dt);
    lkv_kv_layout *kv = &e->kv;
    *kv = (lkv_kv_layout){.dtype = dt, .head_dim = dim, .layers = LAYERS, .heads = HEADS,
                          .sequences = SEQS};
    if (s == DENSE_NHD) {
        kv->slot_stride = HEADS * head;
        kv->head_stride = head;
        kv->seq_stride = CAP * kv->slot_stride;
        e->layer_bytes = SEQS * kv->seq_stride;
    } else {
        kv->block_size = 8;
        kv->max_blocks = CAP / 8 + 1;
        kv->n_blocks = BLOCKS;
        kv->slot_stride = s == PAGED_NHD ? HEADS * head : head;
        kv->head_stride = s == PAGED_NHD ? head : 8 * head;
        kv->block_stride = 8 * HEADS * head;
        e->layer_bytes = BLOCKS * kv->block_stride;
        int32_t pool[BLOCKS];
        for (int32_t b = 0; b < BLOCKS; b++)
            pool[b] = b;
        for (int32_t b = BLOCKS - 1; b > 0; b--) {
            int32_t o = (int32_t)(tu_uniform(rng) * (b + 1)), t = pool[b];
            pool[b] = pool[o], pool[o] = t;
        }
        for (int32_t i = 0; i < SEQS * kv->max_blocks; i++)
            e->table[i] = pool[i];
        kv->block_table = e->table;
    }
    for (int32_t l = 0; l < LAYERS; l++) {
        e->k[l] = malloc(e->layer_bytes);
        e->v[l] = malloc(e->layer_bytes);
        for (size_t i = 0; i < e->layer_bytes; i++) {
            e->k[l][i] = (unsigned char)(tu_uniform(rng) * 256);
            e->v[l][i] = (unsigned char)(tu_uniform(rng) * 256);
        }
    }
}

static void copy_kv(engine_kv *dst, const engine_kv *src)
{
    *dst = *src;
    dst->kv.block_table = dst->table;
    for (int32_t l = 0; l < LAYERS; l++) {
        dst->k[l] = malloc(src->layer_bytes);
        dst->v[l] = malloc(src->layer_bytes);
        memcpy(dst->k[l], src->k[l], src->layer_bytes);
        memcpy(dst->v[l], src->v[l], src->layer_bytes);
    }
}

static void free_kv(engine_kv *e)
{
    for (int32_t l = 0; l < LAYERS; l++)
        free(e->k[l]), free(e->v[l]);
}

static void apply_on_device(lkv_runtime *rt, const lkv_eviction_plan *plan, engine_kv *e,
                            int32_t *freed, int32_t *n_freed, lkv_status want)
{
    lkv_device_array k[LAYERS], v[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++) {
        k[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->k[l], 0};
        v[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->v[l], 0};
    }
    cr_assert_eq(lkv_plan_apply_device(rt, plan, &e->kv, k, v, freed, BLOCKS, n_freed), want,
                 "%s", lkv_last_error());
}

static void expect_same_bytes(const engine_kv *a, const engine_kv *b, const char *what)
{
    for (int32_t l = 0; l < LAYERS; l++) {
        cr_assert(memcmp(a->k[l], b->k[l], a->layer_bytes) == 0, "%s: layer %d K differs", what, l);
        cr_assert(memcmp(a->v[l], b->v[l], a->layer_bytes) == 0, "%s: layer %d V differs", what, l);
    }
}

static void check_like_host(const char *backend, shape s, lkv_dtype dt, int32_t dim, uint64_t seed)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open(backend, &rt));
    uint64_t rng = seed;
    engine_kv host, dev;
    make_kv(&host, s, dt, dim, &rng);
    copy_kv(&dev, &host);
    tu_plan p;
    tu_plan_random(&p, SEQS, LAYERS, HEADS, CAP, &rng);
    host.kv.k_layers = (void *const *)host.k;
    host.kv.v_layers = (void *const *)host.v;
    int32_t freed_h[BLOCKS], freed_d[BLOCKS], n_h = -1, n_d = -1;
    TU_OK(lkv_plan_apply(&p.plan, &host.kv, freed_h, BLOCKS, &n_h));
    apply_on_device(rt, &p.plan, &dev, freed_d, &n_d, LKV_OK);
    char what[64];
    snprintf(what, sizeof what, "%s shape %d %s d%d", backend, (int)s, lkv_dtype_name(dt), dim);
    expect_same_bytes(&host, &dev, what);
    cr_assert_eq(n_d, n_h, "%s: %d blocks freed, the host %d", what, n_d, n_h);
    cr_assert(memcmp(freed_d, freed_h, sizeof(int32_t) * (size_t)n_h) == 0, "%s: freed", what);
    if (s != DENSE_NHD)
        cr_assert_gt(n_h, 0, "%s: sequence 0's plan must free blocks", what);
    tu_plan_free(&p);
    free_kv(&host);
    free_kv(&dev);
    lkv_runtime_close(rt);
}

Test(plan_device, moves_the_bytes_the_host_apply_moves_in_every_layout_and_dtype)
{
    const char *backends[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            check_like_host(backends[b], DENSE_NHD, LKV_DTYPE_F16, 8, seed);
            check_like_host(backends[b], PAGED_NHD, LKV_DTYPE_BF16, 6, seed);
            check_like_host(backends[b], PAGED_HND, LKV_DTYPE_F32, 5, seed);
        }
}

/* A refused call moves nothing and names what it refused. */
static void expect_refused(lkv_runtime *rt, const lkv_eviction_plan *plan, engine_kv *e,
                           const char *needle)
{
    engine_kv before;
    copy_kv(&before, e);
    int32_t freed[BLOCKS], n = -7;
    apply_on_device(rt, plan, e, freed, &n, LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), needle), "want \"%s\" in: %s", needle, lkv_last_error());
    cr_expect_eq(n, -7, "a refused call wrote out_n_freed");
    expect_same_bytes(&before, e, "a refused call");
    free_kv(&before);
}

Test(plan_device, bad_layouts_and_plans_are_refused_moving_nothing)
{
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    uint64_t rng = 9;
    engine_kv e;
    make_kv(&e, DENSE_NHD, LKV_DTYPE_F16, 8, &rng);
    tu_plan p;
    tu_plan_random(&p, SEQS, LAYERS, HEADS, CAP, &rng);
    e.kv.head_dim = 3; /* 6 bytes a head */
    expect_refused(rt, &p.plan, &e, "not whole 32-bit words");
    e.kv.head_dim = 8;
    e.kv.head_stride = 18;
    expect_refused(rt, &p.plan, &e, "head_stride 18");
    e.kv.head_stride = 16;
    int32_t r = p.plan.n_rows - 1, *kept = p.kept + (size_t)r * CAP, keep = kept[1];
    cr_assert_geq(p.rows[r].n_kept, 2);
    kept[1] = kept[0]; /* not ascending */
    expect_refused(rt, &p.plan, &e, "kept[1]");
    kept[1] = keep;
    cr_expect_eq(lkv_plan_apply_device(rt, &p.plan, &e.kv, NULL, NULL, NULL, 0, NULL),
                 LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "k_layers is NULL"), "%s", lkv_last_error());
    tu_plan_free(&p);
    free_kv(&e);
    lkv_runtime_close(rt);
}
