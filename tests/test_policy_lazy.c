/* LazyEviction through the public API: when it evicts, what it keeps, and
 * what the memory counters say. */
#include <stdlib.h>
#include <string.h>

#include "policy_budget.h"
#include "test_util.h"

enum { B = 48, W = 16, PROMPT = 20 };

static lkv_cache *lazy_cache(int32_t layers, int32_t q_heads, int32_t kv_heads, lkv_gqa_mode gqa)
{
    lkv_cache_config cfg = tu_config(layers, q_heads, kv_heads, 16, B + W);
    cfg.gqa = gqa;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.budget = B;
    cfg.policy.window = W;
    cfg.policy.alpha = 0.02f;
    return tu_cache(&cfg);
}

static void prefill_random(lkv_cache *c, int32_t layers, int32_t kv_heads, uint64_t *rng)
{
    size_t n = (size_t)PROMPT * (size_t)kv_heads * 16;
    float *k = tu_alloc_normal(n, rng, 1.0), *v = tu_alloc_normal(n, rng, 1.0);
    for (int32_t l = 0; l < layers; l++) {
        lkv_prefill_io io = {.n_tokens = PROMPT, .k = k, .v = v};
        TU_OK(lkv_cache_prefill(c, 0, l, &io));
    }
    free(k);
    free(v);
}

Test(policy_lazy, evicts_only_every_window_steps_and_only_over_budget)
{
    uint64_t rng = 1;
    lkv_cache *c = lazy_cache(2, 4, 2, LKV_GQA_GROUPED);
    prefill_random(c, 2, 2, &rng);
    for (int32_t t = 1; t <= 10 * W; t++) {
        tu_decode_random(c, &rng);
        int32_t n, step;
        TU_OK(lkv_cache_sequence_info(c, 0, &n, &step));
        cr_assert_eq(step, t);
        int32_t grown = PROMPT + t; /* tokens seen */
        if (grown <= B) {
            cr_assert_eq(n, grown, "no eviction while under budget (t=%d)", t);
        } else if (t % W == 0) {
            cr_assert_eq(n, B, "budget held right after the eviction at t=%d", t);
        } else {
            cr_assert_gt(n, B, "between evictions the cache grows (t=%d)", t);
            cr_assert_leq(n, B + W);
        }
    }
    lkv_cache_destroy(c);
}

Test(policy_lazy, peak_is_budget_plus_window)
{
    uint64_t rng = 2;
    lkv_cache *c = lazy_cache(3, 2, 2, LKV_GQA_GROUPED);
    prefill_random(c, 3, 2, &rng);
    for (int32_t t = 1; t <= 12 * W; t++)
        tu_decode_random(c, &rng);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    int64_t rows = 3 * lkv_cache_heads(c);
    cr_assert_eq(s.peak_slots, (int64_t)(B + W) * rows, "peak %lld slots over %lld rows",
                 (long long)s.peak_slots, (long long)rows);
    cr_assert_eq(s.kv_bytes_peak, s.peak_slots * 2 * 16 * 4);
    cr_assert_gt(s.evictions, 0);
    cr_assert_eq(s.evictions % 3, 0, "every eviction event covers all 3 layers");
    lkv_cache_destroy(c);
}

Test(policy_lazy, last_window_tokens_always_survive)
{
    uint64_t rng = 3;
    lkv_cache *c = lazy_cache(1, 2, 1, LKV_GQA_GROUPED);
    prefill_random(c, 1, 1, &rng);
    for (int32_t t = 1; t <= 8 * W; t++) {
        tu_decode_random(c, &rng);
        if (t % W != 0 || PROMPT + t <= B)
            continue;
        int32_t n;
        int32_t *pos = tu_positions(c, 0, 0, 0, &n);
        int32_t newest = PROMPT + t - 1;
        for (int32_t i = 0; i < W; i++)
            cr_assert_eq(pos[n - W + i], newest - W + 1 + i, "recent token missing at t=%d", t);
        for (int32_t i = 1; i < n; i++)
            cr_assert_lt(pos[i - 1], pos[i], "slots stay in positional order");
        free(pos);
    }
    lkv_cache_destroy(c);
}

/* A slot that was never important (mri 0) scores 0 and goes before any slot
 * that recurred: a trace where only id 1 is never attended. */
Test(policy_lazy, never_important_slot_goes_first)
{
    const char *trace =
        "{\"prompt\": 3, \"heads\": 1, \"budget\": 3, \"window\": 1, \"alpha\": 0.1}\n"
        "{\"t\": 1, \"p\": [0.4, 0.0, 0.3, 0.3]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 2, 3], \"last\": [1, 1, 1], "
                          "\"mri\": [1, 1, 1]}]}\n");
    free(got);
}

/* Equal scores: the older token stays (the runtime's documented tie rule). */
Test(policy_lazy, ties_keep_the_older_token)
{
    const char *trace =
        "{\"prompt\": 4, \"heads\": 1, \"budget\": 3, \"window\": 1, \"alpha\": 0.1}\n"
        "{\"t\": 1, \"p\": [0.2, 0.2, 0.2, 0.2, 0.2]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 1, 4], \"last\": [1, 1, 1], "
                          "\"mri\": [1, 1, 1]}]}\n");
    free(got);
}

Test(policy_lazy, expanded_mode_decides_per_query_head)
{
    uint64_t rng = 4;
    lkv_cache *c = lazy_cache(1, 4, 1, LKV_GQA_EXPANDED);
    cr_assert_eq(lkv_cache_heads(c), 4);
    prefill_random(c, 1, 1, &rng);
    for (int32_t t = 1; t <= 4 * W; t++)
        tu_decode_random(c, &rng);
    int differ = 0, n0, n1;
    int32_t *p0 = tu_positions(c, 0, 0, 0, &n0);
    for (int32_t h = 1; h < 4; h++) {
        int32_t *ph = tu_positions(c, 0, 0, h, &n1);
        cr_assert_eq(n0, n1, "every head holds the budget");
        for (int32_t i = 0; i < n0; i++)
            differ |= p0[i] != ph[i];
        free(ph);
    }
    cr_assert(differ, "query heads with different attention keep different tokens");
    free(p0);
    lkv_cache_destroy(c);
}

Test(policy_lazy, reset_sequence_starts_over)
{
    uint64_t rng = 5;
    lkv_cache *c = lazy_cache(1, 2, 2, LKV_GQA_GROUPED);
    prefill_random(c, 1, 2, &rng);
    for (int32_t t = 1; t <= 3 * W; t++)
        tu_decode_random(c, &rng);
    TU_OK(lkv_cache_reset_sequence(c, 0));
    int32_t n, step;
    TU_OK(lkv_cache_sequence_info(c, 0, &n, &step));
    cr_assert_eq(n, 0);
    cr_assert_eq(step, 0);
    lkv_cache_stats s;
    TU_OK(lkv_cache_get_stats(c, &s));
    cr_assert_eq(s.slots_in_use, 0);
    prefill_random(c, 1, 2, &rng); /* a new prompt is accepted */
    lkv_cache_destroy(c);
}

/* ---- schedule = peak (lazykv's variant, not the paper's) ---- */

/* A one-layer cache, lazy at budget b and window w with the peak schedule,
 * capacity the policy's minimum for a prompt of p tokens and `steps`. */
static lkv_cache *peak_cache(int32_t b, int32_t w, int32_t p, int32_t steps)
{
    lkv_cache_config cfg = tu_config(1, 2, 2, 16, 1);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    TU_OK(lkv_policy_set(&cfg.policy, "schedule", "peak"));
    cfg.policy.budget = b;
    cfg.policy.window = w;
    cfg.policy.alpha = 0.02f;
    cfg.capacity = (int32_t)lkv_budget_capacity(&cfg.policy, p, steps);
    return tu_cache(&cfg);
}

static void prefill_n(lkv_cache *c, int32_t n, uint64_t *rng)
{
    if (n == 0)
        return;
    size_t e = (size_t)n * 2 * 16;
    float *k = tu_alloc_normal(e, rng, 1.0), *v = tu_alloc_normal(e, rng, 1.0);
    lkv_prefill_io io = {.n_tokens = n, .k = k, .v = v};
    TU_OK(lkv_cache_prefill(c, 0, 0, &io));
    free(k);
    free(v);
}

/* Decode never holds more than B once below it: evictions at the cadence
 * bring it to B - W, and the last W tokens always stay. */
Test(policy_lazy_peak, holds_at_most_budget_evicting_to_budget_minus_window)
{
    uint64_t rng = 5;
    lkv_cache *c = peak_cache(B, W, PROMPT, 10 * W);
    prefill_n(c, PROMPT, &rng);
    int evictions = 0;
    for (int32_t t = 1; t <= 10 * W; t++) {
        int32_t before, n, step;
        TU_OK(lkv_cache_sequence_info(c, 0, &before, &step));
        tu_decode_random(c, &rng);
        TU_OK(lkv_cache_sequence_info(c, 0, &n, &step));
        cr_assert_leq(n, B, "t=%d: %d slots, above the budget %d", t, n, B);
        if (n < before + 1) {
            evictions++;
            cr_assert_eq(n, B - W, "t=%d: an eviction keeps B - W", t);
            cr_assert_eq(t % W, 0, "t=%d: from a short prompt every eviction is on the cadence", t);
            int32_t *pos = tu_positions(c, 0, 0, 0, &n);
            for (int32_t i = 0; i < W; i++)
                cr_assert_eq(pos[n - W + i], PROMPT + t - W + i, "recent token missing at t=%d", t);
            free(pos);
        }
    }
    cr_assert_gt(evictions, 5);
    lkv_cache_destroy(c);
}

/* The measured peak equals lkv_budget_peak_bound's for prompts below, at
 * and above the budget (a long prompt is held whole, plus the first step's
 * token, then evicted at once off the cadence). */
Test(policy_lazy_peak, measured_peak_is_the_bound)
{
    const int32_t prompts[] = {0, 5, B - W, B - 1, B, B + 7, 3 * B};
    const int32_t steps = 6 * W + 3;
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
        uint64_t rng = 9 + i;
        lkv_cache *c = peak_cache(B, W, prompts[i], steps);
        prefill_n(c, prompts[i], &rng);
        for (int32_t t = 1; t <= steps; t++)
            tu_decode_random(c, &rng);
        lkv_cache_stats s;
        TU_OK(lkv_cache_get_stats(c, &s));
        lkv_policy_params p;
        TU_OK(lkv_policy_init(&p, LKV_POLICY_LAZY));
        p.budget = B, p.window = W, p.schedule = LKV_LAZY_PEAK;
        int64_t bound = lkv_budget_peak_bound(&p, prompts[i], steps);
        cr_assert_eq(s.peak_slots / lkv_cache_heads(c), bound, "prompt %d: peak %lld, bound %lld",
                     prompts[i], (long long)(s.peak_slots / lkv_cache_heads(c)),
                     (long long)bound);
        int32_t n, step;
        TU_OK(lkv_cache_sequence_info(c, 0, &n, &step));
        cr_assert_leq(n, B, "prompt %d: %d slots at the end", prompts[i], n);
        lkv_cache_destroy(c);
    }
}

Test(policy_lazy_peak, a_budget_below_twice_the_window_and_bad_schedules_are_refused)
{
    lkv_cache_config cfg = tu_config(1, 2, 2, 16, 64);
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.budget = 31;
    cfg.policy.window = 16;
    cfg.policy.schedule = LKV_LAZY_PEAK;
    lkv_cache *c = NULL;
    cr_assert_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "budget 31") && strstr(lkv_last_error(), "window 16"),
              "%s", lkv_last_error());
    cr_assert_null(c);
    cfg.policy.schedule = (lkv_lazy_schedule)7;
    cr_assert_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "schedule 7"), "%s", lkv_last_error());
    lkv_policy_params p = cfg.policy;
    cr_assert_eq(lkv_policy_set(&p, "schedule", "eager"), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'eager'"), "%s", lkv_last_error());
    cr_assert_eq(p.schedule, (lkv_lazy_schedule)7, "a refused set changes nothing");
    TU_OK(lkv_policy_set(&p, "schedule", "faithful"));
    cr_assert_eq(p.schedule, LKV_LAZY_FAITHFUL);
    TU_OK(lkv_policy_init(&p, LKV_POLICY_H2O));
    cr_assert_eq(lkv_policy_set(&p, "schedule", "peak"), LKV_INVALID_ARGUMENT,
                 "h2o has no schedule");
}

/* A trace header names the schedule like any parameter; the replay then
 * evicts to B - W: budget 4, window 2. Step 1 leaves 4 slots (pressure:
 * evicted at once, off the cadence, to the last two), step 2 three (the
 * cadence: down to two again). */
Test(policy_lazy_peak, a_trace_header_sets_the_schedule)
{
    const char *trace =
        "{\"prompt\": 3, \"heads\": 1, \"budget\": 4, \"window\": 2, \"alpha\": 0.1, "
        "\"schedule\": \"peak\"}\n"
        "{\"t\": 1, \"p\": [0.4, 0.0, 0.3, 0.3]}\n"
        "{\"t\": 2, \"p\": [0.2, 0.0, 0.3, 0.3, 0.2]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert(strstr(got, "{\"t\": 1, \"heads\": [{\"ids\": [2, 3],"), "%s", got);
    cr_assert(strstr(got, "{\"t\": 2, \"heads\": [{\"ids\": [3, 4],"), "%s", got);
    free(got);
}

/* The public sizing call: for the faithful and the peak schedule, a cache
 * created with the capacity it gives runs the whole sequence, and its
 * measured peak is the peak it promised (prompts below, at and above B). */
Test(policy_peak_slots, the_public_sizes_hold_and_are_met)
{
    const int32_t prompts[] = {5, B, 3 * B};
    const int32_t steps = 4 * W + 5;
    for (int sched = 0; sched < 2; sched++) {
        for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
            lkv_cache_config cfg = tu_config(1, 2, 2, 16, 1);
            TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
            cfg.policy.budget = B, cfg.policy.window = W, cfg.policy.alpha = 0.02f;
            cfg.policy.schedule = (lkv_lazy_schedule)sched;
            int64_t peak = 0, cap = 0;
            TU_OK(lkv_policy_peak_slots(&cfg.policy, prompts[i], steps, &peak, &cap));
            cr_assert_geq(cap, peak);
            cfg.capacity = (int32_t)cap;
            lkv_cache *c = tu_cache(&cfg);
            uint64_t rng = 40 + i;
            prefill_n(c, prompts[i], &rng);
            for (int32_t t = 1; t <= steps; t++)
                tu_decode_random(c, &rng);
            lkv_cache_stats s;
            TU_OK(lkv_cache_get_stats(c, &s));
            cr_assert_eq(s.peak_slots / lkv_cache_heads(c), peak,
                         "schedule %d prompt %d: peak %lld, promised %lld", sched, prompts[i],
                         (long long)(s.peak_slots / lkv_cache_heads(c)), (long long)peak);
            lkv_cache_destroy(c);
        }
    }
}

Test(policy_peak_slots, bad_input_is_refused_by_name)
{
    lkv_policy_params p;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_H2O));
    int64_t peak = -7;
    cr_assert_eq(lkv_policy_peak_slots(&p, 10, 5, &peak, NULL), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "budget 0"), "%s", lkv_last_error());
    p.budget = 8;
    cr_assert_eq(lkv_policy_peak_slots(&p, 0, 5, &peak, NULL), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt_tokens 0"), "%s", lkv_last_error());
    cr_assert_eq(lkv_policy_peak_slots(&p, 10, -1, &peak, NULL), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "steps -1"), "%s", lkv_last_error());
    cr_assert_eq(peak, -7, "a failed call wrote its output");
    TU_OK(lkv_policy_peak_slots(&p, 10, 5, &peak, NULL));
    cr_assert_eq(peak, 11, "h2o: max(P, B) + 1");
    TU_OK(lkv_policy_init(&p, LKV_POLICY_LAZY));
    p.budget = 8, p.window = 0;
    cr_assert_eq(lkv_policy_peak_slots(&p, 10, 5, NULL, NULL), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "window 0"), "%s", lkv_last_error());
}
