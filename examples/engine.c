/* An engine-shaped lazykv client, written against include/lazykv.h only.
 *
 * What an inference engine does with the runtime: many sequences in one
 * cache, prompts prefilled in chunks by batched calls, parallel sampling by
 * forking a prompt, every decode step one call per layer for whichever
 * sequences run this step, speculative drafts rolled back by truncation, and
 * (with --device) inputs handed over as device arrays. A shadow cache on the
 * same backend does the same work through the per-sequence calls, one-shot
 * prefills and all, and the program checks that both kept exactly the same
 * tokens in every sequence, layer and head. It prints the device counters
 * per decode step; with --device a decode step must not wait for the device.
 *
 *   lazykv-engine-example [--backend SPEC] [--device] [--steps N]
 *
 * --device passes the inputs as lkv_device_array whose handle is a host
 * address, which is what device memory is on the cpu backend (and on the
 * test suite's GPU emulator); a real GPU engine passes its own CUdeviceptr,
 * cl_mem or VkBuffer there instead (README: "Embedding lazykv in an engine").
 * Exit 0: identical decisions; 1: they differ or a check failed; 2: usage;
 * 77: the backend is unavailable here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lazykv.h"

enum { SEQS = 16, PROMPTS = 8, LAYERS = 4, QH = 8, KVH = 2, D = 32, CHUNK = 32 };
#define QW (QH * D)
#define KW (KVH * D)

typedef struct engine {
    lkv_runtime *rt;
    lkv_cache *batched, *shadow;
    int device;
    lkv_counters spent; /* by the batched cache's decode calls */
    int64_t steps;
    float *q, *k, *v, *out; /* [SEQS or prompt tokens][...] input staging of the engine */
} engine;

static int check(lkv_status st, const char *what)
{
    if (st != LKV_OK)
        fprintf(stderr, "engine: %s: %s: %s\n", what, lkv_status_name(st), lkv_last_error());
    return st == LKV_OK;
}

/* The "model": a token's q/k/v per layer, a pure function of where it is. */
static void token(int32_t seq, int32_t pos, int32_t layer, float *q, float *k, float *v)
{
    uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(seq + 1) + 977u * (uint64_t)pos + (uint64_t)layer;
    for (int i = 0; i < QW + 2 * KW; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float x = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        if (i < QW)
            q[i] = x;
        else if (i < QW + KW)
            k[i - QW] = x;
        else
            v[i - QW - KW] = x;
    }
}

static lkv_device_array array_of(const float *p)
{
    lkv_device_array a = {(uint64_t)(uintptr_t)p, 0};
    return a;
}

static int32_t step_of(lkv_cache *c, int32_t seq)
{
    int32_t t = 0;
    lkv_cache_sequence_info(c, seq, NULL, &t);
    return t;
}

static void add_spent(lkv_counters *sum, const lkv_counters *a, const lkv_counters *b)
{
    sum->launches += b->launches - a->launches;
    sum->syncs += b->syncs - a->syncs;
    sum->h2d_bytes += b->h2d_bytes - a->h2d_bytes;
    sum->d2h_bytes += b->d2h_bytes - a->d2h_bytes;
}

/* Prompt i has 40 + 9 i tokens; the batched cache takes them in chunks of
 * CHUNK, every unfinished prompt in one call per layer; the shadow in one. */
static int prefill(engine *e)
{
    int32_t len[PROMPTS], done[PROMPTS] = {0};
    for (int32_t i = 0; i < PROMPTS; i++)
        len[i] = 40 + 9 * i;
    for (int32_t at = 0;; at += CHUNK) {
        int32_t seqs[PROMPTS], n_tok[PROMPTS], more[PROMPTS], m = 0;
        for (int32_t i = 0; i < PROMPTS; i++)
            if (!done[i]) {
                seqs[m] = i;
                n_tok[m] = len[i] - at < CHUNK ? len[i] - at : CHUNK;
                more[m] = at + n_tok[m] < len[i];
                done[i] = !more[m];
                m++;
            }
        if (!m)
            return 1;
        for (int32_t l = 0; l < LAYERS; l++) {
            for (int32_t i = 0, row = 0; i < m; row += n_tok[i++])
                for (int32_t j = 0; j < n_tok[i]; j++)
                    token(seqs[i], at + j, l, e->q + (row + j) * QW, e->k + (row + j) * KW,
                          e->v + (row + j) * KW);
            lkv_prefill_batch_io io = {.n_sequences = m, .sequences = seqs, .n_tokens = n_tok,
                                       .more_chunks = more};
            if (e->device)
                io.memory = LKV_MEMORY_DEVICE, io.k_dev = array_of(e->k), io.v_dev = array_of(e->v);
            else
                io.k = e->k, io.v = e->v;
            if (!check(lkv_cache_prefill_batch(e->batched, l, &io), "prefill batch"))
                return 0;
        }
    }
}

static int prefill_shadow(engine *e)
{
    for (int32_t s = 0; s < PROMPTS; s++) {
        int32_t n = 40 + 9 * s;
        for (int32_t l = 0; l < LAYERS; l++) {
            for (int32_t j = 0; j < n; j++)
                token(s, j, l, e->q + j * QW, e->k + j * KW, e->v + j * KW);
            lkv_prefill_io io = {.n_tokens = n, .k = e->k, .v = e->v};
            if (!check(lkv_cache_prefill(e->shadow, s, l, &io), "shadow prefill"))
                return 0;
        }
    }
    return 1;
}

/* Parallel sampling: sequence s + PROMPTS samples prompt s a second time. */
static int fork_all(engine *e)
{
    for (int32_t s = 0; s < PROMPTS; s++)
        if (!check(lkv_cache_fork_sequence(e->batched, s, s + PROMPTS), "fork") ||
            !check(lkv_cache_fork_sequence(e->shadow, s, s + PROMPTS), "shadow fork"))
            return 0;
    return 1;
}

/* One decode step of the listed sequences: one call per layer for all of
 * them; the shadow makes one call per sequence and layer. Forks diverge:
 * a token's inputs depend on its sequence. */
static int decode(engine *e, const int32_t *seqs, int32_t n)
{
    int32_t step[SEQS];
    for (int32_t i = 0; i < n; i++)
        step[i] = step_of(e->batched, seqs[i]);
    for (int32_t l = 0; l < LAYERS; l++) {
        for (int32_t i = 0; i < n; i++)
            token(seqs[i], 100000 + step[i], l, e->q + i * QW, e->k + i * KW, e->v + i * KW);
        lkv_decode_batch_io io = {.n_sequences = n, .sequences = seqs};
        if (e->device) {
            io.memory = LKV_MEMORY_DEVICE;
            io.q_dev = array_of(e->q), io.k_dev = array_of(e->k), io.v_dev = array_of(e->v);
            io.out_dev = array_of(e->out);
        } else {
            io.q = e->q, io.k = e->k, io.v = e->v, io.out = e->out;
        }
        lkv_counters c0, c1;
        lkv_runtime_get_counters(e->rt, &c0);
        lkv_status st = lkv_cache_decode_batch(e->batched, l, &io);
        lkv_runtime_get_counters(e->rt, &c1);
        add_spent(&e->spent, &c0, &c1);
        if (!check(st, "decode batch"))
            return 0;
        for (int32_t i = 0; i < n; i++) {
            lkv_decode_io one = {e->q + i * QW, e->k + i * KW, e->v + i * KW,
                                 e->out + (SEQS + i) * QW, LKV_MEMORY_HOST};
            if (!check(lkv_cache_decode(e->shadow, seqs[i], l, &one), "shadow decode"))
                return 0;
        }
    }
    return 1;
}

/* A speculative draft of 3 tokens of which 1 is accepted: truncate 2. When
 * an eviction ran during the draft both caches refuse alike (checked). */
static int rollback(engine *e, const int32_t *seqs, int32_t n)
{
    for (int d = 0; d < 3; d++)
        if (!decode(e, seqs, n))
            return 0;
    for (int32_t i = 0; i < n; i++) {
        lkv_status a = lkv_cache_truncate_sequence(e->batched, seqs[i], 2);
        lkv_status b = lkv_cache_truncate_sequence(e->shadow, seqs[i], 2);
        if (a != b) {
            fprintf(stderr, "engine: truncate of sequence %d: %s vs %s\n", seqs[i],
                    lkv_status_name(a), lkv_status_name(b));
            return 0;
        }
    }
    return 1;
}

static int same_decisions(engine *e)
{
    int32_t heads = lkv_cache_heads(e->batched), cap = 512;
    int32_t *pa = malloc(sizeof *pa * (size_t)cap), *pb = malloc(sizeof *pb * (size_t)cap);
    int same = pa && pb;
    for (int32_t s = 0; s < SEQS && same; s++)
        for (int32_t l = 0; l < LAYERS && same; l++)
            for (int32_t h = 0; h < heads && same; h++) {
                int32_t na = 0, nb = 0;
                lkv_slot_view va = {cap, pa, NULL, NULL, NULL}, vb = {cap, pb, NULL, NULL, NULL};
                same = check(lkv_cache_read_slots(e->batched, s, l, h, &va, &na), "read") &&
                       check(lkv_cache_read_slots(e->shadow, s, l, h, &vb, &nb), "read") &&
                       na == nb && memcmp(pa, pb, sizeof *pa * (size_t)na) == 0;
                if (!same)
                    fprintf(stderr, "engine: sequence %d layer %d head %d: kept tokens differ\n",
                            s, l, h);
            }
    free(pa);
    free(pb);
    return same;
}

static int run(engine *e, int32_t steps)
{
    if (!prefill(e) || !prefill_shadow(e) || !fork_all(e))
        return 0;
    for (int32_t t = 1; t <= steps; t++) {
        int32_t seqs[SEQS], n = 0;
        for (int32_t s = SEQS - 1; s >= 0; s--) /* any order; some sit a step out */
            if ((t + s) % 7 != 0)
                seqs[n++] = s;
        if (!(t % 16 == 0 ? rollback(e, seqs, n) : decode(e, seqs, n)))
            return 0;
        e->steps += t % 16 == 0 ? 3 : 1;
    }
    lkv_cache_stats st;
    lkv_cache_get_stats(e->batched, &st);
    printf("engine: %d sequences x %d layers, %d rounds: %lld evictions, peak %lld slots\n",
           SEQS, LAYERS, steps, (long long)st.evictions, (long long)st.peak_slots);
    double n = (double)e->steps;
    printf("engine: per decode step of the batch (all layers): %.2f launches, %.2f host waits, "
           "%.0f B to and %.0f B from the device\n",
           (double)e->spent.launches / n, (double)e->spent.syncs / n,
           (double)e->spent.h2d_bytes / n, (double)e->spent.d2h_bytes / n);
    if (e->device && e->spent.syncs != 0) {
        fprintf(stderr, "engine: device inputs, yet decode waited for the device %lld times\n",
                (long long)e->spent.syncs);
        return 0;
    }
    return same_decisions(e);
}

/* Whether the backend's device memory is host memory. */
static int host_memory(const char *backend)
{
    return !strcmp(backend, "cpu") || !strcmp(backend, "ref") || !strcmp(backend, "gpu-emu");
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    int32_t steps = 64;
    engine e = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            spec = argv[++i];
        else if (!strcmp(argv[i], "--device"))
            e.device = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--backend SPEC] [--device] [--steps N]\n", argv[0]);
            return 2;
        }
    }
    lkv_runtime *rt = NULL;
    lkv_status st = lkv_runtime_open(spec, &rt);
    e.rt = rt;
    if (st != LKV_OK) {
        fprintf(stderr, "engine: %s\n", lkv_last_error());
        return st == LKV_UNAVAILABLE ? 77 : 1;
    }
    lkv_runtime_info info = {0};
    if (e.device && (lkv_runtime_get_info(rt, &info) != LKV_OK || !host_memory(info.backend))) {
        /* a host address is no cl_mem, VkBuffer or CUdeviceptr */
        fprintf(stderr, "engine: --device hands host addresses as device arrays, which only the "
                        "cpu, ref and gpu-emu backends take; not %s\n", info.backend);
        lkv_runtime_close(rt);
        return 2;
    }
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = LAYERS, cfg.q_heads = QH, cfg.kv_heads = KVH, cfg.head_dim = D;
    cfg.sequences = SEQS, cfg.capacity = 256, cfg.dtype = LKV_DTYPE_F16;
    lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    cfg.policy.budget = 64, cfg.policy.window = 16;
    /* a chunk round packs up to PROMPTS x CHUNK tokens; a shadow prompt 40 + 9 i */
    size_t rows = (size_t)PROMPTS * CHUNK + 40 + 9 * PROMPTS + SEQS;
    e.q = malloc(sizeof(float) * rows * QW), e.k = malloc(sizeof(float) * rows * KW);
    e.v = malloc(sizeof(float) * rows * KW), e.out = malloc(sizeof(float) * 2 * SEQS * QW);
    int ok = e.q && e.k && e.v && e.out &&
             check(lkv_cache_create(rt, &cfg, &e.batched), "create") &&
             check(lkv_cache_create(rt, &cfg, &e.shadow), "create") && run(&e, steps);
    printf("engine: decisions identical to per-sequence calls: %s\n", ok ? "yes" : "NO");
    lkv_cache_destroy(e.batched);
    lkv_cache_destroy(e.shadow);
    lkv_runtime_close(rt);
    free(e.q), free(e.k), free(e.v), free(e.out);
    return ok ? 0 : 1;
}
