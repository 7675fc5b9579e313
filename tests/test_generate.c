/* The pieces of `lazykv generate` that run without a model: the text stream
 * (tools/gen_stream.c), the sampler (tools/gen_sample.c), and the budget
 * rules it shares with `lazykv eval` (core/policy_budget.c), each against a
 * reference worked out another way: a decoder run from the start, a naive
 * argmax and nucleus, integer arithmetic, a step-by-step count of slots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "gen.h"
#include "policy_budget.h"
#include "test_util.h"

/* ---- gen_stream: UTF-8 holdback ---- */

/* Length of the longest prefix of text[0..n) that ends on a character
 * boundary, found by walking the characters from the start. */
static size_t boundary_before(const unsigned char *text, size_t n)
{
    size_t at = 0;
    while (at < n) {
        unsigned char c = text[at];
        size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (at + len > n)
            break;
        at += len;
    }
    return at;
}

Test(gen_stream, random_splits_print_exactly_the_text_and_never_half_a_character)
{
    /* 1-, 2-, 3- and 4-byte characters, some next to each other */
    const char *text = "Caf\xc3\xa9 \xe2\x82\xac" "5 \xf0\x9f\x98\x80\xf0\x9f\x8e\x89 na\xc3\xafve "
                       "\xe4\xb8\xad\xe6\x96\x87\xe2\x82\xac\xc3\xa9!\n";
    size_t n = strlen(text);
    uint64_t seed = 99;
    for (int trial = 0; trial < 200; trial++) {
        char *out = NULL;
        size_t out_len = 0;
        FILE *f = open_memstream(&out, &out_len);
        gen_stream s;
        gen_stream_init(&s, f);
        for (size_t at = 0; at < n;) {
            size_t piece = 1 + (size_t)(tu_uniform(&seed) * 6.0); /* 1..6 bytes */
            if (piece > n - at)
                piece = n - at;
            gen_stream_put(&s, text + at, piece);
            at += piece;
            size_t want = boundary_before((const unsigned char *)text, at);
            cr_assert_eq(out_len, want, "trial %d: after %zu bytes in, %zu out, expected %zu",
                         trial, at, out_len, want);
            cr_assert_eq(memcmp(out, text, out_len), 0, "trial %d", trial);
        }
        gen_stream_finish(&s);
        fclose(f);
        cr_assert_eq(out_len, n);
        cr_assert_eq(memcmp(out, text, n), 0, "trial %d: the text changed", trial);
        cr_assert_eq(s.last, '\n');
        free(out);
    }
}

Test(gen_stream, finish_writes_an_incomplete_character_as_it_is)
{
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    gen_stream s;
    gen_stream_init(&s, f);
    gen_stream_put(&s, "ab\xe2\x82", 4);
    cr_assert_eq(out_len, 2, "the euro sign's two bytes wait");
    gen_stream_finish(&s);
    fclose(f);
    cr_assert_eq(out_len, 4);
    cr_assert_eq(memcmp(out, "ab\xe2\x82", 4), 0);
    free(out);
}

/* ---- gen_sample ---- */

static int32_t naive_argmax(const float *x, int32_t n)
{
    int32_t best = n - 1;
    for (int32_t i = n - 1; i >= 0; i--)
        if (x[i] >= x[best])
            best = i;
    return best;
}

Test(gen_sample, greedy_is_the_argmax_lowest_id_on_ties)
{
    enum { V = 1000 };
    uint64_t seed = 5;
    gen_sampler s;
    cr_assert_eq(gen_sampler_init(&s, V, 0.0, 1.0, 7), 0);
    for (int trial = 0; trial < 50; trial++) {
        float *x = tu_alloc_normal(V, &seed, 3.0);
        if (trial % 2) { /* a tie at the top */
            int32_t top = naive_argmax(x, V), later = (top + 1 + trial * 13) % V;
            x[later] = x[top];
        }
        cr_assert_eq(gen_sample(&s, x), naive_argmax(x, V), "trial %d", trial);
        free(x);
    }
    gen_sampler_free(&s);
}

/* Logits whose softmax is `p` (at temperature 1). */
static void logits_of(const double *p, int n, float *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (float)log(p[i]);
}

Test(gen_sample, top_p_keeps_the_smallest_set_reaching_p)
{
    const double p[6] = {0.05, 0.4, 0.02, 0.3, 0.2, 0.03};
    float x[6];
    logits_of(p, 6, x);
    /* sorted: 0.4 (id 1), 0.3 (id 3), 0.2 (id 4), 0.05, 0.03, 0.02 */
    const struct {
        double top_p;
        int kept[6];
    } cases[] = {{0.35, {0, 1, 0, 0, 0, 0}},
                 {0.65, {0, 1, 0, 1, 0, 0}},
                 {0.75, {0, 1, 0, 1, 1, 0}},
                 {0.97, {1, 1, 0, 1, 1, 1}},
                 {1.0, {1, 1, 1, 1, 1, 1}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gen_sampler s;
        cr_assert_eq(gen_sampler_init(&s, 6, 1.0, cases[c].top_p, 3), 0);
        int seen[6] = {0};
        for (int draw = 0; draw < 4000; draw++)
            seen[gen_sample(&s, x)]++;
        for (int id = 0; id < 6; id++)
            if (cases[c].kept[id])
                cr_assert_gt(seen[id], 0, "top-p %g: id %d never drawn", cases[c].top_p, id);
            else
                cr_assert_eq(seen[id], 0, "top-p %g: id %d outside the nucleus drawn %d times",
                             cases[c].top_p, id, seen[id]);
        gen_sampler_free(&s);
    }
}

Test(gen_sample, draws_follow_the_renormalised_nucleus)
{
    const double p[4] = {0.5, 0.25, 0.15, 0.1};
    float x[4];
    logits_of(p, 4, x);
    gen_sampler s;
    cr_assert_eq(gen_sampler_init(&s, 4, 1.0, 0.7, 11), 0); /* nucleus {0, 1}: 2/3, 1/3 */
    int seen[4] = {0};
    enum { N = 30000 };
    for (int draw = 0; draw < N; draw++)
        seen[gen_sample(&s, x)]++;
    /* a fixed seed, so no flakiness; 5 standard deviations of slack */
    double share = (double)seen[0] / N, sd = sqrt((2.0 / 9.0) / N);
    cr_assert(fabs(share - 2.0 / 3.0) < 5 * sd, "id 0 drawn %.4f of the time, expected 2/3",
              share);
    gen_sampler_free(&s);
}

Test(gen_sample, a_seed_gives_the_same_draws)
{
    enum { V = 64, N = 200 };
    uint64_t seed = 21;
    float *x = tu_alloc_normal(V, &seed, 1.0);
    gen_sampler a, b, c;
    cr_assert_eq(gen_sampler_init(&a, V, 0.8, 0.9, 42), 0);
    cr_assert_eq(gen_sampler_init(&b, V, 0.8, 0.9, 42), 0);
    cr_assert_eq(gen_sampler_init(&c, V, 0.8, 0.9, 43), 0);
    int differ = 0;
    for (int i = 0; i < N; i++) {
        int32_t ta = gen_sample(&a, x), tb = gen_sample(&b, x), tc = gen_sample(&c, x);
        cr_assert_eq(ta, tb, "draw %d: %d vs %d with the same seed", i, ta, tb);
        differ += ta != tc;
    }
    cr_assert_gt(differ, 0, "another seed gave the same %d draws", N);
    gen_sampler_free(&a);
    gen_sampler_free(&b);
    gen_sampler_free(&c);
    free(x);
}

/* ---- policy_budget ---- */

Test(policy_budget, parses_percentages_and_counts)
{
    lkv_budget b;
    TU_OK(lkv_budget_parse("25%", "--budget", &b));
    cr_assert_eq(b.fraction, 0.25);
    cr_assert_eq(b.tokens, 0);
    TU_OK(lkv_budget_parse("12.5%", "--budget", &b));
    cr_assert_eq(b.fraction, 0.125);
    cr_assert_str_eq(b.label, "12.5%");
    TU_OK(lkv_budget_parse("512", "--budget", &b));
    cr_assert_eq(b.tokens, 512);
    cr_assert_eq(b.fraction, 0.0);
    const char *bad[] = {"0%", "150%", "abc", "0", "-5", "%", "1e3", "25 %", "", "10000000000%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_budget before = b;
        cr_assert_eq(lkv_budget_parse(bad[i], "--budgets entry", &b), LKV_INVALID_ARGUMENT,
                     "'%s' accepted", bad[i]);
        char named[64];
        snprintf(named, sizeof named, "--budgets entry '%s'", bad[i]);
        cr_assert(strstr(lkv_last_error(), named), "'%s': %s", bad[i], lkv_last_error());
        cr_assert_eq(memcmp(&before, &b, sizeof b), 0, "'%s' changed the budget", bad[i]);
    }
}

Test(policy_budget, a_percentage_rounds_up_within_the_length)
{
    /* against integer arithmetic: ceil(pct / 100 x length) = (pct x length + 99) / 100 */
    for (int pct = 1; pct <= 100; pct++) {
        char text[16];
        snprintf(text, sizeof text, "%d%%", pct);
        lkv_budget b;
        TU_OK(lkv_budget_parse(text, "--budget", &b));
        for (int64_t len = 1; len <= 3000; len++) {
            int64_t want = (pct * len + 99) / 100;
            cr_assert_eq(lkv_budget_slots(&b, len), want, "%d%% of %lld", pct, (long long)len);
        }
    }
    lkv_budget eighth;
    TU_OK(lkv_budget_parse("12.5%", "--budget", &eighth));
    for (int64_t len = 1; len <= 3000; len++)
        cr_assert_eq(lkv_budget_slots(&eighth, len), (125 * len + 999) / 1000, "%lld",
                     (long long)len);
    lkv_budget tiny = {.fraction = 0.001}, fixed = {.tokens = 512};
    cr_assert_eq(lkv_budget_slots(&tiny, 10), 1, "at least one slot");
    cr_assert_eq(lkv_budget_slots(&fixed, 100), 100, "never more than the sequence");
    cr_assert_eq(lkv_budget_slots(&fixed, 1000), 512);
}

Test(policy_budget, an_unset_window_is_the_default_or_half_the_budget)
{
    const struct {
        lkv_policy_kind kind;
        int32_t budget, want;
    } cases[] = {
        {LKV_POLICY_LAZY, 93, 46},   {LKV_POLICY_LAZY, 202, 101}, {LKV_POLICY_LAZY, 1000, 101},
        {LKV_POLICY_LAZY, 3, 1},     {LKV_POLICY_LAZY, 1, 1},     {LKV_POLICY_SNAPKV, 93, 32},
        {LKV_POLICY_SNAPKV, 40, 20}, {LKV_POLICY_SNAPKV, 1, 1},   {LKV_POLICY_H2O, 93, 0},
        {LKV_POLICY_STREAMING, 93, 0}, {LKV_POLICY_FULL, 93, 0},  {LKV_POLICY_NACL, 93, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(lkv_budget_default_window(cases[i].kind, cases[i].budget), cases[i].want,
                     "%s at B %d", lkv_policy_name(cases[i].kind), cases[i].budget);
}

/* The slots one cache head holds, step by step, by the rules of
 * spec/policies.md: the whole prompt at prefill (snapkv then down to B),
 * one token in per step, then each policy's eviction. */
static int64_t counted_peak(const lkv_policy_params *p, int64_t prompt, int64_t steps)
{
    int64_t n = prompt, peak = prompt, b = p->budget;
    int64_t every = p->kind == LKV_POLICY_LAZY ? p->window
                  : p->kind == LKV_POLICY_SNAPKV ? (p->interval ? p->interval : p->window)
                                                 : 1;
    int evicts = p->kind != LKV_POLICY_FULL && p->kind != LKV_POLICY_NACL;
    if (p->kind == LKV_POLICY_SNAPKV && n > b)
        n = b;
    for (int64_t t = 1; t <= steps; t++) {
        n++;
        if (n > peak)
            peak = n;
        if (evicts && every > 0 && t % every == 0 && n > b)
            n = b;
    }
    return peak;
}

/* A bound holds whatever the length, and is reached once the run is long
 * enough for the policy to swing to its full height (199 steps here). */
Test(policy_budget, peak_bounds_hold_and_long_runs_reach_them)
{
    const lkv_policy_kind kinds[] = {LKV_POLICY_FULL,   LKV_POLICY_LAZY, LKV_POLICY_STREAMING,
                                     LKV_POLICY_H2O,    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV,
                                     LKV_POLICY_NACL};
    const int64_t prompts[] = {1, 5, 40, 120}, budgets[] = {1, 8, 50, 100}, windows[] = {1, 4, 16};
    const int64_t steps[] = {0, 1, 3, 17, 199};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t bi = 0; bi < 4; bi++)
            for (size_t wi = 0; wi < 3; wi++)
                for (size_t pi = 0; pi < 4; pi++)
                    for (size_t si = 0; si < 5; si++) {
                        lkv_policy_params p;
                        TU_OK(lkv_policy_init(&p, kinds[k]));
                        p.budget = (int32_t)budgets[bi];
                        p.window = (int32_t)windows[wi];
                        int64_t got = lkv_budget_peak_bound(&p, prompts[pi], steps[si]);
                        int64_t want = counted_peak(&p, prompts[pi], steps[si]);
                        int long_run = steps[si] == 199;
                        cr_assert(long_run ? got == want : got >= want,
                                  "%s B %d W %d, P %lld + %lld steps: bound %lld, counted %lld",
                                  lkv_policy_name(kinds[k]), p.budget, p.window,
                                  (long long)prompts[pi], (long long)steps[si], (long long)got,
                                  (long long)want);
                    }
}

Test(policy_budget, snapkv_without_decode_eviction_grows_from_its_prefill)
{
    lkv_policy_params p;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_SNAPKV));
    p.budget = 50;
    p.window = 16;
    p.interval = -1;
    cr_assert_eq(lkv_budget_peak_bound(&p, 120, 30), 120, "the prompt, at prefill");
    cr_assert_eq(lkv_budget_peak_bound(&p, 120, 100), 150, "B + every step after");
    cr_assert_eq(lkv_budget_min_capacity(&p), 51);
}

Test(policy_budget, capacities_are_what_the_runtime_accepts)
{
    /* the smallest capacity for a sequence: lkv_cache_create takes it, and
     * one slot less is refused for a policy whose minimum it is */
    lkv_policy_params p;
    TU_OK(lkv_policy_init(&p, LKV_POLICY_LAZY));
    p.budget = 40;
    p.window = 20;
    cr_assert_eq(lkv_budget_min_capacity(&p), 60);
    cr_assert_eq(lkv_budget_capacity(&p, 5, 10), 60, "a short sequence still pays B + W");
    cr_assert_eq(lkv_budget_capacity(&p, 100, 300), 120);
    lkv_cache_config cfg = tu_config(1, 2, 2, 8, 60);
    cfg.policy = p;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(tu_runtime(), &cfg, &c));
    lkv_cache_destroy(c);
    cfg.capacity = 59;
    cr_assert_eq(lkv_cache_create(tu_runtime(), &cfg, &c), LKV_INVALID_ARGUMENT);
}
