/* Bad input, one per test: the call fails with the exact status, the message
 * names the bad value, and nothing the call was given changes (the
 * "Conventions" of include/lazykv.h). A call on a live cache must leave it as
 * it was both to every read-back call and to the next decode step, which is
 * compared with a twin cache that has the same seeded history but never saw
 * the bad call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "test_util.h"

/* One small shape for every cache here: two layers so that layer order
 * matters, GQA so that cache heads differ from query heads, two sequences so
 * that one can stay unused for prefill. */
enum {
    BI_LAYERS = 2,
    BI_Q_HEADS = 4,
    BI_KV_HEADS = 2,
    BI_DIM = 8,
    BI_SEQUENCES = 2,
    BI_CAPACITY = 32,
    BI_BUDGET = 8,
    BI_WINDOW = 4,
    BI_HISTORY = 13, /* lazy evicts at step 12: the history holds an eviction */
    BI_Q_SIZE = BI_Q_HEADS * BI_DIM,
    BI_KV_SIZE = BI_KV_HEADS * BI_DIM,
};

#define BI_HISTORY_SEED 42u
#define BI_NEXT_STEP_SEED 7u

/* ------------------------------------------------------------------------ */
/* Status and message                                                       */
/* ------------------------------------------------------------------------ */

/* Asserts the call failed with `want` and that lkv_last_error() contains every
 * needle: the bad value and the name of what it was given for. */
static void expect_fail(lkv_status got, lkv_status want, const char *call,
                        const char *const *needles)
{
    const char *msg = lkv_last_error();
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: '%s')", call,
                 lkv_status_name(got), lkv_status_name(want), msg);
    for (const char *const *n = needles; *n; n++)
        cr_assert_not_null(strstr(msg, *n), "%s: message '%s' does not mention '%s'", call, msg,
                           *n);
}

#define EXPECT_FAIL(call, want, ...)                                                             \
    expect_fail((call), (want), #call, (const char *const[]){__VA_ARGS__, NULL})

/* Out-pointers start here; a failed call must not move them. */
static char bi_sentinel;
#define BI_UNTOUCHED ((void *)&bi_sentinel)

/* ------------------------------------------------------------------------ */
/* Snapshot: everything a caller can observe of a cache                     */
/* ------------------------------------------------------------------------ */

typedef struct snapshot {
    lkv_cache_stats stats;
    int32_t sequences, layers, heads, capacity;
    int32_t *length, *step; /* [sequences] lkv_cache_sequence_info */
    int32_t *count;         /* [rows] slots per (sequence, layer, cache head) */
    int32_t *ints;          /* [rows][3][capacity] positions, state_a, state_b */
    float *floats;          /* [rows][capacity] state_f */
} snapshot;

static int32_t snapshot_rows(const snapshot *s) { return s->sequences * s->layers * s->heads; }

/* Zero-filled, so whole rows compare with memcmp whatever their length. */
static void *bi_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    cr_assert_not_null(p);
    return p;
}

static void snapshot_row(const lkv_cache *c, snapshot *s, int32_t seq, int32_t layer,
                         int32_t head)
{
    size_t row = ((size_t)seq * (size_t)s->layers + (size_t)layer) * (size_t)s->heads +
                 (size_t)head;
    int32_t *ints = s->ints + row * 3 * (size_t)s->capacity;
    lkv_slot_view view = {s->capacity, ints, ints + s->capacity, ints + 2 * s->capacity,
                          s->floats + row * (size_t)s->capacity};
    TU_OK(lkv_cache_read_slots(c, seq, layer, head, &view, &s->count[row]));
}

static snapshot snapshot_take(const lkv_cache *c)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    snapshot s = {.sequences = cfg.sequences, .layers = cfg.layers,
                  .heads = lkv_cache_heads(c), .capacity = cfg.capacity};
    size_t rows = (size_t)snapshot_rows(&s), cap = (size_t)s.capacity;
    TU_OK(lkv_cache_get_stats(c, &s.stats));
    s.length = bi_calloc((size_t)s.sequences, sizeof *s.length);
    s.step = bi_calloc((size_t)s.sequences, sizeof *s.step);
    s.count = bi_calloc(rows, sizeof *s.count);
    s.ints = bi_calloc(rows * 3 * cap, sizeof *s.ints);
    s.floats = bi_calloc(rows * cap, sizeof *s.floats);
    for (int32_t q = 0; q < s.sequences; q++) {
        TU_OK(lkv_cache_sequence_info(c, q, &s.length[q], &s.step[q]));
        for (int32_t l = 0; l < s.layers; l++)
            for (int32_t h = 0; h < s.heads; h++)
                snapshot_row(c, &s, q, l, h);
    }
    return s;
}

static void snapshot_free(snapshot *s)
{
    free(s->length);
    free(s->step);
    free(s->count);
    free(s->ints);
    free(s->floats);
}

static void stats_expect_equal(const lkv_cache_stats *a, const lkv_cache_stats *b,
                               const char *when)
{
    cr_assert_eq(a->slots_in_use, b->slots_in_use, "%s: slots_in_use %lld -> %lld", when,
                 (long long)a->slots_in_use, (long long)b->slots_in_use);
    cr_assert_eq(a->peak_slots, b->peak_slots, "%s: peak_slots %lld -> %lld", when,
                 (long long)a->peak_slots, (long long)b->peak_slots);
    cr_assert_eq(a->evictions, b->evictions, "%s: evictions changed", when);
    cr_assert_eq(a->tokens_evicted, b->tokens_evicted, "%s: tokens_evicted changed", when);
    cr_assert_eq(a->kv_bytes_in_use, b->kv_bytes_in_use, "%s: kv_bytes_in_use changed", when);
    cr_assert_eq(a->kv_bytes_peak, b->kv_bytes_peak, "%s: kv_bytes_peak changed", when);
    cr_assert_eq(a->kv_bytes_reserved, b->kv_bytes_reserved, "%s: kv_bytes_reserved changed",
                 when);
}

/* Slot contents compare bitwise: the same inputs on the same backend give
 * the same bits, and any difference means something was written. */
static void row_expect_equal(const snapshot *a, const snapshot *b, int32_t row, const char *when)
{
    size_t cap = (size_t)a->capacity;
    int32_t layer = row / a->heads % a->layers, seq = row / a->heads / a->layers;
    cr_assert_eq(a->count[row], b->count[row],
                 "%s: sequence %d layer %d head %d holds %d slots, was %d", when, seq, layer,
                 row % a->heads, b->count[row], a->count[row]);
    cr_assert(memcmp(a->ints + (size_t)row * 3 * cap, b->ints + (size_t)row * 3 * cap,
                     3 * cap * sizeof *a->ints) == 0,
              "%s: positions or state_a/state_b of sequence %d layer %d head %d changed", when,
              seq, layer, row % a->heads);
    cr_assert(memcmp(a->floats + (size_t)row * cap, b->floats + (size_t)row * cap,
                     cap * sizeof *a->floats) == 0,
              "%s: state_f of sequence %d layer %d head %d changed", when, seq, layer,
              row % a->heads);
}

static void snapshot_expect_equal(const snapshot *a, const snapshot *b, const char *when)
{
    stats_expect_equal(&a->stats, &b->stats, when);
    for (int32_t q = 0; q < a->sequences; q++) {
        cr_assert_eq(a->length[q], b->length[q], "%s: sequence %d length %d -> %d", when, q,
                     a->length[q], b->length[q]);
        cr_assert_eq(a->step[q], b->step[q], "%s: sequence %d step %d -> %d", when, q,
                     a->step[q], b->step[q]);
    }
    for (int32_t r = 0; r < snapshot_rows(a); r++)
        row_expect_equal(a, b, r, when);
}

/* ------------------------------------------------------------------------ */
/* Caches with a seeded history, in twins                                   */
/* ------------------------------------------------------------------------ */

static lkv_cache_config base_config(int32_t capacity)
{
    lkv_cache_config cfg = tu_config(BI_LAYERS, BI_Q_HEADS, BI_KV_HEADS, BI_DIM, capacity);
    cfg.sequences = BI_SEQUENCES;
    return cfg;
}

static lkv_cache_config lazy_config(int32_t budget, int32_t window, int32_t capacity)
{
    lkv_cache_config cfg = base_config(capacity);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.budget = budget;
    cfg.policy.window = window;
    cfg.policy.alpha = 0.05f; /* high enough that some slots miss it: MRI states differ */
    return cfg;
}

static lkv_cache_config snapkv_config(void)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_SNAPKV));
    cfg.policy.budget = BI_BUDGET;
    cfg.policy.window = BI_WINDOW;
    return cfg;
}

/* `bad` receives the bad call; `clean` never does. */
typedef struct twins {
    lkv_cache *bad, *clean;
} twins;

static twins twins_new(const lkv_cache_config *cfg, int32_t steps)
{
    twins t = {tu_cache(cfg), tu_cache(cfg)};
    uint64_t rng_bad = BI_HISTORY_SEED, rng_clean = BI_HISTORY_SEED;
    for (int32_t i = 0; i < steps; i++) {
        tu_decode_random(t.bad, &rng_bad);
        tu_decode_random(t.clean, &rng_clean);
    }
    /* The comparison after the bad call is only meaningful if the twins start equal. */
    snapshot a = snapshot_take(t.bad), b = snapshot_take(t.clean);
    snapshot_expect_equal(&a, &b, "twins after the same history");
    snapshot_free(&a);
    snapshot_free(&b);
    return t;
}

static twins lazy_twins(void)
{
    lkv_cache_config cfg = lazy_config(BI_BUDGET, BI_WINDOW, BI_CAPACITY);
    return twins_new(&cfg, BI_HISTORY);
}

/* Valid inputs of one decode step (q, k, v and room for out). */
typedef struct step_data {
    float *q, *k, *v, *out;
} step_data;

static step_data step_data_new(uint64_t seed)
{
    step_data d = {tu_alloc_normal(BI_Q_SIZE, &seed, 1.0), tu_alloc_normal(BI_KV_SIZE, &seed, 1.0),
                   tu_alloc_normal(BI_KV_SIZE, &seed, 1.0), bi_calloc(BI_Q_SIZE, sizeof(float))};
    return d;
}

static lkv_decode_io step_io(const step_data *d)
{
    return (lkv_decode_io){d->q, d->k, d->v, d->out, LKV_MEMORY_HOST};
}

static void step_data_free(step_data *d)
{
    free(d->q);
    free(d->k);
    free(d->v);
    free(d->out);
}

/* One valid decode step of every layer of `seq`; returns the outputs
 * [layers][q_heads][head_dim]. */
static float *decode_step(lkv_cache *c, int32_t seq)
{
    float *outs = bi_calloc((size_t)BI_LAYERS * BI_Q_SIZE, sizeof *outs);
    step_data d = step_data_new(BI_NEXT_STEP_SEED);
    for (int32_t l = 0; l < BI_LAYERS; l++) {
        lkv_decode_io io = step_io(&d);
        io.out = outs + (size_t)l * BI_Q_SIZE;
        TU_OK(lkv_cache_decode(c, seq, l, &io));
    }
    step_data_free(&d);
    return outs;
}

/* Rule (c): the failed call changed nothing observable, and the next valid
 * step of `seq` gives the same outputs and leaves the same state as on the
 * twin that never saw the bad call. Frees the twins and `before`. */
static void expect_untouched(twins *t, snapshot *before, int32_t seq)
{
    snapshot after = snapshot_take(t->bad);
    snapshot_expect_equal(before, &after, "after the failed call");
    snapshot_free(&after);
    snapshot_free(before);

    float *out_bad = decode_step(t->bad, seq), *out_clean = decode_step(t->clean, seq);
    cr_assert(memcmp(out_bad, out_clean, (size_t)BI_LAYERS * BI_Q_SIZE * sizeof(float)) == 0,
              "the next decode step's output differs from the twin's");
    free(out_bad);
    free(out_clean);
    snapshot a = snapshot_take(t->bad), b = snapshot_take(t->clean);
    snapshot_expect_equal(&b, &a, "after the next step, against the twin");
    snapshot_free(&a);
    snapshot_free(&b);
    lkv_cache_destroy(t->bad);
    lkv_cache_destroy(t->clean);
}

/* ------------------------------------------------------------------------ */
/* lkv_cache_create                                                         */
/* ------------------------------------------------------------------------ */

static void expect_create_rejects(const lkv_cache_config *cfg, const char *const *needles)
{
    lkv_cache *c = BI_UNTOUCHED;
    expect_fail(lkv_cache_create(tu_runtime(), cfg, &c), LKV_INVALID_ARGUMENT, "lkv_cache_create",
                needles);
    cr_assert_eq((void *)c, BI_UNTOUCHED, "lkv_cache_create wrote *out_cache on failure");
}

#define EXPECT_CREATE_REJECTS(cfg, ...)                                                          \
    expect_create_rejects(&(cfg), (const char *const[]){__VA_ARGS__, NULL})

Test(bad_input, create_rejects_layers_above_the_maximum)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    cfg.layers = 5000;
    EXPECT_CREATE_REJECTS(cfg, "layers", "5000");
}

Test(bad_input, create_rejects_head_dim_above_the_maximum)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    cfg.head_dim = 1025;
    EXPECT_CREATE_REJECTS(cfg, "head_dim", "1025");
}

Test(bad_input, create_rejects_negative_capacity)
{
    lkv_cache_config cfg = base_config(-7);
    EXPECT_CREATE_REJECTS(cfg, "capacity", "-7");
}

Test(bad_input, create_rejects_kv_heads_not_dividing_q_heads)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    cfg.q_heads = 12;
    cfg.kv_heads = 5;
    EXPECT_CREATE_REJECTS(cfg, "kv_heads", "5", "q_heads", "12");
}

Test(bad_input, create_rejects_lazy_budget_above_capacity)
{
    lkv_cache_config cfg = lazy_config(40, BI_WINDOW, BI_CAPACITY);
    EXPECT_CREATE_REJECTS(cfg, "budget", "40", "capacity", "32");
}

Test(bad_input, create_rejects_lazy_window_zero)
{
    lkv_cache_config cfg = lazy_config(BI_BUDGET, 0, BI_CAPACITY);
    EXPECT_CREATE_REJECTS(cfg, "window", "0", "lazy");
}

/* Lazy holds budget + window slots just before it evicts. */
Test(bad_input, create_rejects_capacity_below_lazy_peak)
{
    lkv_cache_config cfg = lazy_config(30, BI_WINDOW, BI_CAPACITY);
    EXPECT_CREATE_REJECTS(cfg, "capacity", "32", "34");
}

Test(bad_input, create_rejects_lazy_alpha_above_one)
{
    lkv_cache_config cfg = lazy_config(BI_BUDGET, BI_WINDOW, BI_CAPACITY);
    cfg.policy.alpha = 1.5f;
    EXPECT_CREATE_REJECTS(cfg, "alpha", "1.5");
}

/* A NaN threshold would make every comparison false: no slot ever important. */
Test(bad_input, create_rejects_lazy_alpha_nan)
{
    lkv_cache_config cfg = lazy_config(BI_BUDGET, BI_WINDOW, BI_CAPACITY);
    cfg.policy.alpha = NAN;
    EXPECT_CREATE_REJECTS(cfg, "alpha", "nan");
}

Test(bad_input, create_rejects_null_config)
{
    lkv_cache *c = BI_UNTOUCHED;
    EXPECT_FAIL(lkv_cache_create(tu_runtime(), NULL, &c), LKV_INVALID_ARGUMENT, "config");
    cr_assert_eq((void *)c, BI_UNTOUCHED, "lkv_cache_create wrote *out_cache on failure");
}

/* ------------------------------------------------------------------------ */
/* lkv_cache_decode on a live cache                                         */
/* ------------------------------------------------------------------------ */

/* Decodes `io` into sequence `seq`, layer `layer` of the bad twin, expects the
 * failure, then the rule (c) checks on sequence `next_seq`. */
static void expect_decode_rejected(twins *t, int32_t seq, int32_t layer, const lkv_decode_io *io,
                                   lkv_status want, const char *const *needles, int32_t next_seq)
{
    snapshot before = snapshot_take(t->bad);
    expect_fail(lkv_cache_decode(t->bad, seq, layer, io), want, "lkv_cache_decode", needles);
    expect_untouched(t, &before, next_seq);
}

#define EXPECT_DECODE_REJECTED(t, seq, layer, io, want, ...)                                     \
    expect_decode_rejected(&(t), (seq), (layer), (io), (want),                                   \
                           (const char *const[]){__VA_ARGS__, NULL}, 0)

Test(bad_input, decode_rejects_nan_in_q)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    d.q[2 * BI_DIM + 3] = NAN;
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 0, 0, &io, LKV_INVALID_ARGUMENT, "q[2][3]", "NaN");
    step_data_free(&d);
}

Test(bad_input, decode_rejects_nan_in_k)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    d.k[1 * BI_DIM + 5] = NAN;
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 0, 0, &io, LKV_INVALID_ARGUMENT, "k[1][5]", "NaN");
    step_data_free(&d);
}

/* The very last element: the check must scan the whole array. */
Test(bad_input, decode_rejects_inf_in_v)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    d.v[BI_KV_SIZE - 1] = INFINITY;
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 0, 0, &io, LKV_INVALID_ARGUMENT, "v[1][7]", "infinite");
    step_data_free(&d);
}

Test(bad_input, decode_rejects_sequence_out_of_range)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 7, 0, &io, LKV_INVALID_ARGUMENT, "sequence", "7");
    step_data_free(&d);
}

Test(bad_input, decode_rejects_layer_out_of_range)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 0, 9, &io, LKV_INVALID_ARGUMENT, "layer", "9");
    step_data_free(&d);
}

/* A step starts at layer 0; layer 1 first would skip a layer's token. */
Test(bad_input, decode_rejects_layer_out_of_order)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    EXPECT_DECODE_REJECTED(t, 0, 1, &io, LKV_INVALID_ARGUMENT, "layer 1", "order", "layer 0");
    step_data_free(&d);
}

Test(bad_input, decode_rejects_device_memory_as_unsupported)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    io.memory = LKV_MEMORY_DEVICE;
    EXPECT_DECODE_REJECTED(t, 0, 0, &io, LKV_UNSUPPORTED, "memory kind 1", "LKV_MEMORY_HOST");
    step_data_free(&d);
}

Test(bad_input, decode_rejects_null_io)
{
    twins t = lazy_twins();
    EXPECT_DECODE_REJECTED(t, 0, 0, NULL, LKV_INVALID_ARGUMENT, "io", "NULL");
}

Test(bad_input, decode_rejects_null_q)
{
    twins t = lazy_twins();
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    io.q = NULL;
    EXPECT_DECODE_REJECTED(t, 0, 0, &io, LKV_INVALID_ARGUMENT, "q is NULL");
    step_data_free(&d);
}

/* The batch's io and its list: named, nothing read through them, nothing
 * changed (a NULL io once crashed the check). */
Test(bad_input, decode_batch_rejects_null_io_and_null_sequences)
{
    twins t = lazy_twins();
    snapshot before = snapshot_take(t.bad);
    EXPECT_FAIL(lkv_cache_decode_batch(t.bad, 0, NULL), LKV_INVALID_ARGUMENT,
                "lkv_cache_decode_batch: io is NULL");
    lkv_decode_batch_io io = {.n_sequences = 1};
    EXPECT_FAIL(lkv_cache_decode_batch(t.bad, 0, &io), LKV_INVALID_ARGUMENT, "sequences is NULL");
    EXPECT_FAIL(lkv_cache_prefill_batch(t.bad, 0, NULL), LKV_INVALID_ARGUMENT,
                "lkv_cache_prefill_batch: io is NULL");
    expect_untouched(&t, &before, 0);
}

/* policy full never evicts, so capacity steps fill sequence 0; sequence 1
 * still has room for the step that proves nothing moved. */
Test(bad_input, decode_on_a_full_cache_is_out_of_memory)
{
    enum { CAP = 6 };
    lkv_cache_config cfg = base_config(CAP);
    twins t = twins_new(&cfg, CAP);
    step_data d = step_data_new(1);
    lkv_decode_io io = step_io(&d);
    expect_decode_rejected(&t, 0, 0, &io, LKV_OUT_OF_MEMORY,
                           (const char *const[]){"full", "capacity", "6", NULL}, 1);
    step_data_free(&d);
}

/* ------------------------------------------------------------------------ */
/* lkv_cache_prefill on a live cache                                        */
/* ------------------------------------------------------------------------ */

/* Valid prompt arrays of n tokens: k, v [n][kv_heads][dim], no q. */
typedef struct prompt_data {
    int32_t n;
    float *k, *v;
} prompt_data;

static prompt_data prompt_new(int32_t n)
{
    uint64_t rng = 3;
    prompt_data p = {n, tu_alloc_normal((size_t)n * BI_KV_SIZE, &rng, 1.0),
                     tu_alloc_normal((size_t)n * BI_KV_SIZE, &rng, 1.0)};
    return p;
}

static void prompt_free(prompt_data *p)
{
    free(p->k);
    free(p->v);
}

static void expect_prefill_rejected(twins *t, int32_t seq, const prompt_data *p,
                                    const char *const *needles)
{
    lkv_prefill_io io = {.n_tokens = p->n, .k = p->k, .v = p->v};
    snapshot before = snapshot_take(t->bad);
    expect_fail(lkv_cache_prefill(t->bad, seq, 0, &io), LKV_INVALID_ARGUMENT, "lkv_cache_prefill",
                needles);
    expect_untouched(t, &before, 0);
}

#define EXPECT_PREFILL_REJECTED(t, seq, p, ...)                                                  \
    expect_prefill_rejected(&(t), (seq), &(p), (const char *const[]){__VA_ARGS__, NULL})

/* Sequence 1 is unused, so only the NaN can be the reason. k is
 * [token][kv_heads * head_dim]: token 2, kv head 1, element 4 is k[2][12]. */
Test(bad_input, prefill_rejects_nan_in_k)
{
    twins t = lazy_twins();
    prompt_data p = prompt_new(3);
    p.k[2 * BI_KV_SIZE + 1 * BI_DIM + 4] = NAN;
    EXPECT_PREFILL_REJECTED(t, 1, p, "k[2][12]", "NaN", "sequence 1");
    prompt_free(&p);
}

Test(bad_input, prefill_rejects_a_sequence_already_decoding)
{
    twins t = lazy_twins();
    prompt_data p = prompt_new(3);
    EXPECT_PREFILL_REJECTED(t, 0, p, "sequence 0", "decoding");
    prompt_free(&p);
}

/* snapkv keeps the prompt slots its last queries vote for: a prompt over
 * budget cannot be scored without q. */
Test(bad_input, snapkv_prefill_without_q_is_rejected)
{
    lkv_cache_config cfg = snapkv_config();
    twins t = twins_new(&cfg, 5);
    prompt_data p = prompt_new(BI_BUDGET + BI_WINDOW);
    EXPECT_PREFILL_REJECTED(t, 1, p, "snapkv", "needs q");
    prompt_free(&p);
}

/* ------------------------------------------------------------------------ */
/* Policy names and parameters                                              */
/* ------------------------------------------------------------------------ */

Test(bad_input, policy_from_name_rejects_unknown_name)
{
    lkv_policy_kind kind = LKV_POLICY_TOVA;
    EXPECT_FAIL(lkv_policy_from_name("lazyy", &kind), LKV_INVALID_ARGUMENT, "lazyy");
    cr_assert_eq(kind, LKV_POLICY_TOVA, "lkv_policy_from_name wrote *out_kind on failure");
}

/* Field by field: struct padding need not survive a copy. */
static void params_expect_equal(const lkv_policy_params *a, const lkv_policy_params *b)
{
    cr_assert_eq(a->kind, b->kind);
    cr_assert_eq(a->budget, b->budget, "budget %d -> %d", a->budget, b->budget);
    cr_assert_eq(a->window, b->window);
    cr_assert(memcmp(&a->alpha, &b->alpha, sizeof a->alpha) == 0, "alpha changed");
    cr_assert_eq(a->sinks, b->sinks);
    cr_assert_eq(a->recent, b->recent);
    cr_assert_eq(a->interval, b->interval);
    cr_assert_eq(a->proxy_ratio, b->proxy_ratio);
    cr_assert_eq(a->proxy_keep_ratio, b->proxy_keep_ratio);
    cr_assert_eq(a->random_keep_ratio, b->random_keep_ratio);
    cr_assert_eq(a->protect_ratio, b->protect_ratio);
    cr_assert_eq(a->min_length, b->min_length);
    cr_assert_eq(a->seed, b->seed);
    cr_assert_eq(a->group_reduce, b->group_reduce);
}

/* h2o has no threshold: accepting alpha would silently ignore it. */
Test(bad_input, policy_set_rejects_alpha_for_h2o)
{
    lkv_policy_params p, before;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_H2O));
    TU_OK(lkv_policy_set(&p, "budget", "64"));
    before = p;
    EXPECT_FAIL(lkv_policy_set(&p, "alpha", "0.01"), LKV_INVALID_ARGUMENT, "alpha", "h2o");
    params_expect_equal(&before, &p);
}

Test(bad_input, policy_set_rejects_malformed_budget)
{
    lkv_policy_params p, before;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_LAZY));
    TU_OK(lkv_policy_set(&p, "budget", "64"));
    before = p;
    EXPECT_FAIL(lkv_policy_set(&p, "budget", "12x"), LKV_INVALID_ARGUMENT, "budget", "12x");
    params_expect_equal(&before, &p);
}

/* ------------------------------------------------------------------------ */
/* lkv_runtime_open                                                         */
/* ------------------------------------------------------------------------ */

static void expect_open_fails(const char *spec, lkv_status want, const char *const *needles)
{
    lkv_runtime *rt = BI_UNTOUCHED;
    expect_fail(lkv_runtime_open(spec, &rt), want, "lkv_runtime_open", needles);
    cr_assert_eq((void *)rt, BI_UNTOUCHED, "lkv_runtime_open('%s') wrote *out_rt on failure", spec);
}

#define EXPECT_OPEN_FAILS(spec, want, ...)                                                       \
    expect_open_fails((spec), (want), (const char *const[]){__VA_ARGS__, NULL})

Test(bad_input, runtime_open_rejects_unknown_backend)
{
    EXPECT_OPEN_FAILS("nosuch", LKV_INVALID_ARGUMENT, "nosuch");
}

Test(bad_input, runtime_open_rejects_device_index_out_of_range)
{
    EXPECT_OPEN_FAILS("cpu:7", LKV_INVALID_ARGUMENT, "cpu:7", "7");
}

Test(bad_input, runtime_open_rejects_non_numeric_device_index)
{
    EXPECT_OPEN_FAILS("cpu:x", LKV_INVALID_ARGUMENT, "cpu:x");
}

/* Asking for a backend this build left out is UNAVAILABLE naming it, never a
 * silent fallback to another; which backends are built depends on the
 * compilers found at configure time, so the test takes whichever is missing. */
Test(bad_input, runtime_open_of_an_unbuilt_backend_is_unavailable_with_reason)
{
    const char *unbuilt = NULL;
    for (int i = 0; i < lkv_backend_registry_count && !unbuilt; i++)
        if (!lkv_backend_registry[i].ops)
            unbuilt = lkv_backend_registry[i].name;
    if (!unbuilt)
        cr_skip_test("every backend is built into this lazykv");
    EXPECT_OPEN_FAILS(unbuilt, LKV_UNAVAILABLE, unbuilt, "not built");
}

/* ------------------------------------------------------------------------ */
/* lkv_trace_replay                                                         */
/* ------------------------------------------------------------------------ */

/* The spec's toy trace (spec/policies.md, section 4): header and first step. */
#define BI_TOY_HEADER                                                                            \
    "{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\": 2, \"alpha\": 0.1}\n"
#define BI_TOY_STEP1 "{\"t\": 1, \"p\": [0.5, 0.2, 0.05, 0.05, 0.2]}\n"
#define BI_H2O_HEADER "{\"prompt\": 4, \"heads\": 1, \"policy\": \"h2o\", \"budget\": 4"

/* A copy of the message a direct call leaves, to find again inside the
 * message of a call that wraps it. */
static const char *inner_message(lkv_status st)
{
    static char copy[1024];
    cr_assert_neq(st, LKV_OK, "the direct call was expected to fail");
    snprintf(copy, sizeof copy, "%s", lkv_last_error());
    return copy;
}

static int discard_line(void *user, const char *line)
{
    (void)user;
    (void)line;
    return 0;
}

static void expect_trace_rejected(const char *text, const char *policy, const char *const *needles)
{
    expect_fail(lkv_trace_replay(tu_runtime(), text, policy, discard_line, NULL),
                LKV_INVALID_ARGUMENT, "lkv_trace_replay", needles);
}

#define EXPECT_TRACE_REJECTED(text, policy, ...)                                                 \
    expect_trace_rejected((text), (policy), (const char *const[]){__VA_ARGS__, NULL})

Test(bad_input, trace_rejects_broken_json)
{
    EXPECT_TRACE_REJECTED(BI_TOY_HEADER "{\"t\": 1, \"p\": [0.5, 0.2, 0.05, 0.05, 0.2]\n", NULL,
                          "line 2", "JSON");
}

/* Step 2 is missing: line 3 says t 3. */
Test(bad_input, trace_rejects_wrong_step_number)
{
    EXPECT_TRACE_REJECTED(BI_TOY_HEADER BI_TOY_STEP1
                          "{\"t\": 3, \"p\": [0.5, 0.05, 0.05, 0.2, 0.05, 0.15]}\n",
                          NULL, "line 3", "\"t\"");
}

/* Step 1 sees ids 0..4: five probabilities, not four. */
Test(bad_input, trace_rejects_wrong_number_of_probabilities)
{
    EXPECT_TRACE_REJECTED(BI_TOY_HEADER "{\"t\": 1, \"p\": [0.5, 0.2, 0.05, 0.25]}\n", NULL,
                          "line 2", "\"p\"");
}

Test(bad_input, trace_rejects_negative_probability)
{
    EXPECT_TRACE_REJECTED(BI_TOY_HEADER "{\"t\": 1, \"p\": [0.5, -0.2, 0.05, 0.05, 0.2]}\n", NULL,
                          "line 2", "id 1");
}

/* The trace reports the line and passes lkv_policy_set's own message on
 * intact, since that message is what names the key and what it takes. */
Test(bad_input, trace_rejects_header_key_the_policy_does_not_take)
{
    lkv_policy_params p;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_H2O));
    const char *inner = inner_message(lkv_policy_set(&p, "alpha", "0.1"));
    EXPECT_TRACE_REJECTED(BI_H2O_HEADER ", \"alpha\": 0.1}\n" BI_TOY_STEP1, NULL, "line 1",
                          "alpha", "h2o", inner);
}

Test(bad_input, trace_rejects_header_policy_disagreeing_with_override)
{
    EXPECT_TRACE_REJECTED(BI_H2O_HEADER "}\n" BI_TOY_STEP1, "lazy", "line 1", "h2o", "lazy");
}

Test(bad_input, trace_rejects_unknown_policy_in_header)
{
    lkv_policy_kind kind;
    const char *inner = inner_message(lkv_policy_from_name("lazyy", &kind));
    EXPECT_TRACE_REJECTED("{\"prompt\": 4, \"heads\": 1, \"policy\": \"lazyy\"}\n" BI_TOY_STEP1,
                          NULL, "line 1", "lazyy", inner);
}

/* The header's parameters reach lkv_cache_create, whose message (naming the
 * value) must come through intact with the line number. */
Test(bad_input, trace_rejects_header_window_zero)
{
    lkv_cache_config cfg = lazy_config(6, 0, BI_CAPACITY);
    lkv_cache *c = BI_UNTOUCHED;
    const char *inner = inner_message(lkv_cache_create(tu_runtime(), &cfg, &c));
    EXPECT_TRACE_REJECTED("{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\": 0}\n"
                          BI_TOY_STEP1, NULL, "line 1", "window 0", inner);
}

/* ------------------------------------------------------------------------ */
/* Limits found in review: overflow and sign                                */
/* ------------------------------------------------------------------------ */

/* budget + window would overflow int32 before the capacity check. */
Test(bad_input, create_rejects_huge_budget_and_window_without_overflow)
{
    lkv_cache_config cfg = lazy_config(1 << 30, 1 << 30, BI_CAPACITY);
    EXPECT_CREATE_REJECTS(cfg, "budget", "1073741824", "capacity");
}

/* Row indices are int32: sequences x layers x cache heads must fit. */
Test(bad_input, create_rejects_more_rows_than_int32_can_index)
{
    lkv_cache_config cfg = base_config(1);
    cfg.sequences = 65536;
    cfg.layers = 2048;
    cfg.q_heads = cfg.kv_heads = 32;
    cfg.head_dim = 1;
    EXPECT_CREATE_REJECTS(cfg, "rows", "65536");
}

Test(bad_input, create_rejects_negative_streaming_sinks)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_STREAMING));
    cfg.policy.budget = BI_BUDGET;
    cfg.policy.sinks = -5;
    EXPECT_CREATE_REJECTS(cfg, "sinks", "-5");
}

Test(bad_input, create_rejects_negative_h2o_recent)
{
    lkv_cache_config cfg = base_config(BI_CAPACITY);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_H2O));
    cfg.policy.budget = BI_BUDGET;
    cfg.policy.recent = -5;
    EXPECT_CREATE_REJECTS(cfg, "recent", "-5");
}

Test(bad_input, trace_rejects_probability_above_one)
{
    EXPECT_TRACE_REJECTED(BI_TOY_HEADER "{\"t\": 1, \"p\": [1e39, 0.2, 0.05, 0.05, 0.2]}\n", NULL,
                          "line 2", "1e39");
}

/* "window\u0000junk" must not pass for "window". */
Test(bad_input, trace_rejects_nul_escape_in_a_key)
{
    EXPECT_TRACE_REJECTED("{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\\u0000junk\": 2}\n",
                          NULL, "line 1", "escape");
}

/* Which of two "budget" keys would win is a guess: refuse it. */
Test(bad_input, trace_rejects_a_repeated_header_key)
{
    EXPECT_TRACE_REJECTED("{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\": 2, \"budget\": 9}\n",
                          NULL, "line 1", "budget", "twice");
}
