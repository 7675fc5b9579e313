/* `lazykv eval`: fidelity of each eviction policy and budget against the
 * full cache on a real model. The work lives in eval/; this file is the
 * command line: options, the model and prompts, the outputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "cli.h"
#include "eval.h"

static const char *const cmd = "eval";

#define EVAL_DEFAULT_MODEL "SmolLM2-135M-Instruct.Q4_1.gguf"
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
    "                      else ~/.cache/lazykv/models, + /" EVAL_DEFAULT_MODEL "\n"
    "                      (scripts/fetch-model.sh fetches it)\n"
    "  --prompts FILE      JSONL with a \"question\" string per line (e.g. GSM8K); an\n"
    "                      \"answer\" ending in \"#### N\" grades accuracy\n"
    "  --n-prompts N       records to use (default 2)\n"
    "  --skip K            records to skip first (default 0)\n"
    "  --instruction TEXT  appended to each question on a line of its own (default:\n"
    "                      \"" EVAL_DEFAULT_INSTRUCTION "\")\n"
    "  --prompt-ids IDS    prompts as token ids, for models without a tokenizer:\n"
    "                      \"1,34,7;1,99\" (prompts separated by ';')\n\n"
    "generation\n"
    "  --max-tokens N      cap on the reference length (default 1024)\n"
    "  --ignore-eos        generate max-tokens even past end tokens\n\n"
    "lanes\n"
    "  --policies LIST     default lazy,streaming,h2o,tova,snapkv,nacl (full adds a\n"
    "                      second full cache, which must match the reference exactly)\n"
    "  --budgets LIST      slots per cache head: 25% of each prompt's prompt +\n"
    "                      reference length, or a count like 512 (default 25%,50%)\n"
    "  --window W          lazy eviction period (default the policy's, 101)\n"
    "  --alpha A           lazy importance threshold (default 1e-4)\n"
    "  --gqa MODE          grouped (default), expanded (equal memory: B x kv/q per\n"
    "                      head) or both\n"
    "  --dtype f16|f32     K/V storage (default f16)\n"
    "  --backend SPEC      default $LAZYKV_BACKEND, else auto\n"
    "  --threads N         forward-pass threads (default: the online CPUs)\n\n"
    "output\n"
    "  --json FILE         settings, summaries and per-prompt per-lane details\n"
    "  --markdown FILE     the report printed on stdout, to a file as well\n"
    "  --plot FILE.svg     KL and top-1 agreement vs budget, one line per policy\n"
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

static int parse_dtype(const char *v, lkv_eval_settings *s)
{
    if (!strcmp(v, "f16"))
        s->dtype = LKV_DTYPE_F16;
    else if (!strcmp(v, "f32"))
        s->dtype = LKV_DTYPE_F32;
    else
        return cli_error(cmd, "--dtype '%s' is not f16 or f32", v);
    return 0;
}

static int parse_value(eval_opts *o, const char *a, const char *v)
{
    lkv_eval_settings *s = &o->s;
    double real = 0.0;
    int rc = 0;
    if (!strcmp(a, "--model")) o->model = v;
    else if (!strcmp(a, "--prompts")) o->prompts = v;
    else if (!strcmp(a, "--prompt-ids")) o->prompt_ids = v;
    else if (!strcmp(a, "--instruction")) o->instruction = v;
    else if (!strcmp(a, "--backend")) o->backend = v;
    else if (!strcmp(a, "--json")) o->json = v;
    else if (!strcmp(a, "--markdown")) o->markdown = v;
    else if (!strcmp(a, "--plot")) o->plot = v;
    else if (!strcmp(a, "--n-prompts")) rc = cli_int(cmd, a, v, 1, 1 << 20, &o->n_prompts);
    else if (!strcmp(a, "--skip")) rc = cli_int(cmd, a, v, 0, 1 << 30, &o->skip);
    else if (!strcmp(a, "--threads")) rc = cli_int(cmd, a, v, 1, 4096, &o->threads);
    else if (!strcmp(a, "--max-tokens")) rc = cli_int(cmd, a, v, 1, 1 << 20, &s->max_tokens);
    else if (!strcmp(a, "--window")) rc = cli_int(cmd, a, v, 1, 1 << 24, &s->window);
    else if (!strcmp(a, "--alpha")) {
        rc = cli_real(cmd, a, v, 0.0, 1.0, &real);
        s->alpha = real;
    }
    else if (!strcmp(a, "--dtype")) rc = parse_dtype(v, s);
    else if (!strcmp(a, "--policies")) rc = lkv_eval_parse_policies(v, s) ? lib_input_error() : 0;
    else if (!strcmp(a, "--budgets")) rc = lkv_eval_parse_budgets(v, s) ? lib_input_error() : 0;
    else if (!strcmp(a, "--gqa")) rc = lkv_eval_parse_gqa(v, s) ? lib_input_error() : 0;
    return rc;
}

static int takes_value(const char *flag)
{
    static const char *const flags[] = {
        "--model",      "--prompts",    "--prompt-ids", "--instruction", "--backend",
        "--json",       "--markdown",   "--plot",       "--n-prompts",   "--skip",
        "--threads",    "--max-tokens", "--window",     "--alpha",       "--dtype",
        "--policies",   "--budgets",    "--gqa"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(flag, flags[i]))
            return 1;
    return 0;
}

/* 0 to run, 1 after --help, 2 on a bad option. */
static int parse(int argc, char **argv, eval_opts *o)
{
    memset(o, 0, sizeof *o);
    lkv_eval_settings_init(&o->s);
    o->n_prompts = 2;
    o->instruction = EVAL_DEFAULT_INSTRUCTION;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        int *flag = !strcmp(a, "--ignore-eos") ? &o->s.ignore_eos
                  : !strcmp(a, "--quiet")      ? &o->quiet
                  : !strcmp(a, "--check")      ? &o->check
                                               : NULL;
        if (flag) {
            *flag = 1;
            continue;
        }
        if (a[0] != '-')
            return cli_error(cmd, "unexpected argument '%s' (see --help)", a);
        if (!takes_value(a))
            return cli_error(cmd, "unknown option '%s' (see --help)", a);
        if (!v)
            return cli_error(cmd, "%s needs a value (see --help)", a);
        int rc = parse_value(o, a, v);
        if (rc)
            return rc;
        i++;
    }
    if (!o->prompts == !o->prompt_ids)
        return cli_error(cmd, o->prompts ? "give --prompts or --prompt-ids, not both"
                                         : "no prompts: give --prompts FILE.jsonl (e.g. GSM8K) "
                                           "or --prompt-ids \"1,34,7;1,99\"");
    return 0;
}

/* ---- the model ---- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int model_path(const eval_opts *o, char *buf, size_t len)
{
    int n;
    if (o->model)
        n = snprintf(buf, len, "%s", o->model);
    else if (env("LAZYKV_MODEL_DIR"))
        n = snprintf(buf, len, "%s/%s", env("LAZYKV_MODEL_DIR"), EVAL_DEFAULT_MODEL);
    else if (env("XDG_CACHE_HOME"))
        n = snprintf(buf, len, "%s/lazykv/models/%s", env("XDG_CACHE_HOME"), EVAL_DEFAULT_MODEL);
    else if (env("HOME"))
        n = snprintf(buf, len, "%s/.cache/lazykv/models/%s", env("HOME"), EVAL_DEFAULT_MODEL);
    else
        return cli_error(cmd, "no --model given and none of LAZYKV_MODEL_DIR, XDG_CACHE_HOME, "
                              "HOME is set to find " EVAL_DEFAULT_MODEL);
    if (n < 0 || (size_t)n >= len)
        return cli_error(cmd, "model path '%.64s...' is too long", buf);
    struct stat sb;
    if (stat(buf, &sb) != 0)
        return cli_error(cmd, "model file '%s': %s: run scripts/fetch-model.sh to fetch "
                              EVAL_DEFAULT_MODEL ", or pass --model PATH", buf, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return cli_error(cmd, "model '%s' is not a regular file (--model takes the path of a "
                              ".gguf or llama2.c .bin)", buf);
    return 0;
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
    lkv_pool_free(in->pool);
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
        int rc = cli_read_file(cmd, o->prompts, &text);
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
    int rc = model_path(o, path, sizeof path);
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
    if ((st = lkv_pool_create(o->threads, &in->pool)) != LKV_OK)
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
