/* attend with its observe fused (lkv_attend_args.observe) against attend
 * with probs and then the observe op, on the emulator through the shared
 * CUDA/HIP host code: the state both leave must be the same bits, for
 * every observe kind, in a cooperative launch (the split blocks compute
 * the probabilities) and without one (lkv_attend_probs does), and the
 * fused call must save a launch. Bad observe arguments fail before
 * anything runs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_driver.h"
#include "error.h"
#include "test_util.h"

static const lkv_backend_ops *emu = &lkv_backend_gpu_emu;

enum { DIM = 64, HKV = 2, HQ = 8, CAP = 3000, GROUPS = 2, ROWS = GROUPS * HKV };

typedef struct rig {
    lkv_device *dev;
    lkv_buffer *k, *v, *q, *out, *probs, *state[3]; /* last, mri, state_f */
    lkv_cache_buffers cache;
    int32_t row0[GROUPS], n[GROUPS], t[GROUPS];
    int32_t start_i[2][ROWS * CAP]; /* last, mri before the call */
    float start_f[ROWS * CAP];
} rig;

static uint32_t next_u32(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static float unit(uint64_t *s)
{
    return (float)next_u32(s) / 4294967296.0f * 2.0f - 1.0f;
}

static lkv_buffer *upload(lkv_device *d, const void *host, size_t bytes)
{
    lkv_buffer *b = NULL;
    TU_OK(emu->alloc(d, bytes, &b));
    TU_OK(emu->write(d, b, 0, host, bytes));
    return b;
}

/* Random K, V and q; the groups listed out of buffer order, at different
 * steps; state that the observe has something to change. */
static void rig_open(rig *r, int cooperative)
{
    setenv("LAZYKV_GPU_COOPERATIVE", cooperative ? "1" : "0", 1);
    TU_OK(emu->open(0, &r->dev));
    unsetenv("LAZYKV_GPU_COOPERATIVE");
    uint64_t seed = 5;
    size_t kv = (size_t)ROWS * CAP * DIM, qn = (size_t)GROUPS * HQ * DIM;
    float *x = malloc(kv * sizeof *x);
    cr_assert_not_null(x);
    for (size_t i = 0; i < kv; i++)
        x[i] = unit(&seed) * 2.0f;
    r->k = upload(r->dev, x, kv * 4);
    for (size_t i = 0; i < kv; i++)
        x[i] = unit(&seed);
    r->v = upload(r->dev, x, kv * 4);
    for (size_t i = 0; i < qn; i++)
        x[i] = unit(&seed);
    r->q = upload(r->dev, x, qn * 4);
    free(x);
    TU_OK(emu->alloc(r->dev, qn * 4, &r->out));
    TU_OK(emu->alloc(r->dev, (size_t)ROWS * CAP * 4, &r->probs));
    r->row0[0] = 2, r->n[0] = 2500, r->t[0] = 1000;
    r->row0[1] = 0, r->n[1] = 777, r->t[1] = 1234;
    for (size_t i = 0; i < (size_t)ROWS * CAP; i++) {
        r->start_i[0][i] = (int32_t)(next_u32(&seed) % 1000);
        r->start_i[1][i] = (int32_t)(next_u32(&seed) % 300);
        r->start_f[i] = (float)(next_u32(&seed) % 1000) * 1e-4f;
    }
    for (int s = 0; s < 3; s++)
        TU_OK(emu->alloc(r->dev, (size_t)ROWS * CAP * 4, &r->state[s]));
    r->cache = (lkv_cache_buffers){.k = r->k, .v = r->v, .state_a = r->state[0],
                                   .state_b = r->state[1], .state_f = r->state[2],
                                   .capacity = CAP, .head_dim = DIM, .dtype = LKV_DTYPE_F32};
}

static void rig_reset_state(rig *r)
{
    size_t bytes = (size_t)ROWS * CAP * 4;
    TU_OK(emu->write(r->dev, r->state[0], 0, r->start_i[0], bytes));
    TU_OK(emu->write(r->dev, r->state[1], 0, r->start_i[1], bytes));
    TU_OK(emu->write(r->dev, r->state[2], 0, r->start_f, bytes));
}

static void rig_close(rig *r)
{
    lkv_buffer *all[] = {r->k, r->v, r->q, r->out, r->probs, r->state[0], r->state[1],
                         r->state[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        emu->free(r->dev, all[i]);
    emu->close(r->dev);
}

static lkv_attend_args attend_args(rig *r, lkv_buffer *probs, const lkv_attend_observe *o)
{
    return (lkv_attend_args){
        .cache = &r->cache, .n_groups = GROUPS, .group_row0 = r->row0, .group_n = r->n,
        .cache_heads = HKV, .q_heads = HQ, .scale = 0.125f, .reduce = LKV_REDUCE_MAX,
        .q = r->q, .out = r->out, .probs = probs, .observe = o,
    };
}

static int64_t launches(rig *r)
{
    lkv_counters c;
    emu->counters(r->dev, &c);
    return c.launches;
}

/* The state after `call` (0 separate, 1 fused): all three arrays. */
static void *run_way(rig *r, const lkv_attend_observe *o, int fused, int64_t *out_launches)
{
    rig_reset_state(r);
    int64_t before = launches(r);
    if (fused) {
        lkv_attend_args a = attend_args(r, NULL, o);
        TU_OK(emu->attend(r->dev, &a));
    } else {
        lkv_attend_args a = attend_args(r, r->probs, NULL);
        TU_OK(emu->attend(r->dev, &a));
        int32_t rows[ROWS], row_n[ROWS], row_t[ROWS];
        for (int g = 0, m = 0; g < GROUPS; g++)
            for (int h = 0; h < HKV; h++, m++) {
                rows[m] = r->row0[g] + h;
                row_n[m] = r->n[g];
                row_t[m] = r->t[g];
            }
        lkv_observe_args b = {.cache = &r->cache, .n_rows = ROWS, .rows = rows, .row_n = row_n,
                              .probs = r->probs, .kind = o->kind, .t = r->t[0], .row_t = row_t,
                              .alpha = o->alpha};
        TU_OK(emu->observe(r->dev, &b));
    }
    *out_launches = launches(r) - before;
    size_t bytes = (size_t)ROWS * CAP * 4;
    unsigned char *got = malloc(3 * bytes);
    cr_assert_not_null(got);
    for (int s = 0; s < 3; s++)
        TU_OK(emu->read(r->dev, r->state[s], 0, got + (size_t)s * bytes, bytes));
    return got;
}

static void expect_same_state(lkv_observe_kind kind, int cooperative)
{
    rig *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    rig_open(r, cooperative);
    lkv_attend_observe o = {.kind = kind, .alpha = 1.0f / 2500.0f, .group_t = r->t};
    int64_t sep_launches, fused_launches;
    unsigned char *sep = run_way(r, &o, 0, &sep_launches);
    unsigned char *fused = run_way(r, &o, 1, &fused_launches);
    size_t bytes = (size_t)ROWS * CAP * 4;
    const unsigned char *start[3] = {(const void *)r->start_i[0], (const void *)r->start_i[1],
                                     (const void *)r->start_f};
    for (int s = 0; s < 3; s++) {
        size_t changed = 0;
        for (size_t i = 0; i < bytes; i += 4) {
            cr_assert(memcmp(sep + s * bytes + i, fused + s * bytes + i, 4) == 0,
                      "kind %d, cooperative %d: state %d word %zu differs", (int)kind,
                      cooperative, s, i / 4);
            changed += memcmp(sep + s * bytes + i, start[s] + i, 4) != 0;
        }
        int written = kind == LKV_OBSERVE_RECURRENCE ? s < 2 : s == 2;
        /* lazy changes the slots at or above alpha only: some, not all */
        size_t listed = (size_t)HKV * (size_t)(r->n[0] + r->n[1]);
        if (written)
            cr_assert(changed > 0 && (kind != LKV_OBSERVE_RECURRENCE || changed < listed),
                      "kind %d: state %d changed at %zu of %zu slots", (int)kind, s, changed,
                      listed);
        else
            cr_assert_eq(changed, 0, "kind %d: state %d changed at %zu slots", (int)kind, s,
                         changed);
    }
    cr_assert_eq(fused_launches, sep_launches - 1, "kind %d, cooperative %d: fused %lld "
                 "launches, separate %lld", (int)kind, cooperative, (long long)fused_launches,
                 (long long)sep_launches);
    cr_assert_eq(fused_launches, cooperative ? 1 : 2);
    free(sep);
    free(fused);
    rig_close(r);
    free(r);
}

Test(gpu_emu_fused, lazy_state_is_the_bits_of_attend_then_observe)
{
    expect_same_state(LKV_OBSERVE_RECURRENCE, 1);
    expect_same_state(LKV_OBSERVE_RECURRENCE, 0);
}

Test(gpu_emu_fused, accumulated_state_is_the_bits_of_attend_then_observe)
{
    expect_same_state(LKV_OBSERVE_ACCUMULATE, 1);
    expect_same_state(LKV_OBSERVE_ACCUMULATE, 0);
}

Test(gpu_emu_fused, assigned_state_is_the_bits_of_attend_then_observe)
{
    expect_same_state(LKV_OBSERVE_ASSIGN, 1);
    expect_same_state(LKV_OBSERVE_ASSIGN, 0);
}

/* A bad observe fails naming what is wrong, and nothing is written. */
Test(gpu_emu_fused, a_bad_observe_fails_before_anything_runs)
{
    rig *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    rig_open(r, 1);
    rig_reset_state(r);
    int64_t before = launches(r);
    lkv_attend_observe o = {.kind = (lkv_observe_kind)7, .alpha = 0.5f, .group_t = r->t};
    lkv_attend_args a = attend_args(r, NULL, &o);
    cr_assert_eq(emu->attend(r->dev, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "observe kind 7"), "%s", lkv_last_error());
    o.kind = LKV_OBSERVE_ACCUMULATE;
    o.group_t = NULL;
    cr_assert_eq(emu->attend(r->dev, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "group steps"), "%s", lkv_last_error());
    o.group_t = r->t;
    r->cache.state_f = NULL;
    cr_assert_eq(emu->attend(r->dev, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "state buffer"), "%s", lkv_last_error());
    lkv_buffer *short_state = NULL; /* rows 0 and 1 only: group 0's rows are 2 and 3 */
    TU_OK(emu->alloc(r->dev, (size_t)2 * CAP * 4, &short_state));
    r->cache.state_f = short_state;
    cr_assert_eq(emu->attend(r->dev, &a), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "group 0 rows 2..3 outside the 2 rows") &&
                  strstr(lkv_last_error(), "observed state"), "%s", lkv_last_error());
    emu->free(r->dev, short_state);
    r->cache.state_f = r->state[2];
    cr_assert_eq(launches(r), before);
    float got[ROWS * CAP];
    TU_OK(emu->read(r->dev, r->state[2], 0, got, sizeof got));
    cr_assert(memcmp(got, r->start_f, sizeof got) == 0, "a failed call wrote the state");
    rig_close(r);
    free(r);
}
