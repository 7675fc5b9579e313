/* The engine API on the cpu oracle: batched calls decide exactly what
 * per-sequence calls decide, chunked prefill what one-shot prefill does,
 * fork and truncate do what the header says, and the counters show one
 * dispatch per op per layer for the whole batch and no host wait with
 * device inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define L 3
#define QH 4
#define KVH 2
#define D 16
#define QW (QH * D)
#define KW (KVH * D)

/* Deterministic inputs of one (sequence, position, layer): the two ways of
 * driving a cache see the same numbers. */
static void token_inputs(int32_t seq, int32_t pos, int32_t layer, float *q, float *k, float *v)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seq << 40) ^ ((uint64_t)pos << 8) ^
                   (uint64_t)layer;
    tu_fill_normal(q, QW, &rng, 1.0);
    tu_fill_normal(k, KW, &rng, 1.0);
    tu_fill_normal(v, KW, &rng, 1.0);
}

static lkv_cache *make_cache(lkv_policy_kind kind, int32_t seqs, int32_t cap)
{
    lkv_cache_config cfg = tu_config(L, QH, KVH, D, cap);
    cfg.sequences = seqs;
    TU_OK(lkv_policy_init(&cfg.policy, kind));
    if (kind != LKV_POLICY_FULL && kind != LKV_POLICY_NACL)
        cfg.policy.budget = 24;
    if (kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV)
        cfg.policy.window = 8;
    if (kind == LKV_POLICY_NACL)
        cfg.policy.min_length = 16;
    return tu_cache(&cfg);
}

static void expect_same_slots(const lkv_cache *a, const lkv_cache *b, int32_t seq, const char *when)
{
    for (int32_t l = 0; l < L; l++)
        for (int32_t h = 0; h < lkv_cache_heads(a); h++) {
            int32_t na = 0, nb = 0;
            int32_t pa[256], pb[256], sa[256], sb[256];
            float fa[256], fb[256];
            lkv_slot_view va = {256, pa, sa, NULL, fa}, vb = {256, pb, sb, NULL, fb};
            TU_OK(lkv_cache_read_slots(a, seq, l, h, &va, &na));
            TU_OK(lkv_cache_read_slots(b, seq, l, h, &vb, &nb));
            cr_assert_eq(na, nb, "%s: sequence %d layer %d head %d holds %d vs %d", when, seq, l,
                         h, na, nb);
            cr_assert(memcmp(pa, pb, sizeof *pa * (size_t)na) == 0 &&
                          memcmp(sa, sb, sizeof *sa * (size_t)na) == 0 &&
                          memcmp(fa, fb, sizeof *fa * (size_t)na) == 0,
                      "%s: sequence %d layer %d head %d: slots differ", when, seq, l, h);
        }
}

static void prefill_one(lkv_cache *c, int32_t seq, int32_t n, int32_t first, float *out)
{
    float *q = malloc(sizeof *q * QW * (size_t)n), *k = malloc(sizeof *k * KW * (size_t)n);
    float *v = malloc(sizeof *v * KW * (size_t)n);
    for (int32_t l = 0; l < L; l++) {
        for (int32_t i = 0; i < n; i++)
            token_inputs(seq, first + i, l, q + i * QW, k + i * KW, v + i * KW);
        lkv_prefill_io io = {.n_tokens = n, .k = k, .v = v, .q = q,
                             .out = out ? out + (size_t)l * (size_t)n * QW : NULL,
                             .first_position = first};
        TU_OK(lkv_cache_prefill(c, seq, l, &io));
    }
    free(q), free(k), free(v);
}

static int32_t next_position(const lkv_cache *c, int32_t seq)
{
    int32_t n = 0, pos[512];
    lkv_slot_view v = {512, pos, NULL, NULL, NULL};
    TU_OK(lkv_cache_read_slots(c, seq, 0, 0, &v, &n));
    return n ? pos[n - 1] + 1 : 0;
}

/* One step of the listed sequences, per-sequence calls or one batch per layer. */
static void step(lkv_cache *c, const int32_t *seqs, int32_t n, int batched, float *out)
{
    float *q = malloc(sizeof *q * QW * (size_t)n), *k = malloc(sizeof *k * KW * (size_t)n);
    float *v = malloc(sizeof *v * KW * (size_t)n);
    int32_t pos[64];
    for (int32_t i = 0; i < n; i++)
        pos[i] = next_position(c, seqs[i]);
    for (int32_t l = 0; l < L; l++) {
        for (int32_t i = 0; i < n; i++)
            token_inputs(seqs[i], pos[i], l, q + i * QW, k + i * KW, v + i * KW);
        float *o = out + (size_t)l * (size_t)n * QW;
        if (batched) {
            lkv_decode_batch_io io = {.n_sequences = n, .sequences = seqs, .q = q, .k = k,
                                      .v = v, .out = o};
            TU_OK(lkv_cache_decode_batch(c, l, &io));
            continue;
        }
        for (int32_t i = 0; i < n; i++) {
            lkv_decode_io io = {q + i * QW, k + i * KW, v + i * KW, o + i * QW, LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(c, seqs[i], l, &io));
        }
    }
    free(q), free(k), free(v);
}

/* Sequences join at different steps with ragged prompts, a shuffled subset
 * steps each round: every decision and output equals per-sequence calls'. */
static void batch_matches_singles(lkv_policy_kind kind)
{
    enum { S = 6, ROUNDS = 40 };
    lkv_cache *a = make_cache(kind, S, 128), *b = make_cache(kind, S, 128);
    static const int32_t prompt[S] = {5, 30, 12, 40, 1, 19};
    for (int32_t s = 0; s < S; s++) {
        prefill_one(a, s, prompt[s], 3 * s, NULL);
        prefill_one(b, s, prompt[s], 3 * s, NULL);
    }
    uint64_t rng = 77 + (uint64_t)kind;
    float oa[L * S * QW], ob[L * S * QW];
    for (int32_t r = 0; r < ROUNDS; r++) {
        int32_t seqs[S], n = 0;
        for (int32_t s = 0; s < S; s++)
            if (s <= r / 3 && tu_uniform(&rng) < 0.8)
                seqs[n++] = s;
        for (int32_t i = n - 1; i > 0; i--) {
            int32_t j = (int32_t)(tu_uniform(&rng) * (i + 1)), tmp = seqs[i];
            seqs[i] = seqs[j], seqs[j] = tmp;
        }
        if (!n)
            continue;
        step(a, seqs, n, 0, oa);
        step(b, seqs, n, 1, ob);
        cr_assert(memcmp(oa, ob, sizeof(float) * L * QW * (size_t)n) == 0,
                  "%s round %d: outputs differ", lkv_policy_name(kind), r);
        for (int32_t s = 0; s < S; s++)
            expect_same_slots(a, b, s, lkv_policy_name(kind));
    }
    lkv_cache_stats sa, sb;
    TU_OK(lkv_cache_get_stats(a, &sa));
    TU_OK(lkv_cache_get_stats(b, &sb));
    cr_assert(sa.evictions > 0 || kind == LKV_POLICY_FULL, "the run evicts");
    cr_assert_eq(sa.evictions, sb.evictions);
    cr_assert_eq(sa.tokens_evicted, sb.tokens_evicted);
    /* the peak is cache-wide: a batch holds every member's new token before
     * the step's evictions, per-sequence calls evict one sequence at a time */
    cr_assert(sb.peak_slots >= sa.peak_slots);
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
}

Test(batch, lazy_batch_matches_per_sequence_calls) { batch_matches_singles(LKV_POLICY_LAZY); }
Test(batch, h2o_batch_matches_per_sequence_calls) { batch_matches_singles(LKV_POLICY_H2O); }
Test(batch, tova_batch_matches_per_sequence_calls) { batch_matches_singles(LKV_POLICY_TOVA); }
Test(batch, snapkv_batch_matches_per_sequence_calls) { batch_matches_singles(LKV_POLICY_SNAPKV); }
Test(batch, streaming_batch_matches_per_sequence_calls)
{
    batch_matches_singles(LKV_POLICY_STREAMING);
}

static lkv_counters counters_now(void)
{
    lkv_counters k;
    TU_OK(lkv_runtime_get_counters(tu_runtime(), &k));
    return k;
}

static uint64_t handle_of(const float *p) { return (uint64_t)(uintptr_t)p; }

/* 64 sequences, device inputs (the cpu's device memory is host memory): a
 * step is store + attend + observe per layer, an evicting step adds one
 * score, select and compact for all 64 x 3 layers; never a host wait. */
Test(batch, device_inputs_cost_three_launches_per_layer_and_no_sync)
{
    enum { S = 64 };
    lkv_cache_config cfg = tu_config(L, QH, KVH, D, 64);
    cfg.sequences = S;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.budget = 16;
    cfg.policy.window = 8;
    lkv_cache *c = tu_cache(&cfg);
    int32_t seqs[S];
    for (int32_t s = 0; s < S; s++)
        seqs[s] = S - 1 - s;
    uint64_t rng = 5;
    float *q = tu_alloc_normal((size_t)S * QW, &rng, 1.0), *k = tu_alloc_normal((size_t)S * KW, &rng, 1.0);
    float *out = calloc((size_t)S * QW, sizeof *out);
    int evicting_steps = 0;
    for (int32_t t = 1; t <= 32; t++) {
        lkv_cache_stats before, after;
        TU_OK(lkv_cache_get_stats(c, &before));
        lkv_counters k0 = counters_now();
        for (int32_t l = 0; l < L; l++) {
            lkv_decode_batch_io io = {
                .n_sequences = S, .sequences = seqs, .memory = LKV_MEMORY_DEVICE,
                .q_dev = {handle_of(q), 0}, .k_dev = {handle_of(k), 0},
                .v_dev = {handle_of(k), 0}, .out_dev = {handle_of(out), 0},
            };
            TU_OK(lkv_cache_decode_batch(c, l, &io));
        }
        lkv_counters k1 = counters_now();
        TU_OK(lkv_cache_get_stats(c, &after));
        int evicted = after.evictions > before.evictions;
        evicting_steps += evicted;
        if (evicted)
            cr_assert_eq(after.evictions - before.evictions, S * L, "step %d: all pairs evict", t);
        cr_assert_eq(k1.launches - k0.launches, 3 * L + (evicted ? 3 : 0), "step %d launches", t);
        cr_assert_eq(k1.syncs - k0.syncs, 0, "step %d: no host wait", t);
        cr_assert_eq(k1.h2d_copies - k0.h2d_copies, 0, "step %d", t);
        cr_assert_eq(k1.d2h_copies - k0.d2h_copies, 0, "step %d", t);
    }
    cr_assert_eq(evicting_steps, 2, "lazy B16 W8 evicts at steps 24 and 32");
    /* Host inputs: staged once per call (q, k, v), read back once. */
    lkv_counters k0 = counters_now();
    lkv_decode_batch_io io = {.n_sequences = S, .sequences = seqs, .q = q, .k = k, .v = k,
                              .out = out};
    TU_OK(lkv_cache_decode_batch(c, 0, &io));
    lkv_counters k1 = counters_now();
    cr_assert_eq(k1.launches - k0.launches, 3);
    cr_assert_eq(k1.h2d_copies - k0.h2d_copies, 3);
    cr_assert_eq(k1.h2d_bytes - k0.h2d_bytes, (int64_t)S * (QW + 2 * KW) * 4);
    cr_assert_eq(k1.d2h_copies - k0.d2h_copies, 1);
    cr_assert_eq(k1.d2h_bytes - k0.d2h_bytes, (int64_t)S * QW * 4);
    cr_assert_eq(k1.syncs - k0.syncs, 1, "the one read-back");
    free(q), free(k), free(out);
    lkv_cache_destroy(c);
}

/* Device inputs are not checked: a NaN or infinite key or value is stored
 * as 0, so the sequence's output equals one with zeros there, and the other
 * sequences are untouched. */
Test(batch, non_finite_device_inputs_are_stored_as_zero)
{
    lkv_cache *a = make_cache(LKV_POLICY_H2O, 2, 64), *b = make_cache(LKV_POLICY_H2O, 2, 64);
    uint64_t rng = 9;
    float *q = tu_alloc_normal(2 * QW, &rng, 1.0), *k = tu_alloc_normal(2 * KW, &rng, 1.0);
    float *bad = malloc(sizeof *bad * 2 * KW), oa[2 * QW], ob[2 * QW];
    memcpy(bad, k, sizeof *bad * 2 * KW);
    bad[KW + 3] = NAN, bad[KW + 5] = INFINITY, bad[KW + 7] = -INFINITY;
    float *zeroed = malloc(sizeof *zeroed * 2 * KW);
    memcpy(zeroed, k, sizeof *zeroed * 2 * KW);
    zeroed[KW + 3] = zeroed[KW + 5] = zeroed[KW + 7] = 0.0f;
    int32_t seqs[2] = {0, 1};
    for (int32_t t = 0; t < 3; t++)
        for (int32_t l = 0; l < L; l++) {
            lkv_decode_batch_io ia = {.n_sequences = 2, .sequences = seqs,
                                      .memory = LKV_MEMORY_DEVICE, .q_dev = {handle_of(q), 0},
                                      .k_dev = {handle_of(bad), 0}, .v_dev = {handle_of(bad), 0},
                                      .out_dev = {handle_of(oa), 0}};
            lkv_decode_batch_io ib = {.n_sequences = 2, .sequences = seqs, .q = q, .k = zeroed,
                                      .v = zeroed, .out = ob};
            TU_OK(lkv_cache_decode_batch(a, l, &ia));
            TU_OK(lkv_cache_decode_batch(b, l, &ib));
            for (int32_t i = 0; i < 2 * QW; i++)
                cr_assert(isfinite(oa[i]) && oa[i] == ob[i], "step %d layer %d out[%d]", t, l, i);
        }
    expect_same_slots(a, b, 1, "non-finite");
    free(q), free(k), free(bad), free(zeroed);
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
}

/* A prompt in chunks keeps what the one-shot prefill keeps and gives the
 * same causal outputs; the last chunk holds the policy's voting window. */
static void chunked_matches_one_shot(lkv_policy_kind kind)
{
    enum { N = 60 };
    static const int32_t chunks[] = {20, 15, 25};
    lkv_cache *a = make_cache(kind, 1, 96), *b = make_cache(kind, 1, 96);
    float *oa = malloc(sizeof *oa * L * N * QW), *ob = malloc(sizeof *ob * L * N * QW);
    prefill_one(a, 0, N, 0, oa);
    float q[N * QW], k[N * KW], v[N * KW];
    for (int32_t c = 0, at = 0; c < 3; at += chunks[c], c++)
        for (int32_t l = 0; l < L; l++) {
            for (int32_t i = 0; i < chunks[c]; i++)
                token_inputs(0, at + i, l, q + i * QW, k + i * KW, v + i * KW);
            lkv_prefill_io io = {.n_tokens = chunks[c], .k = k, .v = v, .q = q,
                                 .out = ob + ((size_t)l * N + (size_t)at) * QW,
                                 .more_chunks = c < 2};
            TU_OK(lkv_cache_prefill(b, 0, l, &io));
        }
    cr_assert(memcmp(oa, ob, sizeof *oa * L * N * QW) == 0, "%s: prompt outputs differ",
              lkv_policy_name(kind));
    expect_same_slots(a, b, 0, lkv_policy_name(kind));
    float out[L * QW];
    int32_t seq = 0;
    for (int32_t t = 0; t < 12; t++) {
        step(a, &seq, 1, 0, out);
        step(b, &seq, 1, 1, out);
        expect_same_slots(a, b, 0, lkv_policy_name(kind));
    }
    free(oa), free(ob);
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
}

Test(batch, chunked_prefill_matches_one_shot_snapkv) { chunked_matches_one_shot(LKV_POLICY_SNAPKV); }
Test(batch, chunked_prefill_matches_one_shot_nacl) { chunked_matches_one_shot(LKV_POLICY_NACL); }
Test(batch, chunked_prefill_matches_one_shot_h2o) { chunked_matches_one_shot(LKV_POLICY_H2O); }
Test(batch, chunked_prefill_matches_one_shot_lazy) { chunked_matches_one_shot(LKV_POLICY_LAZY); }

Test(batch, decode_waits_for_the_last_chunk)
{
    lkv_cache *c = make_cache(LKV_POLICY_SNAPKV, 1, 96);
    float x[4 * QW] = {0}, out[QW];
    for (int32_t l = 0; l < L; l++) {
        lkv_prefill_io io = {.n_tokens = 4, .k = x, .v = x, .q = x, .more_chunks = 1};
        TU_OK(lkv_cache_prefill(c, 0, l, &io));
    }
    lkv_decode_io io = {x, x, x, out, LKV_MEMORY_HOST};
    cr_assert_eq(lkv_cache_decode(c, 0, 0, &io), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "more_chunks"), "%s", lkv_last_error());
    lkv_cache_destroy(c);
}

/* A fork continues exactly as its source does. */
Test(batch, fork_continues_like_its_source)
{
    lkv_cache *c = make_cache(LKV_POLICY_LAZY, 3, 128), *ref = make_cache(LKV_POLICY_LAZY, 1, 128);
    prefill_one(c, 0, 20, 0, NULL);
    prefill_one(ref, 0, 20, 0, NULL);
    float o1[L * 2 * QW], o2[L * QW];
    int32_t zero = 0;
    for (int32_t t = 0; t < 13; t++) {
        step(c, &zero, 1, 1, o1);
        step(ref, &zero, 1, 1, o2);
    }
    prefill_one(c, 2, 5, 0, NULL);
    TU_OK(lkv_cache_reset_sequence(c, 2)); /* a fork's dst holds nothing */
    TU_OK(lkv_cache_fork_sequence(c, 0, 2));
    expect_same_slots(c, ref, 0, "source");
    /* both continue on the source's inputs (the same positions) */
    int32_t pair[2] = {0, 2};
    for (int32_t t = 0; t < 20; t++) {
        int32_t p0 = next_position(c, 0);
        cr_assert_eq(next_position(c, 2), p0);
        float q[2 * QW], k[2 * KW], v[2 * KW];
        for (int32_t l = 0; l < L; l++) {
            token_inputs(0, p0, l, q, k, v);
            token_inputs(0, p0, l, q + QW, k + KW, v + KW);
            lkv_decode_batch_io io = {.n_sequences = 2, .sequences = pair, .q = q, .k = k, .v = v,
                                      .out = o1};
            TU_OK(lkv_cache_decode_batch(c, l, &io));
            cr_assert(memcmp(o1, o1 + QW, sizeof *o1 * QW) == 0, "step %d layer %d", t, l);
        }
        step(ref, &zero, 1, 0, o2);
    }
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert(s.evictions > 0);
    expect_same_slots(c, ref, 0, "source after");
    int32_t n0 = 0, n2 = 0, t0 = 0, t2 = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &n0, &t0));
    TU_OK(lkv_cache_sequence_info(c, 2, &n2, &t2));
    cr_assert(n0 == n2 && t0 == t2);
    cr_assert_eq(lkv_cache_fork_sequence(c, 1, 1), LKV_INVALID_ARGUMENT);
    lkv_cache_destroy(c);
    lkv_cache_destroy(ref);
}

/* A fork into a sequence that holds anything is refused naming it, and
 * changes nothing: the caller resets dst first. */
Test(batch, fork_into_a_sequence_that_holds_anything_is_refused)
{
    lkv_cache *c = make_cache(LKV_POLICY_LAZY, 3, 128);
    prefill_one(c, 0, 20, 0, NULL);
    prefill_one(c, 2, 5, 0, NULL);
    cr_assert_eq(lkv_cache_fork_sequence(c, 0, 2), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "dst sequence 2 holds 5 slots"), "%s", lkv_last_error());
    int32_t n = 0, t = -1;
    TU_OK(lkv_cache_sequence_info(c, 2, &n, &t));
    cr_assert(n == 5 && t == 0, "a refused fork changed dst: %d slots, step %d", n, t);
    float x[4 * QW] = {0};
    lkv_prefill_io io = {.n_tokens = 4, .k = x, .v = x, .q = x};
    TU_OK(lkv_cache_prefill(c, 1, 0, &io)); /* layer 0 of L: a prompt under way */
    cr_assert_eq(lkv_cache_fork_sequence(c, 0, 1), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "dst sequence 1 is part-way through a prompt"), "%s",
              lkv_last_error());
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.slots_in_use, (int64_t)(20 * L + 5 * L + 4) * 2, "%lld slots",
                 (long long)s.slots_in_use);
    TU_OK(lkv_cache_reset_sequence(c, 2));
    TU_OK(lkv_cache_fork_sequence(c, 0, 2));
    TU_OK(lkv_cache_sequence_info(c, 2, &n, NULL));
    cr_assert_eq(n, 20);
    lkv_cache_destroy(c);
}

/* Truncate drops the newest tokens from every row; positions continue from
 * the first dropped one; past the last eviction it refuses, changing nothing. */
Test(batch, truncate_rolls_back_the_newest_tokens)
{
    lkv_cache *c = make_cache(LKV_POLICY_LAZY, 1, 128);
    prefill_one(c, 0, 10, 0, NULL);
    float out[L * QW];
    int32_t zero = 0, n = 0, t = 0;
    for (int32_t i = 0; i < 3; i++)
        step(c, &zero, 1, 1, out);
    TU_OK(lkv_cache_truncate_sequence(c, 0, 2));
    TU_OK(lkv_cache_sequence_info(c, 0, &n, &t));
    cr_assert_eq(n, 11);
    cr_assert_eq(t, 3, "the step counter keeps counting");
    cr_assert_eq(next_position(c, 0), 11);
    step(c, &zero, 1, 1, out);
    cr_assert_eq(next_position(c, 0), 12, "the next token takes the first dropped position");
    for (int32_t i = 0; i < 30; i++)
        step(c, &zero, 1, 1, out); /* evicts at 16, 24, 32 */
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert(s.evictions > 0);
    TU_OK(lkv_cache_sequence_info(c, 0, &n, &t));
    cr_assert_eq(lkv_cache_truncate_sequence(c, 0, 20), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "eviction"), "%s", lkv_last_error());
    int32_t n2 = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &n2, NULL));
    cr_assert_eq(n2, n, "a refused truncate changes nothing");
    cr_assert_eq(lkv_cache_truncate_sequence(c, 0, -1), LKV_INVALID_ARGUMENT);
    lkv_cache_destroy(c);
}

/* A batch with one bad member fails whole, naming it, and changes nothing. */
Test(batch, one_bad_member_fails_the_whole_batch)
{
    lkv_cache *c = make_cache(LKV_POLICY_LAZY, 3, 128);
    float x[3 * QW] = {0}, out[3 * QW];
    int32_t dup[3] = {0, 1, 0}, far[2] = {0, 3};
    lkv_decode_batch_io io = {.n_sequences = 3, .sequences = dup, .q = x, .k = x, .v = x,
                              .out = out};
    cr_assert_eq(lkv_cache_decode_batch(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "sequence 0 is listed twice"), "%s", lkv_last_error());
    io.n_sequences = 2, io.sequences = far;
    cr_assert_eq(lkv_cache_decode_batch(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "sequences[1]"), "%s", lkv_last_error());
    int32_t ok[2] = {2, 1};
    io.sequences = ok;
    float bad[3 * KW] = {0};
    bad[KW + 1] = NAN;
    io.k = bad;
    cr_assert_eq(lkv_cache_decode_batch(c, 0, &io), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "sequence 1"), "%s", lkv_last_error());
    for (int32_t s = 0; s < 3; s++) {
        int32_t n = -1, t = -1;
        TU_OK(lkv_cache_sequence_info(c, s, &n, &t));
        cr_assert(n == 0 && t == 0, "sequence %d untouched", s);
    }
    lkv_cache_destroy(c);
}
