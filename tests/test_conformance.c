/* The conformance suite catches what it is for. Each test hands the suite a
 * backend built here from the oracle's (ref's) ops table with one op broken on
 * purpose (a sign flipped, two kept slots swapped, one float written past
 * n), wrapped in an lkv_runtime this file constructs itself, and checks that
 * exactly the cases exercising that op fail while the fast cpu backend passes
 * everything. The small shapes of the quick grid keep it fast (the whole grid
 * runs as the conformance_quick_cpu ctest); the command's exit codes are
 * checked through $LKV_CLI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "conformance.h"
#include "runtime.h"
#include "test_util.h"

/* Every family, at the quick grid's small shapes (attend's 4K x 32-head
 * shape is left to the ctest run); d=33 is a quick attend shape that also
 * runs in bf16. */
#define SMALL_CASES                                                                              \
    "attend(d=64,n=1,*|attend(d=64,n=1000,*|attend(d=128,n=257,*|attend(d=33,n=500,*|"          \
    "observe(*|score(*|select(*|compact(*|replay(*|batch(*|chunked(*|fork(*|truncate(*"


/* ---- the broken ops ---- */

static lkv_status flip_out_sign(lkv_device *dev, const lkv_attend_args *a)
{
    lkv_status st = lkv_backend_ref.attend(dev, a);
    if (st != LKV_OK || !a->out)
        return st;
    size_t n = (size_t)a->n_groups * (size_t)a->q_heads * (size_t)a->cache->head_dim;
    float *x = malloc(sizeof *x * n);
    cr_assert_not_null(x);
    TU_OK(lkv_backend_ref.read(dev, a->out, 0, x, sizeof *x * n));
    for (size_t i = 0; i < n; i++)
        x[i] = -x[i];
    TU_OK(lkv_backend_ref.write(dev, a->out, 0, x, sizeof *x * n));
    free(x);
    return LKV_OK;
}

/* The first two kept slots of every row that keeps two trade places: the
 * same set, no longer in ascending order. */
static lkv_status swap_two_kept(lkv_device *dev, const lkv_select_args *a)
{
    lkv_status st = lkv_backend_ref.select(dev, a);
    for (int32_t r = 0; st == LKV_OK && r < a->n_rows; r++) {
        if (a->row_k[r] < 2)
            continue;
        size_t off = (size_t)a->rows[r] * (size_t)a->capacity * sizeof(int32_t);
        int32_t two[2], swapped[2];
        TU_OK(lkv_backend_ref.read(dev, a->kept, off, two, sizeof two));
        swapped[0] = two[1];
        swapped[1] = two[0];
        TU_OK(lkv_backend_ref.write(dev, a->kept, off, swapped, sizeof swapped));
    }
    return st;
}

/* One float at slot n of the first row: a classic `i <= n` loop bound. */
static lkv_status probs_one_past_n(lkv_device *dev, const lkv_attend_args *a)
{
    lkv_status st = lkv_backend_ref.attend(dev, a);
    if (st != LKV_OK || !a->probs || a->group_n[0] >= a->cache->capacity)
        return st;
    float stray = 0.5f;
    size_t off = ((size_t)a->group_row0[0] * (size_t)a->cache->capacity +
                  (size_t)a->group_n[0]) * sizeof(float);
    TU_OK(lkv_backend_ref.write(dev, a->probs, off, &stray, sizeof stray));
    return LKV_OK;
}

/* Reads bf16 K/V as f16, as a kernel with a two-way `f16 or f32` branch
 * would: the same element size, so every access stays in bounds and only
 * the values are wrong. */
static lkv_status bf16_read_as_f16(lkv_device *dev, const lkv_attend_args *a)
{
    if (a->cache->dtype != LKV_DTYPE_BF16)
        return lkv_backend_ref.attend(dev, a);
    lkv_cache_buffers cache = *a->cache;
    cache.dtype = LKV_DTYPE_F16;
    lkv_attend_args b = *a;
    b.cache = &cache;
    return lkv_backend_ref.attend(dev, &b);
}

/* Ranks scores with two mantissa bits fewer: scores up to four floats apart
 * tie (and go to the older slot) while exact ties stay ties, as a comparator
 * on rounded keys would. Within the tie rule's 1e-6, so forgiven. */
static lkv_status select_on_coarse_scores(lkv_device *dev, const lkv_select_args *a)
{
    int32_t rows = 0;
    for (int32_t r = 0; r < a->n_rows; r++)
        rows = a->rows[r] + 1 > rows ? a->rows[r] + 1 : rows;
    size_t n = (size_t)rows * (size_t)a->capacity;
    uint32_t *bits = malloc(sizeof *bits * n);
    cr_assert_not_null(bits);
    TU_OK(lkv_backend_ref.read(dev, a->scores, 0, bits, sizeof *bits * n));
    for (size_t i = 0; i < n; i++)
        if ((bits[i] & 0x7f800000u) != 0x7f800000u) /* finite: truncate */
            bits[i] &= ~3u;
    lkv_buffer *coarse = NULL;
    TU_OK(lkv_backend_ref.alloc(dev, sizeof *bits * n, &coarse));
    TU_OK(lkv_backend_ref.write(dev, coarse, 0, bits, sizeof *bits * n));
    lkv_select_args b = *a;
    b.scores = coarse;
    lkv_status st = lkv_backend_ref.select(dev, &b);
    lkv_backend_ref.free(dev, coarse);
    free(bits);
    return st;
}

/* Every row observed at the dispatch's step, whatever row_t says. */
static lkv_status observe_ignoring_row_steps(lkv_device *dev, const lkv_observe_args *a)
{
    lkv_observe_args one = *a;
    one.row_t = NULL;
    return lkv_backend_ref.observe(dev, &one);
}

/* The cache's state_f is its sixth buffer; the engine allocates it last,
 * and a fork copies it with one copy of the sequence's rows. A copy that
 * skips every sixth call drops it (the cpu's only copies are fork's). */
static lkv_status copy_without_state_f(lkv_device *dev, lkv_buffer *dst, size_t dst_off,
                                       const lkv_buffer *src, size_t src_off, size_t bytes)
{
    static unsigned calls;
    if (++calls % 6 == 0)
        return LKV_OK;
    return lkv_backend_ref.copy(dev, dst, dst_off, src, src_off, bytes);
}

/* ---- running the suite on a hand-made runtime ---- */

#define MAX_CASES 512

typedef struct tally {
    struct {
        char name[192];
        char metric[32];
        lkv_conformance_outcome worst;
    } c[MAX_CASES];
    int count;
    int near_ties; /* results that forgave a near tie */
    lkv_conformance_summary sum;
} tally;

static void record(void *user, const lkv_conformance_result *r)
{
    tally *t = user;
    int i = 0;
    while (i < t->count && strcmp(t->c[i].name, r->name) != 0)
        i++;
    if (i == t->count) {
        cr_assert_lt(t->count, MAX_CASES);
        snprintf(t->c[i].name, sizeof t->c[i].name, "%s", r->name);
        t->c[i].worst = r->outcome;
        t->count++;
    }
    t->near_ties += strstr(r->detail, "near tie") != NULL;
    if (r->outcome >= t->c[i].worst) {
        t->c[i].worst = r->outcome;
        snprintf(t->c[i].metric, sizeof t->c[i].metric, "%s", r->metric_name);
    }
}

static void run_suite(const lkv_backend_ops *ops, const char *label, unsigned families,
                      tally *t)
{
    lkv_device *dev = NULL;
    TU_OK(ops->open(0, &dev));
    struct lkv_runtime rt = {.ops = ops, .dev = dev};
    snprintf(rt.info.backend, sizeof rt.info.backend, "%s", label);
    snprintf(rt.info.device_name, sizeof rt.info.device_name, "the cpu, %s", label);
    lkv_conformance_options opt;
    lkv_conformance_options_init(&opt);
    opt.quick = 1;
    opt.seeds = 2;
    opt.ops = families;
    opt.filter = SMALL_CASES;
    opt.on_result = record;
    opt.user = t;
    memset(t, 0, sizeof *t);
    TU_OK(lkv_conformance_run(&opt, &rt, label, &t->sum));
    ops->close(dev);
    cr_assert_gt(t->count, 0, "the suite ran no case");
}

static int has(const char *name, const char *part)
{
    return strstr(name, part) != NULL;
}

static void expect_outcome(const tally *t, int i, lkv_conformance_outcome want, const char *metric)
{
    cr_expect_eq(t->c[i].worst, want, "%s: %s, expected %s", t->c[i].name,
                 lkv_conformance_outcome_name(t->c[i].worst), lkv_conformance_outcome_name(want));
    if (metric && want == LKV_CONF_FAIL)
        cr_expect_str_eq(t->c[i].metric, metric, "%s failed on %s, expected %s", t->c[i].name,
                         t->c[i].metric, metric);
}

/* ---- the suite on broken backends ---- */

Test(conformance, the_honest_cpu_passes_every_case)
{
    static tally t;
    run_suite(&lkv_backend_cpu, "cpu", LKV_CONF_ALL, &t);
    for (int i = 0; i < t.count; i++)
        expect_outcome(&t, i, LKV_CONF_PASS, NULL);
    cr_expect_eq(t.sum.fail + t.sum.skip + t.sum.xfail, 0);
    int one_seed = 0;
    for (int i = 0; i < t.count; i++)
        one_seed += has(t.c[i].name, "replay(") || has(t.c[i].name, "batch(") ||
                    has(t.c[i].name, "chunked(") || has(t.c[i].name, "fork(") ||
                    has(t.c[i].name, "truncate(");
    cr_expect_eq(one_seed, 8 + 16 + 7 + 14, "replays, batch (two results each), chunked, fork "
                 "and truncate: one case per policy (rkv in replays and batch only)");
    cr_expect_eq(t.sum.pass, t.count * 2 - one_seed,
                 "two seeds per op case, one per replay and engine case");
}

Test(conformance, a_flipped_attention_sign_fails_every_case_with_an_output)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.attend = flip_out_sign;
    run_suite(&broken, "flipped", LKV_CONF_ATTEND | LKV_CONF_OBSERVE, &t);
    for (int i = 0; i < t.count; i++) {
        int with_out = has(t.c[i].name, "attend(") && !has(t.c[i].name, "out=none");
        expect_outcome(&t, i, with_out ? LKV_CONF_FAIL : LKV_CONF_PASS, "nmse");
    }
}

Test(conformance, an_attend_reading_bf16_as_f16_fails_the_bf16_cases_only)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.attend = bf16_read_as_f16;
    run_suite(&broken, "bf16-as-f16", LKV_CONF_ATTEND, &t);
    int bf16 = 0;
    for (int i = 0; i < t.count; i++) {
        int bites = has(t.c[i].name, ",bf16)");
        bf16 += bites;
        expect_outcome(&t, i, bites ? LKV_CONF_FAIL : LKV_CONF_PASS,
                       has(t.c[i].name, "out=none") ? "err/tol" : "nmse");
    }
    cr_expect_eq(bf16, 4, "one bf16 attend shape in four modes, got %d cases", bf16);
}

Test(conformance, two_swapped_kept_slots_fail_the_select_cases_that_keep_two)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.select = swap_two_kept;
    run_suite(&broken, "swapped", LKV_CONF_SCORE | LKV_CONF_SELECT | LKV_CONF_COMPACT, &t);
    for (int i = 0; i < t.count; i++) {
        /* a row of one slot cannot keep two, so select(n=1,...) stays honest */
        int bites = has(t.c[i].name, "select(") && !has(t.c[i].name, "select(n=1,");
        expect_outcome(&t, i, bites ? LKV_CONF_FAIL : LKV_CONF_PASS, "rows differing");
    }
}

Test(conformance, a_select_that_rounds_its_keys_passes_on_near_ties_only)
{
    static tally t;
    lkv_backend_ops coarse = lkv_backend_ref;
    coarse.select = select_on_coarse_scores;
    run_suite(&coarse, "coarse", LKV_CONF_SELECT, &t);
    for (int i = 0; i < t.count; i++)
        expect_outcome(&t, i, LKV_CONF_PASS, NULL);
    cr_expect_gt(t.near_ties, 0, "no selection differed at a near tie: the inputs lack them");
}

Test(conformance, one_float_past_n_fails_every_case_with_probabilities)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.attend = probs_one_past_n;
    run_suite(&broken, "overrun", LKV_CONF_ATTEND, &t);
    for (int i = 0; i < t.count; i++)
        expect_outcome(&t, i, has(t.c[i].name, "probs=none") ? LKV_CONF_PASS : LKV_CONF_FAIL,
                       "guard");
}

/* The batch calls observe sequences at different steps in one dispatch;
 * an observe that takes the dispatch's step for every row stamps the wrong
 * step on lazy's important slots, which only the batched runs expose. */
Test(conformance, an_observe_ignoring_row_steps_fails_the_lazy_batch_cases_only)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.observe = observe_ignoring_row_steps;
    run_suite(&broken, "row-steps", LKV_CONF_BATCH | LKV_CONF_CHUNKED | LKV_CONF_LIFECYCLE, &t);
    int bitten = 0;
    for (int i = 0; i < t.count; i++) {
        int bites = has(t.c[i].name, "batch(policy=lazy,");
        bitten += bites;
        expect_outcome(&t, i, bites ? LKV_CONF_FAIL : LKV_CONF_PASS, "mismatches");
    }
    cr_expect_eq(bitten, 2, "the lazy batch case and its comparison with the oracle");
}

/* A fork that leaves state_f behind: every policy that keeps its state
 * there (h2o, tova, snapkv, nacl; not lazy, streaming or full) diverges
 * from the source continuing alone. */
Test(conformance, a_fork_that_drops_state_f_fails_the_fork_cases_that_keep_it)
{
    static tally t;
    lkv_backend_ops broken = lkv_backend_ref;
    broken.copy = copy_without_state_f;
    run_suite(&broken, "fork", LKV_CONF_LIFECYCLE, &t);
    for (int i = 0; i < t.count; i++) {
        int bites = has(t.c[i].name, "fork(") && !has(t.c[i].name, "fork(policy=lazy,") &&
                    !has(t.c[i].name, "fork(policy=full,") &&
                    !has(t.c[i].name, "fork(policy=streaming,");
        expect_outcome(&t, i, bites ? LKV_CONF_FAIL : LKV_CONF_PASS, "mismatches");
    }
}

Test(conformance, a_missing_op_skips_its_cases_and_the_replays)
{
    static tally t;
    lkv_backend_ops partial = lkv_backend_ref;
    partial.compact = NULL;
    run_suite(&partial, "partial", LKV_CONF_SELECT | LKV_CONF_COMPACT | LKV_CONF_REPLAY, &t);
    for (int i = 0; i < t.count; i++)
        expect_outcome(&t, i, has(t.c[i].name, "select(") ? LKV_CONF_PASS : LKV_CONF_SKIP, NULL);
}

/* ---- the command ---- */

static int cli_status(const char *env, const char *args)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' conformance %s >/dev/null 2>&1", env, cli, args);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "'%s' did not exit normally", cmd);
    return WEXITSTATUS(st);
}

Test(conformance_cli, usage_errors_exit_2)
{
    cr_expect_eq(cli_status("", "--seeds 0"), 2);
    cr_expect_eq(cli_status("", "--backend nosuch --quick"), 2);
    cr_expect_eq(cli_status("", "--backend cpu:x --quick"), 2);
    cr_expect_eq(cli_status("", "--only nothing --backend cpu"), 2);
    cr_expect_eq(cli_status("LAZYKV_REQUIRE_BACKENDS=vulkn", "--backend cpu --quick"), 2);
    cr_expect_eq(cli_status("", "--help"), 0);
}

/* cuda is not built into this lazykv (yet): the deterministic "unavailable". */
Test(conformance_cli, an_unavailable_backend_is_skipped_unless_required)
{
    cr_expect_eq(cli_status("LAZYKV_REQUIRE_BACKENDS=", "--backend cuda --quick"), 77);
    cr_expect_eq(cli_status("LAZYKV_REQUIRE_BACKENDS=hip,cuda", "--backend cuda --quick"), 1);
}

Test(conformance_cli, json_lines_name_every_field)
{
    char path[] = "/tmp/lazykv-conformance-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    char args[512];
    snprintf(args, sizeof args, "--backend cpu --quick --only select --json '%s'", path);
    cr_expect_eq(cli_status("", args), 0);
    char *text = tu_read_file(path);
    unlink(path);
    cr_assert_not_null(text);
    static const char *const keys[] = {
        "\"backend\": \"cpu\"", "\"device\": ",     "\"case\": \"select(", "\"op\": \"select\"",
        "\"dtype\": \"f32\"",   "\"seed\": 1",       "\"outcome\": \"PASS\"", "\"metric\": 0",
        "\"threshold\": 0",     "\"detail\": ",     "\"seconds\": "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_expect(strstr(text, keys[i]) != NULL, "no %s in:\n%.400s", keys[i], text);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 12, "6 select cases x 2 seeds, got %d lines", lines);
    free(text);
}
