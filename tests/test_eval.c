/* `lazykv eval`'s library: the measures against values worked out by hand,
 * the option parsers with their messages, and whole runs on stories260K
 * (skipped where the shared model is absent): the full cache must match the
 * reference exactly, every policy must keep within the bound it promises,
 * and a run must repeat bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "eval_lanes.h"
#include "json.h"
#include "model.h"
#include "pool.h"
#include "test_util.h"

/* ---- KL, top-1, NLL ---- */

Test(eval_metrics, kl_of_two_known_distributions)
{
    /* p = softmax(0, ln 2) = (1/3, 2/3), q = uniform (1/2, 1/2):
     * KL = 1/3 ln(2/3) + 2/3 ln(4/3) */
    float p[2] = {0.0f, (float)log(2.0)}, q[2] = {0.0f, 0.0f};
    double want = (1.0 / 3.0) * log(2.0 / 3.0) + (2.0 / 3.0) * log(4.0 / 3.0);
    /* ln 2 rounded to float moves p by ~1e-8 */
    double got = lkv_eval_kl(p, lkv_eval_logsumexp(p, 2), NULL, q, lkv_eval_logsumexp(q, 2), 2);
    cr_assert_float_eq(got, want, 1e-7, "KL %.12g, expected %.12g", got, want);
}

Test(eval_metrics, kl_counts_a_near_zero_probability_in_double)
{
    /* p = softmax(0, -30): p2 = e^-30 / (1 + e^-30) ~ 9.4e-14. Against the
     * uniform q the rare side costs almost nothing, KL(p||q) = ln 2 +
     * p1 ln p1 + p2 ln p2; the other way round it dominates: KL(q||p) =
     * 15 - ln 2 + ln(1 + e^-30). */
    float p[2] = {0.0f, -30.0f}, q[2] = {0.0f, 0.0f};
    double p2 = exp(-30.0) / (1.0 + exp(-30.0)), p1 = 1.0 / (1.0 + exp(-30.0));
    double lp = lkv_eval_logsumexp(p, 2), lq = lkv_eval_logsumexp(q, 2);
    double forward = log(2.0) + p1 * log(p1) + p2 * log(p2);
    double backward = 15.0 - log(2.0) + log1p(exp(-30.0));
    cr_assert_float_eq(lkv_eval_kl(p, lp, NULL, q, lq, 2), forward, 1e-13);
    cr_assert_float_eq(lkv_eval_kl(q, lq, NULL, p, lp, 2), backward, 1e-12);
}

Test(eval_metrics, identical_logits_give_exactly_zero)
{
    uint64_t seed = 7;
    enum { N = 5000 };
    float *x = tu_alloc_normal(N, &seed, 4.0);
    float *y = malloc(sizeof *y * N);
    memcpy(y, x, sizeof *y * N);
    double lse = lkv_eval_logsumexp(x, N);
    double *probs = malloc(sizeof *probs * N);
    for (int i = 0; i < N; i++)
        probs[i] = exp((double)x[i] - lse);
    cr_assert_eq(lkv_eval_kl(x, lse, NULL, y, lkv_eval_logsumexp(y, N), N), 0.0);
    cr_assert_eq(lkv_eval_kl(x, lse, probs, y, lkv_eval_logsumexp(y, N), N), 0.0);
    free(x);
    free(y);
    free(probs);
}

Test(eval_metrics, logsumexp_does_not_overflow)
{
    float x[3] = {1000.0f, 1000.0f, -1000.0f};
    cr_assert_float_eq(lkv_eval_logsumexp(x, 3), 1000.0 + log(2.0), 1e-12);
}

Test(eval_metrics, argmax_takes_the_lowest_index_among_equals)
{
    float x[5] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
    cr_assert_eq(lkv_eval_argmax(x, 5), 1);
    float y[3] = {-1.0f, -5.0f, -0.5f};
    cr_assert_eq(lkv_eval_argmax(y, 3), 2);
}

Test(eval_metrics, nll_is_minus_log_of_the_probability)
{
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    cr_assert_float_eq(lkv_eval_nll(x, lkv_eval_logsumexp(x, 4), 2), log(4.0), 1e-15);
    float y[2] = {0.0f, (float)log(3.0)}; /* (1/4, 3/4) */
    cr_assert_float_eq(lkv_eval_nll(y, lkv_eval_logsumexp(y, 2), 1), -log(0.75), 1e-7);
}

Test(eval_metrics, common_prefix_stops_at_the_first_difference)
{
    int32_t a[5] = {4, 8, 15, 16, 23}, b[4] = {4, 8, 16, 16};
    cr_assert_eq(lkv_eval_common_prefix(a, 5, b, 4), 2);
    cr_assert_eq(lkv_eval_common_prefix(a, 2, a, 5), 2);
    cr_assert_eq(lkv_eval_common_prefix(a, 0, b, 4), 0);
}

/* ---- answers ---- */

static void expect_answer(const char *text, const char *want)
{
    char got[LKV_EVAL_ANSWER_LEN];
    int found = lkv_eval_last_number(text, got, sizeof got);
    cr_expect_str_eq(got, want, "last number of \"%s\": \"%s\", expected \"%s\"", text, got, want);
    cr_expect_eq(found, want[0] != '\0', "\"%s\": found %d", text, found);
}

Test(eval_answer, the_last_number_of_varied_text)
{
    expect_answer("The answer is 1,234.", "1234");
    expect_answer("She makes $18", "18");
    expect_answer("-3.5", "-3.5");
    expect_answer("It costs $18.00 in all.", "18");
    expect_answer("2.50 + 0.50 = 3.0", "3");
    expect_answer("Step 1: 16 - 3 - 4 = 9\nStep 2: 9 * 2 = 18\nFinal answer: 18\n", "18");
    expect_answer("between 5-3 and so 2 apples", "2");
    expect_answer("7 items, 3, 4", "4");
    expect_answer("x = -12", "-12");
    expect_answer("1,000,000 people", "1000000");
}

Test(eval_answer, text_without_a_number_has_no_answer)
{
    expect_answer("no number here.", "");
    expect_answer("", "");
}

Test(eval_answer, the_dataset_answer_follows_the_last_marker)
{
    char got[LKV_EVAL_ANSWER_LEN];
    cr_assert_eq(lkv_eval_dataset_answer("9 * 2 = <<9*2=18>>18 dollars.\n#### 18", got,
                                         sizeof got), 1);
    cr_assert_str_eq(got, "18");
    cr_assert_eq(lkv_eval_dataset_answer("#### 5\nthen #### 1,250", got, sizeof got), 1);
    cr_assert_str_eq(got, "1250");
    cr_assert_eq(lkv_eval_dataset_answer("18 without a marker", got, sizeof got), 0);
    cr_assert_str_eq(got, "");
}

/* ---- options ---- */

Test(eval_settings, budgets_parse_percentages_and_counts)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_budgets("25%,12.5%,512", &s));
    cr_assert_eq(s.n_budgets, 3);
    cr_assert_float_eq(s.budgets[0].fraction, 0.25, 1e-15);
    cr_assert_float_eq(s.budgets[1].fraction, 0.125, 1e-15);
    cr_assert_eq(s.budgets[2].tokens, 512);
    cr_assert_str_eq(s.budgets[1].label, "12.5%");
}

static void expect_bad_budgets(const char *list, const char *named)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    lkv_status st = lkv_eval_parse_budgets(list, &s);
    cr_expect_eq(st, LKV_INVALID_ARGUMENT, "'%s' accepted", list);
    cr_expect(strstr(lkv_last_error(), named) != NULL, "'%s': message \"%s\" does not name %s",
              list, lkv_last_error(), named);
    cr_expect_eq(s.n_budgets, 2, "'%s' changed the settings on failure", list);
}

Test(eval_settings, bad_budgets_are_refused_by_name)
{
    expect_bad_budgets("0%", "'0%'");
    expect_bad_budgets("150%", "'150%'");
    expect_bad_budgets("abc", "'abc'");
    expect_bad_budgets("0", "'0'");
    expect_bad_budgets("25%,-5", "'-5'");
    expect_bad_budgets("25%,,50%", "empty");
    expect_bad_budgets("", "empty");
    expect_bad_budgets("25%,25%", "twice");
    expect_bad_budgets("%", "'%'");
}

Test(eval_settings, policies_and_gqa_parse_and_refuse_by_name)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    cr_assert_eq(s.n_policies, 6);
    TU_OK(lkv_eval_parse_policies("full,h2o", &s));
    cr_assert_eq(s.n_policies, 2);
    cr_assert_eq(s.policies[1], LKV_POLICY_H2O);
    cr_assert_eq(lkv_eval_parse_policies("lazy,fifo", &s), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'fifo'"), "%s", lkv_last_error());
    cr_assert_eq(s.n_policies, 2);
    cr_assert_eq(lkv_eval_parse_policies("lazy,lazy", &s), LKV_INVALID_ARGUMENT);
    TU_OK(lkv_eval_parse_gqa("both", &s));
    cr_assert_eq(s.n_gqa, 2);
    cr_assert_eq(lkv_eval_parse_gqa("shared", &s), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'shared'"), "%s", lkv_last_error());
}

Test(eval_prompts, ids_split_on_semicolons_and_commas)
{
    lkv_eval_prompts p;
    TU_OK(lkv_eval_prompts_from_ids("1,34,7; 1, 99", &p));
    cr_assert_eq(p.count, 2);
    cr_assert_eq(p.items[0].n_ids, 3);
    cr_assert_eq(p.items[0].ids[2], 7);
    cr_assert_eq(p.items[1].n_ids, 2);
    cr_assert_eq(p.items[1].ids[1], 99);
    TU_OK(lkv_eval_prompts_check(&p, 100));
    cr_assert_eq(lkv_eval_prompts_check(&p, 99), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt 2, token 2: id 99"), "%s", lkv_last_error());
    lkv_eval_prompts_free(&p);
    cr_assert_eq(lkv_eval_prompts_from_ids("1,x,3", &p), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt 1, id 2: 'x'"), "%s", lkv_last_error());
    cr_assert_eq(lkv_eval_prompts_from_ids("1,2;", &p), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt 2 is empty"), "%s", lkv_last_error());
    cr_assert_eq(lkv_eval_prompts_from_ids("1,-2", &p), LKV_INVALID_ARGUMENT);
}

Test(eval_prompts, a_prompt_without_room_for_max_tokens_is_named)
{
    lkv_eval_prompts p;
    TU_OK(lkv_eval_prompts_from_ids("1,2,3;1,2,3,4,5", &p));
    TU_OK(lkv_eval_prompts_fit(&p, 9, 14));
    cr_assert_eq(lkv_eval_prompts_fit(&p, 10, 14), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt 2: 5 prompt tokens + --max-tokens 10 = 15 exceeds "
                                       "the model's context of 14 tokens"),
              "%s", lkv_last_error());
    cr_assert_eq(lkv_eval_prompts_fit(&p, 1, 5), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "prompt 2: 5 prompt tokens leave no room"), "%s",
              lkv_last_error());
    lkv_eval_prompts_free(&p);
}

Test(eval_prompts, jsonl_needs_a_tokenizer)
{
    lkv_eval_prompts p;
    cr_assert_eq(lkv_eval_prompts_from_jsonl("{\"question\": \"1+1?\"}\n", 0, 1, NULL, "", &p),
                 LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "--prompt-ids"), "%s", lkv_last_error());
}

Test(eval_prompts, jsonl_records_go_through_the_chat_template)
{
    const char *path = getenv("LAZYKV_TEST_MODEL");
    if (!path || !*path)
        cr_skip_test("LAZYKV_TEST_MODEL is not set (scripts/fetch-model.sh prints the path)");
    lkv_model *m = NULL;
    lkv_tokenizer *tok = NULL;
    TU_OK(lkv_model_load(path, &m));
    TU_OK(lkv_tokenizer_from_gguf(m->gguf, &tok));
    const char *jsonl =
        "\n{\"question\": \"Skip me.\", \"answer\": \"#### 1\"}\n"
        "{\"question\": \"Ducks lay 16 eggs.\", \"answer\": \"16 - 3 = 13\\n#### 1,300\"}\n"
        "{\"question\": \"No answer here.\"}\n";
    lkv_eval_prompts p;
    TU_OK(lkv_eval_prompts_from_jsonl(jsonl, 1, 5, tok, "Answer with a number.", &p));
    cr_assert_eq(p.count, 2, "records 2 and 3 (the blank line is no record)");
    cr_assert_str_eq(p.items[0].question, "Ducks lay 16 eggs.");
    cr_assert_str_eq(p.items[0].answer, "1300");
    cr_assert_str_eq(p.items[1].answer, "");
    /* the same text rendered and encoded by hand */
    char *text = NULL;
    int32_t *ids = NULL, n = 0;
    TU_OK(lkv_chat_render(tok, NULL, "Ducks lay 16 eggs.\nAnswer with a number.", &text));
    TU_OK(lkv_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n));
    cr_assert_eq(p.items[0].n_ids, n);
    cr_assert_eq(memcmp(p.items[0].ids, ids, sizeof *ids * (size_t)n), 0);
    cr_assert(strstr(text, "<|im_start|>user\nDucks lay 16 eggs.\nAnswer with a number."), "%s",
              text);
    free(text);
    free(ids);
    lkv_eval_prompts_free(&p);
    cr_assert_eq(lkv_eval_prompts_from_jsonl("{\"q\": 1}\n", 0, 1, tok, "", &p),
                 LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "--prompts line 1: no \"question\" string"), "%s",
              lkv_last_error());
    cr_assert_eq(lkv_eval_prompts_from_jsonl("{\"question\": \"a\"}\n", 1, 1, tok, "", &p),
                 LKV_INVALID_ARGUMENT);
    lkv_tokenizer_free(tok);
    lkv_model_free(m);
}

/* ---- lanes ---- */

Test(eval_lanes, one_lane_per_policy_gqa_and_budget_after_the_reference)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_policies("full,lazy,nacl", &s));
    TU_OK(lkv_eval_parse_budgets("25%,64", &s));
    TU_OK(lkv_eval_parse_gqa("both", &s));
    lkv_eval_lane_spec *l = NULL;
    int n = 0;
    TU_OK(lkv_eval_lane_specs(&s, &l, &n));
    cr_assert_eq(n, 1 + 2 + 2 * 2 * 2);
    cr_assert(l[0].reference);
    cr_assert_str_eq(l[1].name, "full grouped");
    cr_assert_str_eq(l[2].name, "full expanded");
    cr_assert_str_eq(l[3].name, "lazy grouped 25%");
    cr_assert_str_eq(l[6].name, "lazy expanded 64");
    cr_assert_eq(l[10].policy, LKV_POLICY_NACL);
    free(l);
}

/* A model-shaped stand-in for the plans: 8 query heads on 2 KV heads. */
static lkv_model toy_model(void)
{
    lkv_model m;
    memset(&m, 0, sizeof m);
    m.cfg = (lkv_model_config){.layers = 2, .dim = 64, .ffn_dim = 128, .q_heads = 8,
                               .kv_heads = 2, .head_dim = 8, .vocab = 32, .context = 512,
                               .rope_theta = 10000.0f, .norm_eps = 1e-5f};
    return m;
}

Test(eval_lanes, expanded_gqa_gets_an_equal_memory_share)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    lkv_eval_lane_spec spec = {.policy = LKV_POLICY_H2O, .gqa = LKV_GQA_EXPANDED, .budget = 1};
    lkv_eval_lane_plan plan;
    /* T = 100 + 300, 50% -> 200 slots grouped, 200 * 2 / 8 = 50 per expanded head */
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 100, 300, &plan));
    cr_assert_eq(plan.budget, 50);
    cr_assert_eq(plan.cfg.policy.budget, 50);
    cr_assert_eq(plan.bound, 101, "max(P, B) + 1 with the prompt above the budget");
}

Test(eval_lanes, nacl_shares_scale_to_the_budget)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    lkv_eval_lane_spec spec = {.policy = LKV_POLICY_NACL, .gqa = LKV_GQA_GROUPED, .budget = 0};
    lkv_eval_lane_plan plan;
    /* T = 400 + 400, 25% -> B = 200 of a 400-token prompt: half of it */
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 400, 400, &plan));
    const lkv_policy_params *p = &plan.cfg.policy;
    cr_assert_eq(plan.budget, 200);
    cr_assert_eq(plan.bound_kind, LKV_EVAL_BOUND_PREFILL);
    double share = (double)p->proxy_keep_ratio + p->random_keep_ratio + p->protect_ratio;
    cr_assert_float_eq(share, 0.5, 1e-6);
    cr_assert_float_eq(p->proxy_keep_ratio / p->random_keep_ratio, 12.0 / 7.0, 1e-5);
    cr_assert_eq(p->min_length, 1);
}

Test(eval_lanes, lazy_bound_is_the_budget_plus_the_window)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    s.window = 16;
    lkv_eval_lane_spec spec = {.policy = LKV_POLICY_LAZY, .gqa = LKV_GQA_GROUPED, .budget = 0};
    lkv_eval_lane_plan plan;
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 20, 180, &plan));
    cr_assert_eq(plan.budget, 50);
    cr_assert_eq(plan.bound, 66);
    cr_assert_eq(plan.cfg.policy.window, 16);
    cr_assert(plan.cfg.capacity >= 200);
}

Test(eval_lanes, an_unset_window_is_at_most_half_the_budget)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    lkv_eval_lane_plan plan;
    /* T = 40 + 332 = 372, 25% -> B = 93: lazy's 101 and snapkv's 32 against 46 */
    lkv_eval_lane_spec lazy = {.policy = LKV_POLICY_LAZY, .gqa = LKV_GQA_GROUPED, .budget = 0};
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &lazy, 40, 332, &plan));
    cr_assert_eq(plan.budget, 93);
    cr_assert_eq(plan.cfg.policy.window, 46);
    cr_assert_eq(plan.bound, 93 + 46);
    lkv_eval_lane_spec snapkv = {.policy = LKV_POLICY_SNAPKV, .gqa = LKV_GQA_GROUPED, .budget = 0};
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &snapkv, 40, 332, &plan));
    cr_assert_eq(plan.cfg.policy.window, 32);
    /* expanded: 93 * 2 / 8 = 23 slots per head, so W = 11 */
    lazy.gqa = LKV_GQA_EXPANDED;
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &lazy, 40, 332, &plan));
    cr_assert_eq(plan.budget, 23);
    cr_assert_eq(plan.cfg.policy.window, 11);
    s.window = 16; /* given: every lazy lane takes it */
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &lazy, 40, 332, &plan));
    cr_assert_eq(plan.cfg.policy.window, 16);
}

/* ---- whole runs on stories260K ---- */

/* Two prompts: five seed ids, and 120 ids of a fixed pseudo-random walk, long
 * enough that nacl and snapkv evict at prefill. */
static void stories_prompts(lkv_eval_prompts *out)
{
    char ids[2048] = "1,403,407,261,378;1";
    uint64_t x = 12345;
    for (int i = 1; i < 120; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = strlen(ids);
        snprintf(ids + n, sizeof ids - n, ",%d", (int)((x >> 33) % 500) + 3);
    }
    TU_OK(lkv_eval_prompts_from_ids(ids, out));
}

/* Every policy at 25%, 50% and 80 slots, lazy with W = 16, 200 tokens; the
 * lists given replace the defaults (NULL keeps one). */
static lkv_eval_settings stories_settings(const char *policies, const char *budgets,
                                          const char *gqa)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_policies(policies ? policies
                                           : "full,lazy,streaming,h2o,tova,snapkv,nacl", &s));
    TU_OK(lkv_eval_parse_budgets(budgets ? budgets : "25%,50%,80", &s));
    if (gqa)
        TU_OK(lkv_eval_parse_gqa(gqa, &s));
    s.max_tokens = 200;
    s.window = 16;
    return s;
}

/* Runs `s` on the two prompts; skips the test where stories260K is absent. */
static void stories_run(const lkv_eval_settings *s, lkv_eval_results *r)
{
    const char *path = tu_shared_path("models/stories260K/stories260K.bin");
    FILE *f = fopen(path, "rb");
    if (!f)
        cr_skip_test("no stories260K under LKV_SHARED_DIR (%s)", path);
    fclose(f);
    lkv_model *model = NULL;
    lkv_pool *pool = NULL;
    lkv_eval_prompts prompts;
    TU_OK(lkv_model_load(path, &model));
    TU_OK(lkv_pool_create(2, &pool));
    stories_prompts(&prompts);
    lkv_eval_env env = {model, NULL, tu_runtime(), pool, NULL, NULL};
    TU_OK(lkv_eval_run(&env, s, &prompts, r));
    lkv_eval_prompts_free(&prompts);
    lkv_pool_free(pool);
    lkv_model_free(model);
}

/* lkv_eval_check passes; then the results are freed. */
static void expect_check_and_free(lkv_eval_results *r)
{
    char why[512];
    cr_assert(lkv_eval_check(r, why, sizeof why), "%s", why);
    lkv_eval_results_free(r);
}

Test(eval_stories, full_cache_matches_the_reference_exactly, .timeout = 900)
{
    lkv_eval_settings s = stories_settings(NULL, NULL, NULL);
    lkv_eval_results r;
    stories_run(&s, &r);
    cr_assert_eq(r.n_prompts, 2);
    for (int i = 0; i < r.n_prompts; i++)
        cr_assert_eq(r.prompts[i].generated, 200, "id-only models stop only at max-tokens");
    for (int k = 0; k < 2; k++) { /* the reference and the "full" policy lane */
        lkv_eval_summary sum;
        lkv_eval_summarize(&r, k, &sum);
        cr_assert_eq(r.lanes[k].policy, LKV_POLICY_FULL);
        cr_assert_eq(sum.positions, 400);
        cr_assert_eq(sum.kl_mean, 0.0, "%s: KL %g", r.lanes[k].name, sum.kl_mean);
        cr_assert_eq(sum.top1, 1.0);
        cr_assert_eq(sum.ref_top1, 1.0, "%s: argmax departs from R", r.lanes[k].name);
        cr_assert_eq(sum.ppl_ratio, 1.0);
        cr_assert_eq(sum.prefix_share, 1.0, "%s regenerates R", r.lanes[k].name);
        cr_assert_eq(sum.answer_match, 1.0);
    }
    expect_check_and_free(&r);
}

Test(eval_stories, every_policy_evicts_and_keeps_within_its_bound, .timeout = 900)
{
    lkv_eval_settings s = stories_settings(NULL, NULL, NULL);
    lkv_eval_results r;
    stories_run(&s, &r);
    for (int k = 1; k < r.n_lanes; k++) {
        const lkv_eval_lane_spec *spec = &r.lanes[k];
        int64_t evicted = 0;
        int must_evict = spec->policy != LKV_POLICY_FULL && spec->policy != LKV_POLICY_NACL;
        for (int i = 0; i < r.n_prompts; i++) {
            const lkv_eval_prompt_result *p = &r.prompts[i];
            const lkv_eval_lane_result *l = &p->lanes[k];
            cr_assert_eq(l->status, LKV_OK, "%s skipped: %s", spec->name, l->error);
            cr_assert(l->within_bound, "prompt %d %s: peak %d, prefill kept %d, bound %d", i + 1,
                      spec->name, l->peak, l->prefill_kept, l->bound);
            cr_assert(l->peak <= p->total - 1, "%s: peak %d above the sequence", spec->name,
                      l->peak);
            if (spec->policy != LKV_POLICY_FULL)
                cr_assert(l->budget < p->total, "%s: budget %d not below T %d", spec->name,
                          l->budget, p->total);
            evicted += l->tokens_evicted;
            /* nacl acts at prefill only: on a prompt longer than its budget */
            if (spec->policy == LKV_POLICY_NACL && l->budget < p->prompt_tokens)
                must_evict = 1;
        }
        if (must_evict)
            cr_assert_gt(evicted, 0, "%s never evicted", spec->name);
        else if (spec->policy == LKV_POLICY_FULL)
            cr_assert_eq(evicted, 0, "%s evicted", spec->name);
    }
    lkv_eval_results_free(&r);
}

Test(eval_stories, peaks_are_those_the_policies_promise, .timeout = 900)
{
    lkv_eval_settings s = stories_settings(NULL, NULL, NULL);
    lkv_eval_results r;
    stories_run(&s, &r);
    /* prompt 1: P = 5, G = 200, T = 205; 25% -> B = 52 */
    const lkv_eval_prompt_result *p = &r.prompts[0];
    cr_assert_eq(p->total, 205);
    for (int k = 0; k < r.n_lanes; k++) {
        const lkv_eval_lane_spec *spec = &r.lanes[k];
        const lkv_eval_lane_result *l = &p->lanes[k];
        if (spec->policy == LKV_POLICY_FULL) {
            cr_assert_eq(l->peak, 204, "%s holds P + G - 1", spec->name);
            continue;
        }
        if (spec->budget != 0)
            continue;
        cr_assert_eq(l->budget, 52, "%s", spec->name);
        /* lazy's W is given (16); snapkv's is min(32, 52 / 2) */
        int32_t want = spec->policy == LKV_POLICY_LAZY     ? 52 + 16
                     : spec->policy == LKV_POLICY_SNAPKV   ? 52 + 26
                     : spec->policy == LKV_POLICY_NACL     ? 204 /* never evicts a 5-token prompt */
                                                           : 53;
        cr_assert_eq(l->peak, want, "%s: peak %d, expected %d", spec->name, l->peak, want);
    }
    lkv_eval_results_free(&r);
}

static void expect_same_lane(const lkv_eval_lane_result *a, const lkv_eval_lane_result *b,
                             const char *name)
{
    cr_assert_eq(a->kl_sum, b->kl_sum, "%s", name);
    cr_assert_eq(a->nll_sum, b->nll_sum, "%s", name);
    cr_assert_eq(a->top1, b->top1, "%s", name);
    cr_assert_eq(a->peak, b->peak, "%s", name);
    cr_assert_eq(a->tokens_evicted, b->tokens_evicted, "%s", name);
    cr_assert_eq(a->generated, b->generated, "%s", name);
    cr_assert_eq(memcmp(a->tokens, b->tokens, sizeof *a->tokens * (size_t)a->generated), 0, "%s",
                 name);
}

Test(eval_stories, a_run_repeats_bit_for_bit, .timeout = 900)
{
    lkv_eval_settings s = stories_settings(NULL, NULL, NULL);
    lkv_eval_results a, b;
    stories_run(&s, &a);
    stories_run(&s, &b);
    cr_assert_eq(a.n_lanes, b.n_lanes);
    for (int i = 0; i < a.n_prompts; i++) {
        cr_assert_eq(memcmp(a.prompts[i].reference, b.prompts[i].reference,
                            sizeof(int32_t) * (size_t)a.prompts[i].generated), 0);
        for (int k = 0; k < a.n_lanes; k++)
            expect_same_lane(&a.prompts[i].lanes[k], &b.prompts[i].lanes[k], a.lanes[k].name);
    }
    lkv_eval_results_free(&a);
    lkv_eval_results_free(&b);
}

Test(eval_stories, evicting_lanes_drift_from_the_full_cache, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("streaming", "10%", NULL);
    lkv_eval_results r;
    stories_run(&s, &r);
    lkv_eval_summary sum;
    lkv_eval_summarize(&r, 1, &sum);
    /* 21 of 205 slots: the model cannot behave as with all of them */
    cr_assert_gt(sum.kl_mean, 0.0);
    cr_assert_lt(sum.top1, 1.0);
    cr_assert(isfinite(sum.ppl_ratio) && sum.ppl_ratio > 0.0);
    lkv_eval_results_free(&r);
}

Test(eval_stories, expanded_gqa_runs_at_its_equal_memory_share, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("full,h2o", "50%", "both");
    lkv_eval_results r;
    stories_run(&s, &r);
    /* lanes: reference, full grouped, full expanded, h2o grouped, h2o expanded */
    cr_assert_eq(r.n_lanes, 5);
    const lkv_eval_prompt_result *p = &r.prompts[0];
    cr_assert_eq(p->lanes[3].budget, 103);
    cr_assert_eq(p->lanes[4].budget, 103 * 4 / 8);
    cr_assert_eq(p->lanes[4].cache_heads, 8);
    expect_check_and_free(&r);
}

/* The memory share against the cache's own byte count: stories260K keeps
 * 5 layers x 4 KV heads x (K and V) x head_dim 8 in f16 per full slot. */
Test(eval_stories, peak_memory_is_the_bytes_held_over_the_full_cache, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("full,lazy,h2o", "50%", "both");
    lkv_eval_results r;
    stories_run(&s, &r);
    const lkv_model_config *m = &r.shape;
    for (int i = 0; i < r.n_prompts; i++) {
        const lkv_eval_prompt_result *p = &r.prompts[i];
        double full = (double)p->total * m->layers * m->kv_heads * 2 * m->head_dim * 2;
        for (int k = 0; k < r.n_lanes; k++) {
            double got = lkv_eval_memory_share(&r, p, &p->lanes[k]);
            double want = (double)p->lanes[k].kv_bytes_peak / full;
            cr_assert_float_eq(got, want, 1e-12, "prompt %d %s: %g, bytes say %g", i + 1,
                               r.lanes[k].name, got, want);
        }
    }
    /* expanded h2o gets the grouped budget's memory in B, but holds one new
     * token in each of twice the cache heads */
    lkv_eval_summary grouped, expanded;
    lkv_eval_summarize(&r, 5, &grouped);
    lkv_eval_summarize(&r, 6, &expanded);
    cr_assert_str_eq(r.lanes[6].name, "h2o expanded 50%");
    cr_assert_gt(expanded.memory_mean, grouped.memory_mean);
    expect_check_and_free(&r);
}

Test(eval_stories, default_windows_fit_every_budget, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("lazy,snapkv", "10%,25%", "both");
    s.window = 0;
    lkv_eval_results r;
    stories_run(&s, &r);
    for (int i = 0; i < r.n_prompts; i++)
        for (int k = 1; k < r.n_lanes; k++) {
            const lkv_eval_lane_result *l = &r.prompts[i].lanes[k];
            int32_t cap = r.lanes[k].policy == LKV_POLICY_LAZY ? 101 : 32;
            int32_t want = l->budget / 2 < cap ? l->budget / 2 : cap;
            cr_assert_eq(l->window, want > 1 ? want : 1, "prompt %d %s: W %d for B %d", i + 1,
                         r.lanes[k].name, l->window, l->budget);
        }
    expect_check_and_free(&r);
}

Test(eval_stories, a_refused_lane_is_skipped_with_its_reason, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("lazy,tova", "25%", NULL);
    s.window = 60; /* given, and above B = 52 */
    lkv_eval_results r;
    stories_run(&s, &r);
    cr_assert_eq(r.prompts[0].lanes[1].status, LKV_INVALID_ARGUMENT);
    cr_assert(strstr(r.prompts[0].lanes[1].error, "window 60"), "%s",
              r.prompts[0].lanes[1].error);
    cr_assert_eq(r.prompts[0].lanes[2].status, LKV_OK);
    char why[512];
    cr_assert_not(lkv_eval_check(&r, why, sizeof why));
    cr_assert(strstr(why, "lazy grouped 25%") && strstr(why, "skipped"), "%s", why);
    lkv_eval_results_free(&r);
}

/* ---- writers ---- */

/* What `writer` writes, malloc'd. */
static char *written(int (*writer)(FILE *, const lkv_eval_results *), const lkv_eval_results *r,
                     size_t *out_len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, out_len);
    cr_assert_eq(writer(f, r), 0);
    fclose(f);
    return buf;
}

static int print_table(FILE *f, const lkv_eval_results *r)
{
    lkv_eval_print_table(f, r);
    return 0;
}

Test(eval_stories, json_and_svg_say_what_the_results_hold, .timeout = 900)
{
    lkv_eval_settings s = stories_settings("full,lazy,tova", NULL, NULL);
    lkv_eval_results r;
    stories_run(&s, &r);
    size_t len = 0;
    char *buf = written(lkv_eval_write_json, &r, &len);
    lkv_json v;
    char err[160];
    cr_assert_eq(lkv_json_parse(buf, len, &v, err, sizeof err), 0, "%s", err);
    const lkv_json *lanes = lkv_json_get(&v, "lanes"), *prompts = lkv_json_get(&v, "prompts");
    cr_assert(lanes && lanes->count == r.n_lanes);
    cr_assert(prompts && prompts->count == 2);
    const lkv_json *ref = &lkv_json_get(&prompts->items[0], "lanes")->items[0];
    cr_assert_eq(lkv_json_get(ref, "kl_mean")->number, 0.0);
    cr_assert_eq(lkv_json_get(ref, "generated")->number, 200.0);
    const lkv_json *lazy = lkv_json_get(&lanes->items[2], "summary");
    cr_assert_eq(lkv_json_get(lazy, "over_bound")->number, 0.0);
    cr_assert_eq(lkv_json_get(lazy, "window_mean")->number, 16.0);
    cr_assert(lkv_json_get(lazy, "peak_memory_fraction")->number > 0.0);
    lkv_json_free(&v);
    free(buf);
    buf = written(lkv_eval_write_svg, &r, &len);
    cr_assert(strstr(buf, "<svg") && strstr(buf, "</svg>"));
    cr_assert(strstr(buf, ">lazy</text>") && strstr(buf, ">tova</text>"));
    cr_assert(strstr(buf, "<polyline"), "a line through the budgets");
    cr_assert(strstr(buf, "peak K/V memory held"), "the x axis is the memory held");
    free(buf);
    buf = written(print_table, &r, &len);
    cr_assert(strstr(buf, "| policy | gqa | budget | slots B | W | B/T | peak | peak memory |"));
    cr_assert(strstr(buf, "| full (reference) | grouped | - |"), "%s", buf);
    cr_assert(strstr(buf, "| lazy | grouped | 80 | 80 | 16 |"), "%s", buf);
    cr_assert(strstr(buf, "| tova | grouped | 80 | 80 | - |"), "%s", buf);
    free(buf);
    lkv_eval_results_free(&r);
}

/* ---- --at peak and lazy-peak ---- */

Test(eval_settings, lazy_peak_and_at_parse_and_bad_entries_change_nothing)
{
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    cr_assert_eq(s.at_peak, 0, "at budget by default");
    TU_OK(lkv_eval_parse_policies("lazy,lazy-peak,h2o", &s));
    cr_assert_eq(s.n_policies, 3);
    cr_assert(s.policies[1] == LKV_POLICY_LAZY && s.schedules[1] == LKV_LAZY_PEAK);
    cr_assert_eq(s.schedules[0], LKV_LAZY_FAITHFUL);
    cr_assert_str_eq(lkv_eval_policy_name(s.policies[1], s.schedules[1]), "lazy-peak");
    cr_assert_eq(lkv_eval_parse_policies("lazy-peak,lazy-peak", &s), LKV_INVALID_ARGUMENT);
    cr_assert_eq(lkv_eval_parse_policies("lazy-eager", &s), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'lazy-eager'"), "%s", lkv_last_error());
    cr_assert(s.n_policies == 3 && s.schedules[1] == LKV_LAZY_PEAK, "unchanged on failure");
    TU_OK(lkv_eval_parse_at("peak", &s));
    cr_assert_eq(s.at_peak, 1);
    cr_assert_eq(lkv_eval_parse_at("memory", &s), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "'memory'"), "%s", lkv_last_error());
    cr_assert_eq(s.at_peak, 1);
    TU_OK(lkv_eval_parse_at("budget", &s));
    cr_assert_eq(s.at_peak, 0);
    lkv_eval_lane_spec *l = NULL;
    int n = 0;
    TU_OK(lkv_eval_lane_specs(&s, &l, &n));
    cr_assert_str_eq(l[1 + s.n_budgets].name, "lazy-peak grouped 25%");
    cr_assert_eq(l[1 + s.n_budgets].schedule, LKV_LAZY_PEAK);
    free(l);
}

/* At peak every policy gets the largest B whose peak bound is within the
 * target (so within one slot of it): one slot more of budget would pass it. */
Test(eval_lanes, at_peak_each_policy_gets_the_largest_budget_within_the_target)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_at("peak", &s));
    const lkv_policy_kind kinds[] = {LKV_POLICY_LAZY, LKV_POLICY_LAZY, LKV_POLICY_STREAMING,
                                     LKV_POLICY_H2O, LKV_POLICY_TOVA, LKV_POLICY_SNAPKV,
                                     LKV_POLICY_NACL, LKV_POLICY_RKV};
    const lkv_lazy_schedule sched[] = {LKV_LAZY_FAITHFUL, LKV_LAZY_PEAK, 0, 0, 0, 0, 0, 0};
    /* T = 40 + 360, 50% -> a peak of 200 slots per head */
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        lkv_eval_lane_spec spec = {.policy = kinds[i], .schedule = sched[i],
                                   .gqa = LKV_GQA_GROUPED, .budget = 1};
        lkv_eval_lane_plan plan;
        TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 40, 360, &plan));
        const char *name = lkv_eval_policy_name(kinds[i], sched[i]);
        cr_assert_eq(plan.target, 200, "%s", name);
        if (kinds[i] == LKV_POLICY_NACL) { /* B after prefill, one more each of 359 steps */
            cr_assert(plan.beyond, "nacl cannot peak at 200 over 359 steps");
            continue;
        }
        cr_assert(!plan.beyond, "%s", name);
        lkv_policy_params p = plan.cfg.policy;
        int64_t peak = lkv_budget_peak_bound(&p, 40, 359);
        /* within one slot: lazy's default W = B/2 moves its bound 1.5 a slot */
        cr_assert(peak == 200 || peak == 199, "%s: B %d peaks at %lld", name, plan.budget,
                  (long long)peak);
        cr_assert_eq(plan.bound, peak, "%s", name);
        p.budget++;
        if (kinds[i] == LKV_POLICY_LAZY || kinds[i] == LKV_POLICY_SNAPKV ||
            kinds[i] == LKV_POLICY_RKV)
            p.window = lkv_budget_default_window(kinds[i], p.budget);
        cr_assert_gt(lkv_budget_peak_bound(&p, 40, 359), 200, "%s: B %d is not the largest", name,
                     plan.budget);
    }
}

/* A target below the prompt is beyond every budget: the lane is skipped
 * saying so, never run at some budget that breaks the target. */
Test(eval_lanes, a_peak_target_below_the_prompt_skips_the_lane_saying_why)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_at("peak", &s));
    lkv_eval_lane_spec spec = {.policy = LKV_POLICY_H2O, .gqa = LKV_GQA_GROUPED, .budget = 0,
                               .name = "h2o grouped 25%"};
    lkv_eval_lane_plan plan;
    /* T = 150 + 50, 25% -> 50 slots, below the 150-token prompt */
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 150, 50, &plan));
    cr_assert(plan.beyond);
    lkv_eval_lane_result res;
    memset(&res, 0, sizeof res);
    lkv_cache *c = NULL;
    TU_OK(lkv_eval_lane_open(tu_runtime(), &plan, &spec, &res, &c));
    cr_assert_null(c);
    cr_assert_eq(res.status, LKV_INVALID_ARGUMENT);
    cr_assert(strstr(res.error, "within 50 slots"), "%s", res.error);
}

/* rkv peaks at B + its buffer: at a 200-slot target the default buffer
 * (128) leaves B = 72, --buffer 16 leaves 184. */
Test(eval_lanes, rkv_at_peak_gives_its_buffer_back_to_the_budget)
{
    lkv_model m = toy_model();
    lkv_eval_settings s;
    lkv_eval_settings_init(&s);
    TU_OK(lkv_eval_parse_at("peak", &s));
    lkv_eval_lane_spec spec = {.policy = LKV_POLICY_RKV, .gqa = LKV_GQA_GROUPED, .budget = 1};
    lkv_eval_lane_plan plan;
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 40, 360, &plan));
    cr_assert_eq(plan.budget, 72);
    cr_assert_eq(plan.bound, 200);
    cr_assert_eq(plan.cfg.policy.interval, 128);
    s.buffer = 16;
    TU_OK(lkv_eval_lane_plan_make(&m, &s, &spec, 40, 360, &plan));
    cr_assert_eq(plan.budget, 184);
    cr_assert_eq(plan.bound, 200);
    cr_assert_eq(plan.cfg.policy.interval, 16);
}
