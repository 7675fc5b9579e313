/* The engine-facing entries of the shared CUDA/HIP host code, on the
 * emulator: store against the cpu reference, the finite rule, wrap's
 * borrowed views, counters that count exactly what happened, the staging
 * ring's waits, open_external's borrowed stream, and a plan applied to
 * device K/V (the gather kernel) against lkv_plan_apply on the host. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "emu_driver.h"
#include "error.h"
#include "plan_util.h"
#include "runtime.h"
#include "test_util.h"

extern const lkv_backend_ops lkv_backend_cpu;

static const lkv_backend_ops *emu = &lkv_backend_gpu_emu;

/* ---- a cache on one device ---- */

typedef struct side {
    const lkv_backend_ops *ops;
    lkv_device *dev;
    lkv_buffer *buf[6]; /* k v pos state_a state_b state_f */
    lkv_buffer *k_in, *v_in;
    lkv_cache_buffers cache;
} side;

typedef struct shape {
    int32_t rows, cap, dim, kv_heads, cache_heads, tokens;
    lkv_dtype dtype;
} shape;

static size_t bytes_of(const shape *s, int which)
{
    size_t slots = (size_t)s->rows * (size_t)s->cap;
    return which < 2 ? slots * (size_t)s->dim * lkv_dtype_size(s->dtype) : slots * 4;
}

static void open_side(side *sd, const lkv_backend_ops *ops, const shape *s, const float *k,
                      const float *v)
{
    memset(sd, 0, sizeof *sd);
    sd->ops = ops;
    TU_OK(ops->open(0, &sd->dev));
    for (int i = 0; i < 6; i++) {
        TU_OK(ops->alloc(sd->dev, bytes_of(s, i), &sd->buf[i]));
        /* old contents the store must leave where it does not write */
        unsigned char *fill = malloc(bytes_of(s, i));
        for (size_t b = 0; b < bytes_of(s, i); b++)
            fill[b] = (unsigned char)(b * 7 + (size_t)i);
        TU_OK(ops->write(sd->dev, sd->buf[i], 0, fill, bytes_of(s, i)));
        free(fill);
    }
    size_t in_bytes = (size_t)s->tokens * (size_t)s->kv_heads * (size_t)s->dim * sizeof(float);
    TU_OK(ops->alloc(sd->dev, in_bytes, &sd->k_in));
    TU_OK(ops->alloc(sd->dev, in_bytes, &sd->v_in));
    TU_OK(ops->write(sd->dev, sd->k_in, 0, k, in_bytes));
    TU_OK(ops->write(sd->dev, sd->v_in, 0, v, in_bytes));
    sd->cache = (lkv_cache_buffers){sd->buf[0], sd->buf[1], sd->buf[2], sd->buf[3],
                                    sd->buf[4], sd->buf[5], s->cap, s->dim, s->dtype, NULL, 0};
}

static void close_side(side *sd)
{
    for (int i = 0; i < 6; i++)
        sd->ops->free(sd->dev, sd->buf[i]);
    sd->ops->free(sd->dev, sd->k_in);
    sd->ops->free(sd->dev, sd->v_in);
    sd->ops->close(sd->dev);
}

static unsigned char *read_all(side *sd, int which, const shape *s)
{
    unsigned char *out = malloc(bytes_of(s, which));
    TU_OK(sd->ops->read(sd->dev, sd->buf[which], 0, out, bytes_of(s, which)));
    return out;
}

typedef struct entries {
    int32_t n;
    int32_t row0[64], slot0[64], count[64], src[64], pos0[64], last[64];
} entries;

static lkv_store_args args_of(side *sd, const shape *s, const entries *e)
{
    return (lkv_store_args){
        .cache = &sd->cache, .n_entries = e->n, .row0 = e->row0, .slot0 = e->slot0,
        .count = e->count, .src_token = e->src, .position0 = e->pos0, .last_init = e->last,
        .cache_heads = s->cache_heads, .kv_heads = s->kv_heads, .k = sd->k_in, .v = sd->v_in};
}

static uint32_t next_u32(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*st >> 33);
}

/* The inputs: normal-ish values and, every 8th, one the rule or the
 * rounding must handle. */
static float input(uint64_t *st)
{
    static const float special[] = {NAN,        INFINITY,      -INFINITY,      65520.0f,
                                    -70000.0f,  65519.0f,      3.39e38f,       -3.4e38f,
                                    1.00048828125f, 1.00146484375f, 1.00390625f, 2.98023224e-8f,
                                    -0.0f,      8.94069672e-8f};
    uint32_t r = next_u32(st);
    if (r % 8 == 0)
        return special[(r >> 8) % (sizeof special / sizeof special[0])];
    return ((float)(r % 20001) - 10000.0f) / 1024.0f;
}

/* Entries over groups of cache_heads rows, in shuffled token order. */
static void draw(entries *e, const shape *s, int32_t n, uint64_t *st)
{
    e->n = n;
    int32_t at = 0;
    for (int32_t i = n - 1; i >= 0; i--) { /* tokens taken back to front */
        e->row0[i] = i * s->cache_heads;
        e->count[i] = 1 + (int32_t)(next_u32(st) % 3);
        e->slot0[i] = (int32_t)(next_u32(st) % (uint32_t)(s->cap - e->count[i] + 1));
        e->src[i] = at;
        e->pos0[i] = (int32_t)(next_u32(st) % 100000);
        e->last[i] = (int32_t)(next_u32(st) % 1000) - 1;
        at += e->count[i];
    }
}

static void expect_store_matches_cpu(lkv_dtype dtype, int32_t kv_heads, int32_t cache_heads)
{
    uint64_t st = (uint64_t)dtype * 31 + (uint64_t)cache_heads;
    shape s = {.cap = 8, .dim = 40, .kv_heads = kv_heads, .cache_heads = cache_heads,
               .dtype = dtype};
    entries e;
    s.rows = 64 * cache_heads;
    draw(&e, &s, 64, &st);
    for (int32_t i = 0; i < e.n; i++)
        s.tokens += e.count[i];
    size_t n_in = (size_t)s.tokens * (size_t)kv_heads * (size_t)s.dim;
    float *k = malloc(n_in * sizeof *k), *v = malloc(n_in * sizeof *v);
    for (size_t i = 0; i < n_in; i++) {
        k[i] = input(&st);
        v[i] = input(&st);
    }
    side cpu, gpu;
    open_side(&cpu, &lkv_backend_cpu, &s, k, v);
    open_side(&gpu, emu, &s, k, v);
    lkv_store_args ca = args_of(&cpu, &s, &e), ga = args_of(&gpu, &s, &e);
    TU_OK(cpu.ops->store(cpu.dev, &ca));
    TU_OK(gpu.ops->store(gpu.dev, &ga));
    static const char *const names[] = {"k", "v", "pos", "state_a", "state_b", "state_f"};
    for (int i = 0; i < 6; i++) {
        unsigned char *want = read_all(&cpu, i, &s), *got = read_all(&gpu, i, &s);
        size_t first = 0;
        while (first < bytes_of(&s, i) && want[first] == got[first])
            first++;
        cr_assert_eq(first, bytes_of(&s, i), "%s %s, %d kv heads, %d cache heads: %s differs "
                     "from the cpu at byte %zu", lkv_dtype_name(dtype),
                     cache_heads == kv_heads ? "grouped" : "expanded", kv_heads, cache_heads,
                     names[i], first);
        free(want);
        free(got);
    }
    close_side(&cpu);
    close_side(&gpu);
    free(k);
    free(v);
}

Test(gpu_emu_store, matches_the_cpu_reference_bit_for_bit_in_every_dtype_grouped_and_expanded)
{
    static const lkv_dtype dtypes[] = {LKV_DTYPE_F32, LKV_DTYPE_F16, LKV_DTYPE_BF16};
    for (size_t d = 0; d < 3; d++) {
        expect_store_matches_cpu(dtypes[d], 2, 2);
        expect_store_matches_cpu(dtypes[d], 2, 6);
        expect_store_matches_cpu(dtypes[d], 1, 3);
    }
}

/* One token, one head, one element per input value: what lands in slot 0. */
static uint32_t stored_bits(lkv_dtype dtype, float x)
{
    shape s = {.rows = 1, .cap = 1, .dim = 1, .kv_heads = 1, .cache_heads = 1, .tokens = 1,
               .dtype = dtype};
    side gpu;
    open_side(&gpu, emu, &s, &x, &x);
    entries e = {.n = 1, .count = {1}};
    lkv_store_args a = args_of(&gpu, &s, &e);
    TU_OK(emu->store(gpu.dev, &a));
    uint32_t bits = 0;
    TU_OK(emu->read(gpu.dev, gpu.buf[0], 0, &bits, lkv_dtype_size(dtype)));
    close_side(&gpu);
    return bits;
}

Test(gpu_emu_store, keeps_the_cache_finite_whatever_the_inputs)
{
    cr_expect_eq(stored_bits(LKV_DTYPE_F32, NAN), 0u, "f32 NaN is +0");
    cr_expect_eq(stored_bits(LKV_DTYPE_F32, -INFINITY), 0u, "f32 -inf is +0");
    cr_expect_eq(stored_bits(LKV_DTYPE_F16, INFINITY), 0u, "f16 inf is +0");
    cr_expect_eq(stored_bits(LKV_DTYPE_F16, 65520.0f), 0x7bffu, "f16 65520 is 65504");
    cr_expect_eq(stored_bits(LKV_DTYPE_F16, -1.0e6f), 0xfbffu, "f16 -1e6 is -65504");
    cr_expect_eq(stored_bits(LKV_DTYPE_F16, 1.00048828125f), 0x3c00u, "f16 tie to even: 1");
    cr_expect_eq(stored_bits(LKV_DTYPE_F16, 8.94069672e-8f), 0x0002u, "f16 subnormal tie: up");
    cr_expect_eq(stored_bits(LKV_DTYPE_BF16, 3.4e38f), 0x7f7fu, "bf16 3.4e38 is its largest");
    cr_expect_eq(stored_bits(LKV_DTYPE_BF16, -FLT_MAX), 0xff7fu, "bf16 -FLT_MAX");
    cr_expect_eq(stored_bits(LKV_DTYPE_BF16, NAN), 0u, "bf16 NaN is +0");
    cr_expect_eq(stored_bits(LKV_DTYPE_BF16, 1.01171875f), 0x3f82u, "bf16 tie up to even");
}

Test(gpu_emu_store, refuses_an_entry_outside_the_cache_naming_it)
{
    shape s = {.rows = 2, .cap = 4, .dim = 8, .kv_heads = 1, .cache_heads = 2, .tokens = 2,
               .dtype = LKV_DTYPE_F16};
    float in[16] = {0};
    side gpu;
    open_side(&gpu, emu, &s, in, in);
    entries e = {.n = 2, .row0 = {0, 0}, .slot0 = {0, 3}, .count = {1, 2}, .src = {0, 0}};
    lkv_store_args a = args_of(&gpu, &s, &e);
    lkv_counters before, after;
    emu->counters(gpu.dev, &before);
    cr_assert_eq(emu->store(gpu.dev, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "entry 1"), "%s", lkv_last_error());
    emu->counters(gpu.dev, &after);
    cr_assert_eq(after.launches, before.launches, "a refused store launched");
    close_side(&gpu);
}

/* ---- counters ---- */

static lkv_counters diff(const lkv_counters *a, const lkv_counters *b)
{
    return (lkv_counters){b->launches - a->launches,     b->h2d_copies - a->h2d_copies,
                          b->h2d_bytes - a->h2d_bytes,   b->d2h_copies - a->d2h_copies,
                          b->d2h_bytes - a->d2h_bytes,   b->syncs - a->syncs};
}

Test(gpu_emu_counters, one_store_of_64_entries_is_one_launch_one_upload_and_no_wait)
{
    uint64_t st = 5;
    shape s = {.cap = 8, .dim = 64, .kv_heads = 2, .cache_heads = 2, .dtype = LKV_DTYPE_F16};
    s.rows = 64 * 2;
    entries e;
    draw(&e, &s, 64, &st);
    for (int32_t i = 0; i < e.n; i++)
        s.tokens += e.count[i];
    size_t n_in = (size_t)s.tokens * 2 * 64;
    float *k = calloc(n_in, sizeof *k);
    side gpu;
    open_side(&gpu, emu, &s, k, k);
    lkv_store_args a = args_of(&gpu, &s, &e);
    lkv_counters c0, c1;
    emu->counters(gpu.dev, &c0);
    TU_OK(emu->store(gpu.dev, &a));
    emu->counters(gpu.dev, &c1);
    lkv_counters d = diff(&c0, &c1);
    cr_expect_eq(d.launches, 1);
    cr_expect_eq(d.h2d_copies, 1, "the six entry lists in one upload");
    cr_expect_eq(d.h2d_bytes, 6 * 64 * 4);
    cr_expect_eq(d.d2h_copies, 0);
    cr_expect_eq(d.syncs, 0, "a store waited for the device");
    close_side(&gpu);
    free(k);
}

Test(gpu_emu_counters, a_read_is_one_sync_a_write_one_copy_and_a_sync_one_wait)
{
    lkv_device *d = NULL;
    TU_OK(emu->open(0, &d));
    lkv_buffer *b = NULL;
    TU_OK(emu->alloc(d, 4096, &b));
    char host[4096] = {1};
    lkv_counters c0, c1;
    emu->counters(d, &c0);
    TU_OK(emu->write(d, b, 0, host, 3000));
    emu->counters(d, &c1);
    lkv_counters w = diff(&c0, &c1);
    cr_expect(w.h2d_copies == 1 && w.h2d_bytes == 3000 && w.syncs == 0 && w.launches == 0,
              "write: %lld copies, %lld bytes, %lld syncs", (long long)w.h2d_copies,
              (long long)w.h2d_bytes, (long long)w.syncs);
    TU_OK(emu->read(d, b, 8, host, 100));
    emu->counters(d, &c0);
    lkv_counters r = diff(&c1, &c0);
    cr_expect(r.d2h_copies == 1 && r.d2h_bytes == 100 && r.syncs == 1 && r.h2d_copies == 0,
              "read: %lld copies, %lld bytes, %lld syncs", (long long)r.d2h_copies,
              (long long)r.d2h_bytes, (long long)r.syncs);
    TU_OK(emu->sync(d));
    emu->counters(d, &c1);
    cr_expect_eq(diff(&c0, &c1).syncs, 1);
    emu->free(d, b);
    emu->close(d);
}

/* Events that pass only when the host waits: the ring's regions are all in
 * flight after LKV_GPU_STAGES writes, so each later one waits once, and
 * none refills a region a copy may still be reading (the driver checks). */
Test(gpu_emu_counters, the_staging_ring_waits_only_when_it_comes_round_to_a_copy_in_flight)
{
    lkv_device *d = NULL;
    TU_OK(emu->open(0, &d));
    lkv_buffer *b = NULL;
    enum { WRITES = LKV_GPU_STAGES + 5 };
    TU_OK(emu->alloc(d, WRITES * sizeof(int32_t), &b));
    lkv_emu_lag_events(d->api, 1);
    lkv_counters c0, c1;
    emu->counters(d, &c0);
    for (int32_t i = 0; i < WRITES; i++)
        TU_OK(emu->write(d, b, (size_t)i * 4, &i, 4));
    emu->counters(d, &c1);
    cr_expect_eq(diff(&c0, &c1).syncs, WRITES - LKV_GPU_STAGES);
    int32_t got[WRITES];
    TU_OK(emu->read(d, b, 0, got, sizeof got));
    for (int32_t i = 0; i < WRITES; i++)
        cr_expect_eq(got[i], i, "element %d", i);
    TU_OK(emu->sync(d)); /* the driver's check of staged sources reports here */
    lkv_emu_lag_events(d->api, 0);
    emu->free(d, b);
    emu->close(d);
}

/* ---- wrap ---- */

Test(gpu_emu_wrap, a_view_of_device_memory_reads_and_writes_it_and_frees_only_itself)
{
    lkv_device *d = NULL;
    TU_OK(emu->open(0, &d));
    lkv_buffer *own = NULL, *view = NULL, *whole = NULL;
    TU_OK(emu->alloc(d, 256, &own));
    int32_t in[64];
    for (int i = 0; i < 64; i++)
        in[i] = 100 + i;
    TU_OK(emu->write(d, own, 0, in, sizeof in));
    TU_OK(emu->wrap(d, own->ptr, 16, 128, &view));
    int32_t got[32];
    TU_OK(emu->read(d, view, 0, got, sizeof got));
    for (int i = 0; i < 32; i++)
        cr_assert_eq(got[i], 104 + i);
    cr_assert_neq(emu->read(d, view, 0, got, 132), LKV_OK, "read past the view's end");
    emu->free(d, view);
    /* at offset 0 the view's address is the allocation's: freeing the view
     * must still not free the memory (the emulator would notice a use after) */
    TU_OK(emu->wrap(d, own->ptr, 0, 256, &whole));
    emu->free(d, whole);
    TU_OK(emu->read(d, own, 0, got, sizeof got));
    cr_assert_eq(got[0], 100);
    TU_OK(emu->sync(d));
    emu->free(d, own);
    emu->close(d);
}

Test(gpu_emu_wrap, a_null_or_misaligned_address_is_an_invalid_argument)
{
    lkv_device *d = NULL;
    TU_OK(emu->open(0, &d));
    lkv_buffer *view = NULL;
    cr_assert_eq(emu->wrap(d, 0, 0, 64, &view), LKV_INVALID_ARGUMENT);
    cr_assert_eq(emu->wrap(d, 4096, 2, 64, &view), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "offset 2"), "%s", lkv_last_error());
    cr_assert_null(view);
    emu->close(d);
}

Test(gpu_emu_wrap, store_reads_its_inputs_from_wrapped_engine_arrays)
{
    shape s = {.rows = 2, .cap = 4, .dim = 8, .kv_heads = 1, .cache_heads = 2, .tokens = 2,
               .dtype = LKV_DTYPE_F32};
    float in[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)i;
    side gpu;
    open_side(&gpu, emu, &s, in, in);
    /* the engine's arrays: the second token only, through views */
    lkv_buffer *k = NULL, *v = NULL;
    TU_OK(emu->wrap(gpu.dev, gpu.k_in->ptr, 8 * sizeof(float), 8 * sizeof(float), &k));
    TU_OK(emu->wrap(gpu.dev, gpu.v_in->ptr, 8 * sizeof(float), 8 * sizeof(float), &v));
    entries e = {.n = 1, .row0 = {0}, .slot0 = {2}, .count = {1}, .src = {0}, .pos0 = {9}};
    lkv_store_args a = args_of(&gpu, &s, &e);
    a.k = k;
    a.v = v;
    TU_OK(emu->store(gpu.dev, &a));
    float got[8];
    TU_OK(emu->read(gpu.dev, gpu.buf[0], (size_t)(1 * 4 + 2) * 8 * sizeof(float), got,
                    sizeof got));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(got[i], (float)(8 + i), "row 1 slot 2 column %d", i);
    emu->free(gpu.dev, k);
    emu->free(gpu.dev, v);
    close_side(&gpu);
}

/* ---- open_external ---- */

Test(gpu_emu_external, a_device_on_the_engines_stream_records_it_and_works)
{
    int engine_stream_token = 0;
    lkv_external_device ext = {.backend = "gpu-emu", .device = 0,
                               .stream = &engine_stream_token};
    lkv_device *d = NULL;
    TU_OK(emu->open_external(&ext, &d));
    cr_assert_eq(lkv_emu_stream(d->api), (void *)&engine_stream_token);
    lkv_buffer *b = NULL;
    TU_OK(emu->alloc(d, 16, &b));
    int32_t x = 42, y = 0;
    TU_OK(emu->write(d, b, 0, &x, 4));
    TU_OK(emu->read(d, b, 0, &y, 4));
    cr_assert_eq(y, 42);
    emu->free(d, b);
    emu->close(d);
    cr_assert_eq(engine_stream_token, 0, "close touched the engine's stream");
}

Test(gpu_emu_external, another_backends_objects_are_an_invalid_argument)
{
    int token;
    lkv_device *d = NULL;
    lkv_external_device cuda = {.backend = "cuda"};
    cr_assert_eq(emu->open_external(&cuda, &d), LKV_INVALID_ARGUMENT);
    lkv_external_device ctx = {.backend = "gpu-emu", .context = &token};
    cr_assert_eq(emu->open_external(&ctx, &d), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "context"), "%s", lkv_last_error());
    lkv_external_device dev1 = {.backend = "gpu-emu", .device = 1};
    cr_assert_eq(emu->open_external(&dev1, &d), LKV_INVALID_ARGUMENT);
    cr_assert_null(d);
}

/* ---- lkv_plan_apply_device: the gather kernel through the host code ---- */

Test(gpu_emu_plan, a_device_apply_leaves_the_host_apply_s_bytes)
{
    enum { SEQS = 2, LAYERS = 2, HEADS = 2, CAP = 48, DIM = 6 }; /* f32 d6: 6 words a head */
    lkv_runtime rt = {.ops = emu};
    TU_OK(emu->open(0, &rt.dev));
    size_t head = DIM * 4, bytes = (size_t)SEQS * CAP * HEADS * head;
    lkv_kv_layout kv = {.dtype = LKV_DTYPE_F32, .head_dim = DIM, .layers = LAYERS,
                        .heads = HEADS, .sequences = SEQS, .seq_stride = CAP * HEADS * head,
                        .slot_stride = HEADS * head, .head_stride = head};
    uint64_t rng = 3;
    unsigned char *host[2 * LAYERS], *dev[2 * LAYERS];
    lkv_device_array arr[2 * LAYERS];
    for (int i = 0; i < 2 * LAYERS; i++) {
        host[i] = malloc(bytes), dev[i] = malloc(bytes);
        for (size_t b = 0; b < bytes; b++)
            host[i][b] = dev[i][b] = (unsigned char)(tu_uniform(&rng) * 256);
        arr[i] = (lkv_device_array){(uint64_t)(uintptr_t)dev[i], 0}; /* emulated memory is host */
    }
    tu_plan p;
    tu_plan_random(&p, SEQS, LAYERS, HEADS, CAP, &rng);
    TU_OK(lkv_plan_apply_device(&rt, &p.plan, &kv, arr, arr + LAYERS, NULL, 0, NULL));
    TU_OK(emu->sync(rt.dev));
    kv.k_layers = (void *const *)host;
    kv.v_layers = (void *const *)(host + LAYERS);
    TU_OK(lkv_plan_apply(&p.plan, &kv, NULL, 0, NULL));
    for (int i = 0; i < 2 * LAYERS; i++) {
        cr_assert(memcmp(host[i], dev[i], bytes) == 0, "buffer %d differs from the host apply", i);
        free(host[i]), free(dev[i]);
    }
    tu_plan_free(&p);
    emu->close(rt.dev);
}

/* ---- reduce_rows: the engine's query-head rows per cache head ---- */

/* Rows of different lengths, groups in a shuffled order of destination
 * rows, and old destination words beyond each row's length: the kernel's
 * words against the cpu oracle's, bit for bit, for max and mean (the
 * kernel's mean sums in double, as the oracle does). */
static void expect_reduce_rows_like_cpu(int32_t group, lkv_group_reduce reduce)
{
    enum { ROWS = 6, STRIDE = 70, CAP = 80 };
    const lkv_backend_ops *ops[2] = {&lkv_backend_cpu, emu};
    int32_t src_row[ROWS], dst_row[ROWS], len[ROWS];
    size_t src_n = (size_t)ROWS * (size_t)group * STRIDE, dst_n = (size_t)(ROWS + 2) * CAP;
    float *src = malloc(4 * src_n), *old = malloc(4 * dst_n), *got[2];
    uint64_t rng = 11 + (uint64_t)group;
    for (size_t i = 0; i < src_n; i++)
        src[i] = (float)tu_uniform(&rng);
    for (size_t i = 0; i < dst_n; i++)
        old[i] = -1.0f - (float)i;
    for (int32_t i = 0; i < ROWS; i++) {
        src_row[i] = i * group;
        dst_row[i] = (i * 5 + 1) % (ROWS + 2); /* 5 is prime to 8 */
        len[i] = 1 + (i * 13) % STRIDE;
    }
    for (int b = 0; b < 2; b++) {
        lkv_device *d = NULL;
        lkv_buffer *s = NULL, *o = NULL;
        TU_OK(ops[b]->open(0, &d));
        TU_OK(ops[b]->alloc(d, 4 * src_n, &s));
        TU_OK(ops[b]->alloc(d, 4 * dst_n, &o));
        TU_OK(ops[b]->write(d, s, 0, src, 4 * src_n));
        TU_OK(ops[b]->write(d, o, 0, old, 4 * dst_n));
        lkv_reduce_rows_args a = {.n = ROWS, .group = group, .reduce = reduce,
                                  .src_stride = STRIDE, .dst_stride = CAP, .src_row = src_row,
                                  .dst_row = dst_row, .len = len, .src = s, .dst = o};
        TU_OK(ops[b]->reduce_rows(d, &a));
        got[b] = malloc(4 * dst_n);
        TU_OK(ops[b]->read(d, o, 0, got[b], 4 * dst_n));
        ops[b]->free(d, s), ops[b]->free(d, o);
        ops[b]->close(d);
    }
    for (size_t i = 0; i < dst_n; i++)
        cr_assert(memcmp(&got[0][i], &got[1][i], 4) == 0,
                  "group %d reduce %d: word %zu is %.9g, the cpu's %.9g", group, (int)reduce, i,
                  (double)got[1][i], (double)got[0][i]);
    /* the oracle itself, against a sum written here: row 0's first word */
    double sum = 0, most = 0;
    for (int32_t j = 0; j < group; j++) {
        sum += src[(size_t)j * STRIDE];
        most = src[(size_t)j * STRIDE] > most ? src[(size_t)j * STRIDE] : most;
    }
    float want = reduce == LKV_REDUCE_MEAN ? (float)(sum / group) : (float)most;
    cr_assert_eq(got[0][(size_t)dst_row[0] * CAP], want, "row 0 word 0: %.9g, want %.9g",
                 (double)got[0][(size_t)dst_row[0] * CAP], (double)want);
    cr_assert_eq(got[0][(size_t)dst_row[0] * CAP + (size_t)len[0]],
                 old[(size_t)dst_row[0] * CAP + (size_t)len[0]], "a word past row 0 was written");
    free(src), free(old), free(got[0]), free(got[1]);
}

Test(gpu_emu_reduce_rows, max_mean_and_copy_match_the_cpu_oracle_bit_for_bit)
{
    expect_reduce_rows_like_cpu(1, LKV_REDUCE_MAX);
    expect_reduce_rows_like_cpu(1, LKV_REDUCE_MEAN);
    expect_reduce_rows_like_cpu(4, LKV_REDUCE_MAX);
    expect_reduce_rows_like_cpu(7, LKV_REDUCE_MEAN);
}

/* ---- move_kept: a plan's moves from kept lists on the device ---- */

/* Random plans' kept lists placed as select leaves them ([rows][CAP]
 * int32), a paged layout over a shuffled table: the kernel's two passes
 * against the cpu oracle's, every word of the buffer. */
Test(gpu_emu_move_kept, moves_what_the_cpu_oracle_moves_from_device_lists)
{
    enum { SEQS = 3, HEADS = 2, CAP = 40, BS = 8, MAXB = CAP / BS, BLOCKS = 17, WORDS = 6 };
    uint64_t rng = 23;
    tu_plan p;
    tu_plan_random(&p, SEQS, 1, HEADS, CAP, &rng);
    int32_t n = p.plan.n_rows, table[SEQS * MAXB];
    int32_t *kept_row = malloc(sizeof(int32_t) * (size_t)n), *n_kept = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *tab_row = malloc(sizeof(int32_t) * (size_t)n);
    uint32_t *base = malloc(sizeof(uint32_t) * (size_t)n), *at = malloc(sizeof(uint32_t) * (size_t)n);
    int32_t *kept = calloc((size_t)n * CAP, sizeof(int32_t));
    for (int32_t i = 0; i < SEQS * MAXB; i++)
        table[i] = (i * 5 + 2) % BLOCKS;
    uint32_t held = 0;
    for (int32_t i = 0; i < n; i++) {
        const lkv_plan_row *r = &p.plan.rows[i];
        kept_row[i] = n - 1 - i; /* rows of `kept` in another order */
        memcpy(kept + (size_t)kept_row[i] * CAP, r->kept, sizeof(int32_t) * (size_t)r->n_kept);
        n_kept[i] = r->n_kept;
        tab_row[i] = r->sequence;
        base[i] = (uint32_t)(r->head * WORDS);
        at[i] = held;
        held += (uint32_t)(r->n_kept * WORDS);
    }
    size_t words = (size_t)BLOCKS * BS * HEADS * WORDS;
    uint32_t *init = malloc(4 * words), *got[2];
    for (size_t i = 0; i < words; i++)
        init[i] = next_u32(&rng);
    const lkv_backend_ops *ops[2] = {&lkv_backend_cpu, emu};
    int moved = 0;
    for (int b = 0; b < 2; b++) {
        lkv_device *d = NULL;
        lkv_buffer *kb = NULL, *buf = NULL;
        TU_OK(ops[b]->open(0, &d));
        TU_OK(ops[b]->alloc(d, 4 * (size_t)n * CAP, &kb));
        TU_OK(ops[b]->alloc(d, 4 * words, &buf));
        TU_OK(ops[b]->write(d, kb, 0, kept, 4 * (size_t)n * CAP));
        TU_OK(ops[b]->write(d, buf, 0, init, 4 * words));
        lkv_move_kept_args a = {
            .n = n, .kept_row = kept_row, .n_kept = n_kept, .at = at, .held = 4 * (uint64_t)held,
            .kept = kb, .kept_stride = CAP, .words = WORDS,
            .slots = {.base = base, .tab_row = tab_row, .slot_stride = HEADS * WORDS,
                      .block_stride = BS * HEADS * WORDS, .block_size = BS, .table = table,
                      .table_rows = SEQS, .max_blocks = MAXB},
            .buf = buf,
        };
        TU_OK(ops[b]->move_kept(d, &a));
        got[b] = malloc(4 * words);
        TU_OK(ops[b]->read(d, buf, 0, got[b], 4 * words));
        ops[b]->free(d, kb), ops[b]->free(d, buf);
        ops[b]->close(d);
    }
    for (size_t i = 0; i < words; i++) {
        cr_assert_eq(got[1][i], got[0][i], "word %zu: %08x, the cpu's %08x", i, got[1][i],
                     got[0][i]);
        moved += got[0][i] != init[i];
    }
    cr_assert_gt(moved, 0, "the plans must move something");
    tu_plan_free(&p);
    free(kept_row), free(n_kept), free(tab_row), free(base), free(at), free(kept);
    free(init), free(got[0]), free(got[1]);
}

/* ---- qk_probs: probabilities from device q, K and lse ---- */

/* Random q, lse and K in every dtype over a paged layout: the kernel's
 * probabilities against the cpu oracle's, bit for bit (both in double,
 * the emulator's exp being the host's), rows out of order. */
static void expect_qk_probs_like_cpu(lkv_dtype dt)
{
    enum { ROWS = 5, DIM = 8, HEADS = 2, BS = 4, MAXB = 6, BLOCKS = 13, STRIDE = 24 };
    uint64_t rng = 31 + (uint64_t)dt;
    size_t per = lkv_dtype_size(dt), slot_words = HEADS * DIM * per / 4;
    size_t k_words = (size_t)BLOCKS * BS * slot_words;
    unsigned char *k = malloc(4 * k_words);
    for (size_t i = 0; i < 4 * k_words / per; i++)
        lkv_dtype_store(dt, k, i, (float)tu_normal(&rng));
    float q[ROWS * DIM], lse[ROWS];
    int32_t q_row[ROWS], lse_at[ROWS], len[ROWS], tab_row[ROWS], out_row[ROWS], table[2 * MAXB];
    uint32_t base[ROWS];
    for (int32_t i = 0; i < 2 * MAXB; i++)
        table[i] = (i * 4 + 1) % BLOCKS;
    for (int32_t i = 0; i < ROWS * DIM; i++)
        q[i] = (float)tu_normal(&rng);
    for (int32_t i = 0; i < ROWS; i++) {
        q_row[i] = (i + 2) % ROWS;
        lse_at[i] = i;
        lse[i] = (float)(2.0 + tu_uniform(&rng));
        len[i] = 3 + i * 4;
        tab_row[i] = i % 2;
        out_row[i] = ROWS - 1 - i;
        base[i] = (uint32_t)((size_t)(i % HEADS) * DIM * per / 4);
    }
    const lkv_backend_ops *ops[2] = {&lkv_backend_cpu, emu};
    float *got[2];
    for (int b = 0; b < 2; b++) {
        lkv_device *d = NULL;
        lkv_buffer *bq = NULL, *bl = NULL, *bk = NULL, *bp = NULL;
        TU_OK(ops[b]->open(0, &d));
        TU_OK(ops[b]->alloc(d, sizeof q, &bq));
        TU_OK(ops[b]->alloc(d, sizeof lse, &bl));
        TU_OK(ops[b]->alloc(d, 4 * k_words, &bk));
        TU_OK(ops[b]->alloc(d, 4 * ROWS * STRIDE, &bp));
        TU_OK(ops[b]->write(d, bq, 0, q, sizeof q));
        TU_OK(ops[b]->write(d, bl, 0, lse, sizeof lse));
        TU_OK(ops[b]->write(d, bk, 0, k, 4 * k_words));
        lkv_qk_probs_args a = {
            .n = ROWS, .q_row = q_row, .lse_at = lse_at, .len = len, .out_row = out_row,
            .q = bq, .lse = bl, .k = bk, .probs = bp, .dtype = dt, .dim = DIM, .stride = STRIDE,
            .scale = 0.4f,
            .slots = {.base = base, .tab_row = tab_row, .slot_stride = (uint32_t)slot_words,
                      .block_stride = (uint32_t)(BS * slot_words), .block_size = BS,
                      .table = table, .table_rows = 2, .max_blocks = MAXB},
        };
        TU_OK(ops[b]->qk_probs(d, &a));
        got[b] = malloc(4 * ROWS * STRIDE);
        TU_OK(ops[b]->read(d, bp, 0, got[b], 4 * ROWS * STRIDE));
        ops[b]->free(d, bq), ops[b]->free(d, bl), ops[b]->free(d, bk), ops[b]->free(d, bp);
        ops[b]->close(d);
    }
    int positive = 0;
    for (int32_t i = 0; i < ROWS * STRIDE; i++) {
        cr_assert(memcmp(&got[0][i], &got[1][i], 4) == 0, "%s: probability %d is %.9g, the "
                  "cpu's %.9g", lkv_dtype_name(dt), i, (double)got[1][i], (double)got[0][i]);
        positive += got[0][i] > 0.0f;
    }
    cr_assert_gt(positive, ROWS * 3, "%s: the rows must hold probabilities", lkv_dtype_name(dt));
    free(k), free(got[0]), free(got[1]);
}

Test(gpu_emu_qk_probs, every_dtype_matches_the_cpu_oracle_bit_for_bit)
{
    expect_qk_probs_like_cpu(LKV_DTYPE_F32);
    expect_qk_probs_like_cpu(LKV_DTYPE_F16);
    expect_qk_probs_like_cpu(LKV_DTYPE_BF16);
}
