/* The forms an engine may hand a decode step's probabilities in: rows per
 * query head on the host (the reference form: lazykv combines each group),
 * rows per cache head the engine combined, and either in device memory (the
 * oracle's device memory is host memory, so its handles are host
 * addresses). Every form must give the reference form's decisions: the
 * same plan at every step, the same positions at the end. The GPU backends'
 * device rows are checked on lavapipe and PoCL (tests/opencl/engine_checks.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define LAYERS 2
#define QH 4
#define CAP 96
#define STEPS 70
#define PROMPT 12

typedef struct form {
    lkv_probs_rows rows;
    lkv_memory memory;
    lkv_group_reduce reduce; /* rows per cache head: combined by max */
} form;

static lkv_cache *make(lkv_policy_kind kind, lkv_gqa_mode gqa, int32_t kv_heads,
                       lkv_group_reduce reduce)
{
    lkv_cache_config cfg = tu_config(LAYERS, QH, kv_heads, 8, CAP);
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.gqa = gqa;
    cfg.sequences = 2;
    TU_OK(lkv_policy_init(&cfg.policy, kind));
    cfg.policy.budget = 40;
    cfg.policy.window = 9;
    cfg.policy.alpha = 0.02f;
    cfg.policy.group_reduce = reduce;
    return tu_cache(&cfg);
}

/* Random softmax rows per query head over n slots: peaked enough that
 * some slots pass alpha and others do not. */
static void draw_rows(float *p, int32_t rows, int32_t stride, int32_t n, uint64_t *rng)
{
    for (int32_t r = 0; r < rows; r++) {
        float *row = p + (size_t)r * (size_t)stride;
        double sum = 0;
        for (int32_t j = 0; j < n; j++)
            sum += row[j] = (float)exp(3.0 * tu_normal(rng));
        for (int32_t j = 0; j < n; j++)
            row[j] = (float)(row[j] / sum);
        for (int32_t j = n; j < stride; j++)
            row[j] = 0.0f;
    }
}

/* Per cache head the max over its group, as lazykv combines query rows. */
static void combine_max(const float *q_rows, float *c_rows, int32_t heads, int32_t stride)
{
    int32_t per = QH / heads;
    for (int32_t h = 0; h < heads; h++)
        for (int32_t j = 0; j < stride; j++) {
            float m = 0.0f;
            for (int32_t g = 0; g < per; g++)
                m = fmaxf(m, q_rows[(size_t)(h * per + g) * stride + j]);
            c_rows[(size_t)h * stride + j] = m;
        }
}

static void expect_same_plan(const lkv_cache *ref, const lkv_cache *got, const char *what, int step)
{
    lkv_eviction_plan a, b;
    TU_OK(lkv_cache_get_plan(ref, &a));
    TU_OK(lkv_cache_get_plan(got, &b));
    cr_assert_eq(b.n_rows, a.n_rows, "%s, step %d: %d plan rows, the host form %d", what, step,
                 b.n_rows, a.n_rows);
    for (int32_t r = 0; r < a.n_rows; r++) {
        const lkv_plan_row *x = &a.rows[r], *y = &b.rows[r];
        cr_assert(x->sequence == y->sequence && x->layer == y->layer && x->head == y->head &&
                      x->n_kept == y->n_kept && x->first_move == y->first_move &&
                      memcmp(x->kept, y->kept, sizeof *x->kept * (size_t)x->n_kept) == 0,
                  "%s, step %d: plan row %d differs from the host form's", what, step, r);
    }
}

/* Both sequences, every layer, STEPS steps; `got` takes the rows in form f,
 * `ref` per query head on the host. Returns the evictions seen. */
static int64_t run_forms(lkv_policy_kind kind, lkv_gqa_mode gqa, int32_t kv_heads, form f)
{
    lkv_cache *ref = make(kind, gqa, kv_heads, f.reduce), *got = make(kind, gqa, kv_heads, f.reduce);
    int32_t heads = lkv_cache_heads(ref), seqs[2] = {1, 0}, n_tok[2] = {PROMPT, PROMPT + 5};
    lkv_observe_prompt_io p = {.n_sequences = 2, .sequences = seqs, .n_tokens = n_tok};
    for (int32_t l = 0; l < LAYERS; l++) {
        TU_OK(lkv_cache_observe_prompt(ref, l, &p));
        TU_OK(lkv_cache_observe_prompt(got, l, &p));
    }
    float *q_rows = malloc(sizeof(float) * 2 * QH * CAP);
    float *given = malloc(sizeof(float) * 2 * QH * CAP);
    uint64_t rng = 5 + (uint64_t)kind;
    char what[96];
    snprintf(what, sizeof what, "%s %s rows %d memory %d reduce %d", lkv_policy_name(kind),
             gqa == LKV_GQA_GROUPED ? "grouped" : "expanded", (int)f.rows, (int)f.memory,
             (int)f.reduce);
    for (int s = 0; s < STEPS; s++)
        for (int32_t l = 0; l < LAYERS; l++) {
            for (int32_t i = 0; i < 2; i++) {
                int32_t n = 0; /* the layer's slots before the step */
                free(tu_positions(ref, seqs[i], l, 0, &n));
                draw_rows(q_rows + (size_t)i * QH * CAP, QH, CAP, n + 1, &rng);
            }
            for (int32_t i = 0; i < 2; i++)
                if (f.rows == LKV_ROWS_CACHE_HEADS)
                    combine_max(q_rows + (size_t)i * QH * CAP, given + (size_t)i * heads * CAP,
                                heads, CAP);
                else
                    memcpy(given + (size_t)i * QH * CAP, q_rows + (size_t)i * QH * CAP,
                           sizeof(float) * QH * CAP);
            lkv_observe_batch_io a = {.n_sequences = 2, .sequences = seqs, .probs = q_rows,
                                      .stride = CAP};
            lkv_observe_batch_io b = {.n_sequences = 2, .sequences = seqs, .stride = CAP,
                                      .rows = f.rows, .memory = f.memory};
            if (f.memory == LKV_MEMORY_DEVICE)
                b.probs_dev = (lkv_device_array){(uint64_t)(uintptr_t)given, 0};
            else
                b.probs = given;
            TU_OK(lkv_cache_observe_batch(ref, l, &a));
            TU_OK(lkv_cache_observe_batch(got, l, &b));
            if (l == LAYERS - 1)
                expect_same_plan(ref, got, what, s);
        }
    tu_expect_same_positions(ref, got, what);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(got, &st));
    free(q_rows);
    free(given);
    lkv_cache_destroy(ref);
    lkv_cache_destroy(got);
    return st.evictions;
}

Test(engine_device, every_form_of_the_rows_makes_the_host_rows_decisions)
{
    const lkv_policy_kind kinds[] = {LKV_POLICY_LAZY, LKV_POLICY_H2O, LKV_POLICY_TOVA};
    /* query-head rows on the device are combined there (reduce_rows),
     * by max and by mean: the host form's combine, bit for bit */
    const form grouped[] = {{LKV_ROWS_CACHE_HEADS, LKV_MEMORY_HOST, LKV_REDUCE_MAX},
                            {LKV_ROWS_CACHE_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MAX},
                            {LKV_ROWS_QUERY_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MAX},
                            {LKV_ROWS_QUERY_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MEAN}};
    const form expanded[] = {{LKV_ROWS_QUERY_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MAX},
                             {LKV_ROWS_CACHE_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MAX},
                             {LKV_ROWS_QUERY_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MAX},
                             {LKV_ROWS_QUERY_HEADS, LKV_MEMORY_DEVICE, LKV_REDUCE_MEAN}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int f = 0; f < 4; f++) {
            cr_expect_gt(run_forms(kinds[k], LKV_GQA_GROUPED, 2, grouped[f]), 0,
                         "%s: the run must evict", lkv_policy_name(kinds[k]));
            cr_expect_gt(run_forms(kinds[k], LKV_GQA_EXPANDED, 2, expanded[f]), 0,
                         "%s: the run must evict", lkv_policy_name(kinds[k]));
        }
}

/* A failed call changes nothing: the sequence's step and length stay. */
static void expect_refused(lkv_cache *c, const lkv_observe_batch_io *io, const char *needle)
{
    int32_t len0 = 0, t0 = 0, len = 0, t = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &len0, &t0));
    cr_expect_eq(lkv_cache_observe_batch(c, 0, io), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), needle), "want \"%s\" in: %s", needle, lkv_last_error());
    TU_OK(lkv_cache_sequence_info(c, 0, &len, &t));
    cr_expect(len == len0 && t == t0, "a refused call moved the sequence: %d %d, was %d %d", len, t,
              len0, t0);
}

Test(engine_device, bad_forms_are_refused_naming_them)
{
    lkv_cache *c = make(LKV_POLICY_LAZY, LKV_GQA_GROUPED, 2, LKV_REDUCE_MAX);
    int32_t seq = 0, n = PROMPT;
    lkv_observe_prompt_io p = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n};
    for (int32_t l = 0; l < LAYERS; l++)
        TU_OK(lkv_cache_observe_prompt(c, l, &p));
    float *rows = calloc(QH * CAP, sizeof(float));
    lkv_observe_batch_io io = {.n_sequences = 1, .sequences = &seq, .stride = CAP,
                               .rows = (lkv_probs_rows)7, .memory = LKV_MEMORY_DEVICE,
                               .probs_dev = {(uint64_t)(uintptr_t)rows, 0}};
    expect_refused(c, &io, "rows 7");
    io.rows = LKV_ROWS_CACHE_HEADS;
    io.probs_dev.handle = 0;
    expect_refused(c, &io, "probs_dev.handle is 0");
    io.probs_dev.handle = (uint64_t)(uintptr_t)rows;
    io.memory = (lkv_memory)5;
    expect_refused(c, &io, "memory kind 5");
    /* host rows per cache head are checked like query rows: row 1 is the
     * second cache head's */
    io.memory = LKV_MEMORY_HOST;
    io.probs = rows;
    rows[CAP + 3] = 2.0f;
    expect_refused(c, &io, "row 1 slot 3");
    rows[CAP + 3] = 0.0f;
    TU_OK(lkv_cache_observe_batch(c, 0, &io));
    free(rows);
    lkv_cache_destroy(c);
}
