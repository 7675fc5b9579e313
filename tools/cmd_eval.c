/* `lazykv eval`: fidelity of each eviction policy and budget against the
 * full cache on a real model. The work lives in eval/; this file is the
 * command line: options, the model and prompts, the outputs. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cli.h"
#include "eval.h"

static const char *const cmd = "eval";

#define EVAL_DEFAULT_INSTRUCTION                                                                 \
    "Solve the problem step by step, then give the final answer as a number on the last line."

static const char *const help =
    "usage: lazykv eval [options] (--prompts FILE.jsonl | --prompt-ids IDS)\n\n"
    "Measures how far each eviction policy and budget moves a model from the full\n"
    "cache. Per prompt the full cache generates a greedy reference R (G tokens);\n"
    "then every lane (the full cache again, and each policy x budget x GQA mode)\n"
    "reads R teacher-forced: KL(p_full || p_lane), top-1 agreement and the\n"
    "perplexity ratio on R; then every lane generates freely for G tokens: common\n"
    "prefix with R and the final answer (the last number of the text). Peak slots\n"
    "per cache head are checked against the bound each policy promises.\n\n"
    "model and prompts\n"
    "  --model PATH        default $LAZYKV_MODEL_DIR, else $XDG_CACHE_HOME/lazykv/models,\n"
    "                      else ~/.cache/lazykv/models, + /" CLI_DEFAULT_MODEL "\n"
    "                      (scripts/fetch-model.sh fetches it)\n"
    "  --prompts FILE      JSONL with a \"question\" string per line (e.g. GSM8K); an\n"
    "                      \"answer\" ending in \"#### N\" grades accuracy\n"
    "  --n-prompts N       records to use (default 2)\n"
    "  --skip K            records to skip first (default 0)\n"
    "  --instruction TEXT  appended to each question on a line of its own (default:\n"
    "                      \"" EVAL_DEFAULT_INSTRUCTION "\")\n"
    "  --prompt-ids IDS    prompts as token ids, for models without a tokenizer:\n"
    "                      \"1,34,7;1,99\" (prompts separated by ';'; --n-prompts,\n"
    "                      --skip and --instruction are for --prompts only)\n\n"
    "generation\n"
    "  --max-tokens N      cap on the reference length (default 1024); prompt +\n"
    "                      max-tokens must fit the model's context\n"
    "  --ignore-eos        generate max-tokens even past end tokens\n\n"
    "lanes\n"
    "  --policies LIST     default lazy,streaming,h2o,tova,snapkv,nacl (full adds a\n"
    "                      second full cache, which must match the reference exactly;\n"
    "                      lazy-peak is lazykv's own variant of lazy, never the paper's:\n"
    "                      evicts to B - W on lazy's cadence, so it holds at most B;\n"
    "                      rkv, R-KV, runs when listed)\n"
    "  --budgets LIST      slots per cache head: 25% (or 12.5%) of each prompt's prompt\n"
    "                      + reference length T, rounded up, or a count like 512\n"
    "                      (default 25%,50%)\n"
    "  --at budget|peak    what a budget entry is: each lane's B (budget, default), or\n"
    "                      its peak: B chosen per lane and prompt so that the policy's\n"
    "                      peak bound (lazy B + W, h2o B + 1, lazy-peak B, ...) is the\n"
    "                      entry, to compare policies holding the same memory\n"
    "  --window W          lazy eviction period (default: min(101, B/2) per lane; snapkv\n"
    "                      always runs with min(32, B/2)); needs lazy in --policies\n"
    "  --alpha A           lazy importance threshold (default 1e-4); needs lazy\n"
    "  --buffer N          rkv's buffer: steps between compressions (default 128); its\n"
    "                      peak is B + N, so a smaller N leaves a larger B at a peak\n"
    "                      target; needs rkv\n"
    "  --gqa MODE          grouped (default), expanded (B x kv/q slots per head, the\n"
    "                      grouped budget's memory; peaks differ) or both\n"
    "  --granularity LIST  which rows share an eviction decision: head (default, the\n"
    "                      policies as specified), layer (all heads of a layer), token\n"
    "                      (every layer and head: one cell per token, as llama.cpp),\n"
    "                      a comma list of them, or all\n"
    "  --dtype f32|f16|bf16  K/V storage (default f16)\n"
    "  --backend SPEC      default $LAZYKV_BACKEND, else auto\n"
    "  --threads N         forward-pass threads, 1..256 (default: the online CPUs)\n\n"
    "output\n"
    "  --json FILE         settings, summaries and per-prompt per-lane details\n"
    "  --markdown FILE     the report printed on stdout, to a file as well\n"
    "  --plot FILE.svg     KL and top-1 agreement vs the peak K/V memory held, one\n"
    "                      line per policy\n"
    "  --quiet             no progress on stderr\n"
    "  --check             exit 1 unless the full caches give KL 0, agreement 1 and\n"
    "                      perplexity ratio 1 exactly, the full cache regenerates R,\n"
    "                      no lane was skipped and every lane kept within its bound\n\n"
    "Exit status: 0 done; 1 a failure while running, or --check failed; 2 bad\n"
    "options, prompts or model. eval/README.md explains the measures.\n";

typedef struct eval_opts {
    const char *model, *prompts, *prompt_ids, *instruction, *backend;
    const char *json, *markdown, *plot;
    int32_t n_prompts, skip, threads;
    int quiet, check;
    lkv_eval_settings s;
} eval_opts;

/* ---- command line ---- */

static int lib_input_error(void) { return cli_error(cmd, "%s", lkv_last_error()); }

static int parse_dtype(void *opts, const char *flag, const char *v)
{
    return cli_dtype(cmd, flag, v, &((eval_opts *)opts)->s.dtype);
}

static int parse_policies(void *opts, const char *flag, const char *v)
{
    (void)flag;
    return lkv_eval_parse_policies(v, &((eval_opts *)opts)->s) ? lib_input_error() : 0;
}

static int parse_budgets(void *opts, const char *flag, const char *v)
{
    (void)flag;
    return lkv_eval_parse_budgets(v, &((eval_opts *)opts)->s) ? lib_input_error() : 0;
}

static int parse_granularity(void *opts, const char *flag, const char *v)
{
    (void)flag;
    return lkv_eval_parse_granularity(v, &((eval_opts *)opts)->s) ? lib_input_error() : 0;
}

static int parse_at(void *opts, const char *flag, const char *v)
{
    (void)flag;
    return lkv_eval_parse_at(v, &((eval_opts *)opts)->s) ? lib_input_error() : 0;
}

static int parse_gqa(void *opts, const char *flag, const char *v)
{
    (void)flag;
    return lkv_eval_parse_gqa(v, &((eval_opts *)opts)->s) ? lib_input_error() : 0;
}

#define AT(field) offsetof(eval_opts, field)

static const cli_option options[] = {
    {"--ignore-eos", CLI_SWITCH, AT(s.ignore_eos), 0, 0, NULL},
    {"--quiet", CLI_SWITCH, AT(quiet), 0, 0, NULL},
    {"--check", CLI_SWITCH, AT(check), 0, 0, NULL},
    {"--model", CLI_TEXT, AT(model), 0, 0, NULL},
    {"--prompts", CLI_TEXT, AT(prompts), 0, 0, NULL},
    {"--prompt-ids", CLI_TEXT, AT(prompt_ids), 0, 0, NULL},
    {"--instruction", CLI_TEXT, AT(instruction), 0, 0, NULL},
    {"--backend", CLI_TEXT, AT(backend), 0, 0, NULL},
    {"--json", CLI_TEXT, AT(json), 0, 0, NULL},
    {"--markdown", CLI_TEXT, AT(markdown), 0, 0, NULL},
    {"--plot", CLI_TEXT, AT(plot), 0, 0, NULL},
    {"--n-prompts", CLI_INT, AT(n_prompts), 1, 1 << 20, NULL},
    {"--skip", CLI_INT, AT(skip), 0, 1 << 30, NULL},
    {"--threads", CLI_INT, AT(threads), 1, CLI_MAX_THREADS, NULL},
    {"--max-tokens", CLI_INT, AT(s.max_tokens), 1, 1 << 20, NULL},
    {"--window", CLI_INT, AT(s.window), 1, 1 << 24, NULL},
    {"--alpha", CLI_REAL, AT(s.alpha), 0.0, 1.0, NULL},
    {"--buffer", CLI_INT, AT(s.buffer), 1, 1 << 24, NULL},
    {"--dtype", CLI_CALL, 0, 0, 0, parse_dtype},
    {"--policies", CLI_CALL, 0, 0, 0, parse_policies},
    {"--budgets", CLI_CALL, 0, 0, 0, parse_budgets},
    {"--at", CLI_CALL, 0, 0, 0, parse_at},
    {"--gqa", CLI_CALL, 0, 0, 0, parse_gqa},
    {"--granularity", CLI_CALL, 0, 0, 0, parse_granularity},
};

static int has_policy(const lkv_eval_settings *s, lkv_policy_kind kind)
{
    for (int i = 0; i < s->n_policies; i++)
        if (s->policies[i] == kind)
            return 1;
    return 0;
}

/* Options that would be silently ignored are refused instead. */
static int check_combinations(const eval_opts *o)
{
    if (!o->prompts == !o->prompt_ids)
        return cli_error(cmd, o->prompts ? "give --prompts or --prompt-ids, not both"
                                         : "no prompts: give --prompts FILE.jsonl (e.g. GSM8K) "
                                           "or --prompt-ids \"1,34,7;1,99\"");
    const char *jsonl_only = o->n_prompts ? "--n-prompts" : o->skip >= 0 ? "--skip"
                           : o->instruction ? "--instruction" : NULL;
    if (o->prompt_ids && jsonl_only)
        return cli_error(cmd, "%s applies to --prompts (JSONL records), not to --prompt-ids, "
                              "which runs every prompt it lists", jsonl_only);
    const char *lazy_only = o->s.window > 0 ? "--window" : o->s.alpha >= 0.0 ? "--alpha" : NULL;
    if (lazy_only && !has_policy(&o->s, LKV_POLICY_LAZY))
        return cli_error(cmd, "%s is lazy's, and lazy is not in --policies", lazy_only);
    if (o->s.buffer > 0 && !has_policy(&o->s, LKV_POLICY_RKV))
        return cli_error(cmd, "--buffer is rkv's, and rkv is not in --policies");
    return 0;
}

/* 0 to run, 1 after --help, 2 on a bad option. */
static int parse(int argc, char **argv, eval_opts *o)
{
    memset(o, 0, sizeof *o);
    lkv_eval_settings_init(&o->s);
    o->skip = -1; /* -1, 0 and NULL: not given, for check_combinations */
    int rc = cli_parse(cmd, argc, argv, options, sizeof options / sizeof options[0], o, help);
    if (rc == 0)
        rc = check_combinations(o);
    if (rc == 0) {
        o->n_prompts = o->n_prompts ? o->n_prompts : 2;
        o->skip = o->skip >= 0 ? o->skip : 0;
        o->instruction = o->instruction ? o->instruction : EVAL_DEFAULT_INSTRUCTION;
    }
    return rc;
}

/* Everything the run borrows, released together. */
typedef struct eval_inputs {
    lkv_model *model;
    lkv_tokenizer *tok;
    lkv_eval_prompts prompts;
    lkv_runtime *rt;
    lkv_pool *pool;
    FILE *json, *markdown, *plot;
} eval_inputs;

static void close_inputs(eval_inputs *in)
{
    lkv_eval_prompts_free(&in->prompts);
    lkv_pool_release(in->pool);
    lkv_runtime_close(in->rt);
    lkv_tokenizer_free(in->tok);
    lkv_model_free(in->model);
    FILE *files[] = {in->json, in->markdown, in->plot};
    for (int i = 0; i < 3; i++)
        if (files[i])
            fclose(files[i]);
}

/* JSONL prompts need the model's tokenizer; id prompts were parsed before
 * the model was loaded, and are checked against its vocabulary here. */
static int load_prompts(const eval_opts *o, eval_inputs *in)
{
    lkv_status st = LKV_OK;
    if (!o->prompt_ids) {
        char *text = NULL;
        int rc = cli_read_text(cmd, o->prompts, "a JSONL file of prompts", &text);
        if (rc)
            return rc;
        st = lkv_eval_prompts_from_jsonl(text, o->skip, o->n_prompts, in->tok, o->instruction,
                                         &in->prompts);
        free(text);
        if (st == LKV_OK && in->prompts.count < o->n_prompts)
            fprintf(stderr, "lazykv eval: note: '%s' has %d record(s) after --skip %d, fewer "
                    "than --n-prompts %d\n", o->prompts, in->prompts.count, o->skip, o->n_prompts);
    }
    if (st == LKV_OK)
        st = lkv_eval_prompts_check(&in->prompts, in->model->cfg.vocab);
    if (st == LKV_OK)
        st = lkv_eval_prompts_fit(&in->prompts, o->s.max_tokens, in->model->cfg.context);
    return st == LKV_OK ? 0 : lib_input_error();
}

static int open_output(const char *path, FILE **out)
{
    if (path && !(*out = fopen(path, "w")))
        return cli_error(cmd, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

static int open_inputs(const eval_opts *o, eval_inputs *in)
{
    if (o->prompt_ids && lkv_eval_prompts_from_ids(o->prompt_ids, &in->prompts) != LKV_OK)
        return lib_input_error();
    char path[4096];
    int rc = cli_model_path(cmd, o->model, path, sizeof path);
    if (rc)
        return rc;
    lkv_status st = lkv_model_load(path, &in->model);
    if (st != LKV_OK)
        return cli_error(cmd, "model '%s': %s: %s", path, lkv_status_name(st), lkv_last_error());
    if (in->model->gguf && (st = lkv_tokenizer_from_gguf(in->model->gguf, &in->tok)) != LKV_OK)
        return cli_error(cmd, "tokenizer of '%s': %s: %s", path, lkv_status_name(st),
                         lkv_last_error());
    if ((rc = load_prompts(o, in)))
        return rc;
    if ((st = lkv_runtime_open(o->backend, &in->rt)) != LKV_OK)
        return cli_lib_error(cmd, st);
    if ((st = lkv_pool_for_model(o->threads, &in->pool)) != LKV_OK)
        return cli_lib_error(cmd, st);
    if ((rc = open_output(o->json, &in->json)) || (rc = open_output(o->markdown, &in->markdown)) ||
        (rc = open_output(o->plot, &in->plot)))
        return rc;
    return 0;
}

/* ---- outputs ---- */

static int print_markdown(FILE *f, const lkv_eval_results *r)
{
    lkv_eval_print_table(f, r);
    return ferror(f) ? -1 : 0;
}

/* Writes one output file and closes it; 0, or 1 when writing failed. */
static int write_output(FILE **f, const char *path, const lkv_eval_results *r,
                        int (*writer)(FILE *, const lkv_eval_results *))
{
    if (!*f)
        return 0;
    int bad = writer(*f, r) != 0;
    bad |= fclose(*f) != 0;
    *f = NULL;
    if (bad) {
        cli_error(cmd, "writing '%s' failed", path);
        return 1;
    }
    fprintf(stderr, "lazykv eval: wrote %s\n", path);
    return 0;
}

static int report(const eval_opts *o, eval_inputs *in, const lkv_eval_results *r)
{
    lkv_eval_print_table(stdout, r);
    int rc = write_output(&in->markdown, o->markdown, r, print_markdown);
    rc |= write_output(&in->json, o->json, r, lkv_eval_write_json);
    rc |= write_output(&in->plot, o->plot, r, lkv_eval_write_svg);
    if (o->check) {
        char why[512];
        if (lkv_eval_check(r, why, sizeof why))
            printf("\ncheck: full cache KL 0, agreement 1, reference reproduced; every lane "
                   "within its bound: PASS\n");
        else {
            printf("\ncheck: FAIL: %s\n", why);
            rc = 1;
        }
    }
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    eval_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    eval_inputs in;
    memset(&in, 0, sizeof in);
    if ((rc = open_inputs(&o, &in))) {
        close_inputs(&in);
        return rc;
    }
    lkv_eval_progress_printer printer;
    lkv_eval_progress_printer_init(&printer, stderr, isatty(2));
    lkv_eval_env env = {in.model, in.tok, in.rt, in.pool,
                        o.quiet ? NULL : lkv_eval_progress_print, &printer};
    lkv_eval_results r;
    lkv_status st = lkv_eval_run(&env, &o.s, &in.prompts, &r);
    lkv_eval_progress_printer_end(&printer);
    if (st != LKV_OK) {
        cli_error(cmd, "%s: %s", lkv_status_name(st), lkv_last_error());
        close_inputs(&in);
        return 1;
    }
    rc = report(&o, &in, &r);
    lkv_eval_results_free(&r);
    close_inputs(&in);
    fflush(stdout);
    return rc;
}
