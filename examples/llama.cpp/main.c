/* lazykv-llama: LazyEviction (or another lazykv policy) deciding which KV
 * cells llama.cpp keeps, written against llama.h and lazykv.h only.
 *
 *   lazykv-llama --model GGUF (--prompt TEXT | --gsm8k FILE [--skip N])
 *                [--policy lazy] [--budget 50%|SLOTS] [--window W]
 *                [--param KEY=VALUE]... [--max-tokens N] [--ignore-eos]
 *                [--backend auto] [--threads N]
 *   lazykv-llama --eval --model GGUF --gsm8k FILE [--skip N] [--n-prompts N]
 *                [--policies lazy,h2o,tova,streaming] [--budgets 25%,50%]
 *                [--max-tokens N] [--ignore-eos] [--markdown FILE]
 *
 * Without --eval it answers one prompt (SmolLM2's chat format) and prints
 * what `lazykv generate` prints: the text, tokens/s, the KV cells held at
 * peak against llama.cpp's full cache, the evictions. A budget given as a
 * share is of the prompt plus --max-tokens. With --eval it measures the
 * fidelity of every policy x budget against llama.cpp's own full cache
 * (fidelity.h). Exit 0 on success; 1 when a run fails or a check does not
 * hold (a lane above its peak bound, the full-cache lane not equal to plain
 * llama.cpp); 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fidelity.h"
#include "session.h"

enum { MAX_LIST = 16, MAX_PARAMS = 16 };

typedef struct options {
    const char *model, *prompt, *gsm8k, *policy, *budget, *backend, *markdown;
    const char *params[MAX_PARAMS];
    int n_params, skip, n_prompts, eval, ignore_eos, threads;
    int32_t window, max_tokens;
    const char *policies[MAX_LIST];
    int n_policies;
    double shares[MAX_LIST];
    int n_shares;
} options;

static const char usage[] =
    "usage: lazykv-llama --model GGUF (--prompt TEXT | --gsm8k FILE [--skip N])\n"
    "         [--policy lazy] [--budget 50%|SLOTS] [--window W] [--param KEY=VALUE]...\n"
    "         [--max-tokens N] [--ignore-eos] [--backend auto] [--threads N]\n"
    "       lazykv-llama --eval --model GGUF --gsm8k FILE [--skip N] [--n-prompts N]\n"
    "         [--policies lazy,h2o,tova,streaming] [--budgets 25%,50%] [--max-tokens N]\n"
    "         [--ignore-eos] [--markdown FILE]\n";

static int bad_usage(const char *what, const char *value)
{
    fprintf(stderr, "lazykv-llama: %s '%s'\n%s", what, value ? value : "", usage);
    return 2;
}

static int parse_int(const char *text, int lo, int *out)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > 1 << 24)
        return 1;
    *out = (int)v;
    return 0;
}

/* "25%" -> 0.25; 0 when it is no share in (0%, 100%]. */
static double share_of(const char *text)
{
    char *end = NULL;
    double v = strtod(text, &end);
    return end != text && end[0] == '%' && end[1] == '\0' && v > 0 && v <= 100 ? v / 100 : 0;
}

static int split_list(char *text, const char **items, int *n)
{
    *n = 0;
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_LIST)
            return 1;
        items[(*n)++] = tok;
    }
    return *n == 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    static char policies[256] = "lazy,h2o,tova,streaming", budgets[256] = "25%,50%";
    *o = (options){.policy = "lazy", .budget = "50%", .backend = "auto", .threads = 2,
                   .max_tokens = 256, .n_prompts = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int flag = !strcmp(a, "--eval") || !strcmp(a, "--ignore-eos");
        if (!flag && !v)
            return bad_usage("missing value after", a);
        int ok = 1, n = 0;
        if (!strcmp(a, "--eval")) o->eval = 1;
        else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = 1;
        else if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--gsm8k")) o->gsm8k = v;
        else if (!strcmp(a, "--policy")) o->policy = v;
        else if (!strcmp(a, "--budget")) o->budget = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--markdown")) o->markdown = v;
        else if (!strcmp(a, "--param")) ok = o->n_params < MAX_PARAMS && strchr(v, '='), o->params[o->n_params++] = v;
        else if (!strcmp(a, "--skip")) ok = !parse_int(v, 0, &o->skip);
        else if (!strcmp(a, "--n-prompts")) ok = !parse_int(v, 1, &o->n_prompts);
        else if (!strcmp(a, "--threads")) ok = !parse_int(v, 1, &o->threads);
        else if (!strcmp(a, "--window")) ok = !parse_int(v, 1, &n), o->window = n;
        else if (!strcmp(a, "--max-tokens")) ok = !parse_int(v, 1, &n), o->max_tokens = n;
        else if (!strcmp(a, "--policies")) ok = strlen(v) < sizeof policies, snprintf(policies, sizeof policies, "%s", v);
        else if (!strcmp(a, "--budgets")) ok = strlen(v) < sizeof budgets, snprintf(budgets, sizeof budgets, "%s", v);
        else return bad_usage("unknown option", a);
        if (!ok)
            return bad_usage(a, v);
        i += !flag;
    }
    const char *shares[MAX_LIST];
    if (split_list(policies, o->policies, &o->n_policies) ||
        split_list(budgets, shares, &o->n_shares))
        return bad_usage("an empty or too long list in", "--policies / --budgets");
    for (int i = 0; i < o->n_shares; i++)
        if ((o->shares[i] = share_of(shares[i])) == 0)
            return bad_usage("--budgets takes shares like 25%, not", shares[i]);
    if (!o->model)
        return bad_usage("--model is required", "");
    if (!o->prompt == !o->gsm8k || (o->eval && !o->gsm8k))
        return bad_usage("give one of --prompt and --gsm8k (--eval reads --gsm8k)", "");
    return 0;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

/* The policy of --policy, --budget (slots, or a share of `total`), --window
 * and --param. */
static int policy_of(const options *o, int32_t total, lkv_policy_params *p)
{
    lkv_policy_kind kind;
    lkv_status st = lkv_policy_from_name(o->policy, &kind);
    if (st == LKV_OK)
        st = lkv_policy_init(p, kind);
    if (st == LKV_OK && kind != LKV_POLICY_FULL && kind != LKV_POLICY_NACL) {
        double share = share_of(o->budget);
        int slots = 0;
        if (share > 0)
            fidelity_budget(p, share, total, o->window);
        else if (!parse_int(o->budget, 1, &slots))
            fidelity_set_budget(p, slots, o->window);
        else
            return bad_usage("--budget takes slots or a share like 50%, not", o->budget) != 0;
    }
    for (int i = 0; st == LKV_OK && i < o->n_params; i++) {
        char key[64];
        const char *eq = strchr(o->params[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - o->params[i]), o->params[i]);
        st = lkv_policy_set(p, key, eq + 1);
    }
    if (st != LKV_OK)
        fprintf(stderr, "lazykv-llama: %s\n", lkv_last_error());
    return st != LKV_OK;
}

static void print_piece(const struct llama_vocab *vocab, llama_token tok)
{
    char buf[256];
    int32_t n = llama_token_to_piece(vocab, tok, buf, sizeof buf, 0, false);
    if (n > 0)
        fwrite(buf, 1, (size_t)n, stdout);
    fflush(stdout);
}

static int generate(const options *o, struct llama_model *model, const llama_token *prompt,
                    int32_t p)
{
    lkv_policy_params pol;
    if (policy_of(o, p + o->max_tokens, &pol))
        return 1;
    int64_t bound = 0, cap = 0;
    if (lkv_policy_peak_slots(&pol, p, o->max_tokens - 1, &bound, &cap) != LKV_OK) {
        fprintf(stderr, "lazykv-llama: %s\n", lkv_last_error());
        return 1;
    }
    char err[512];
    session s;
    /* llama.cpp gets only the cells the policy can ever hold */
    if (session_open(model, &pol, o->backend, (int32_t)bound, (int32_t)cap, p, o->threads, &s, err,
                     sizeof err)) {
        fprintf(stderr, "lazykv-llama: %s\n", err);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    double t0 = clock_seconds();
    int bad = session_decode(&s, prompt, p), g = 0, eos = 0;
    double t1 = clock_seconds(), lkv_prefill = session_counts(&s).seconds;
    while (!bad && g < o->max_tokens) {
        llama_token tok = session_argmax(session_logits(&s), s.vocab);
        g++;
        if (!o->ignore_eos && llama_vocab_is_eog(vocab, tok)) {
            eos = 1;
            break;
        }
        print_piece(vocab, tok);
        if (g < o->max_tokens)
            bad = session_decode(&s, &tok, 1);
    }
    double t2 = clock_seconds();
    if (bad) {
        fprintf(stderr, "\nlazykv-llama: %s\n", s.error);
        session_close(&s);
        return 1;
    }
    bridge_counts c = session_counts(&s);
    lkv_cache_config cfg;
    lkv_cache_get_config(bridge_cache(s.br), &cfg);
    int32_t steps = g > 1 ? g - 1 : 0, full = p + steps;
    printf("\n\nmodel      %d layers, %d query / %d KV heads; llama.cpp, flash attention off, "
           "%d threads\n", cfg.layers, cfg.q_heads, cfg.kv_heads, o->threads);
    printf("policy     %s: budget %d, window %d (lazykv %s, per-token decisions)\n", o->policy,
           pol.budget, pol.window, bridge_backend(s.br));
    printf("prompt     %d tokens, prefill %.3f s\n", p, t1 - t0);
    printf("generated  %d tokens (%s), decode %d steps in %.3f s (%.1f tokens/s; %.0f%% of it in "
           "lazykv's observe and plan)\n", g, eos ? "stopped at an end token" : "--max-tokens",
           steps, t2 - t1, steps / (t2 - t1 > 0 ? t2 - t1 : 1),
           100 * (c.seconds - lkv_prefill) / (t2 - t1 > 0 ? t2 - t1 : 1));
    printf("KV cells   peak %d (bound %lld); llama.cpp context of %u cells; the full cache "
           "holds %d\n", c.peak, (long long)bound, llama_n_ctx(s.ctx), full);
    printf("KV memory  %s: %d cells at peak vs %d for the full cache: %.1f%% memory saved "
           "(%lld positions evicted in %lld plans)\n", o->policy, c.peak, full,
           full > 0 ? 100.0 * (full - c.peak) / full : 0.0, (long long)c.evicted,
           (long long)c.plans);
    if (c.peak > bound) {
        fprintf(stderr, "lazykv-llama: %d cells at peak exceed the bound %lld\n", c.peak,
                (long long)bound);
        bad = 1;
    }
    session_close(&s);
    return bad;
}

static int encode_all(const options *o, struct llama_model *model, llama_token ***ids,
                      int32_t **lens, int *n)
{
    char err[512], **texts = NULL;
    const char *one[1] = {o->prompt};
    if (o->gsm8k && prompts_read_gsm8k(o->gsm8k, o->skip, o->n_prompts, &texts, n, err, sizeof err)) {
        fprintf(stderr, "lazykv-llama: %s\n", err);
        return 1;
    }
    if (!o->gsm8k)
        *n = 1;
    *ids = calloc((size_t)*n, sizeof **ids);
    *lens = calloc((size_t)*n, sizeof **lens);
    int bad = !*ids || !*lens;
    for (int i = 0; i < *n && !bad; i++)
        if ((bad = prompts_encode_chat(model, texts ? texts[i] : one[i], &(*ids)[i], &(*lens)[i], err,
                                       sizeof err)))
            fprintf(stderr, "lazykv-llama: %s\n", err);
    prompts_free(texts, texts ? *n : 0);
    return bad;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    llama_log_set(quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    /* the plain CPU path: repacked and AMX weight buffers crash 0.3.36 on
     * some AMX machines (scripts/check-llamacpp.py) */
    mp.use_extra_bufts = false;
    struct llama_model *model = llama_model_load_from_file(o.model, mp);
    if (!model) {
        fprintf(stderr, "lazykv-llama: llama.cpp cannot load --model '%s'\n", o.model);
        llama_backend_free();
        return 1;
    }
    llama_token **ids = NULL;
    int32_t *lens = NULL;
    int n = 0;
    rc = encode_all(&o, model, &ids, &lens, &n);
    if (!rc && !o.eval) {
        rc = generate(&o, model, ids[0], lens[0]);
    } else if (!rc) {
        fidelity_settings fs = {.model = model, .backend = o.backend, .threads = o.threads,
                                .max_tokens = o.max_tokens, .ignore_eos = o.ignore_eos,
                                .policies = o.policies, .n_policies = o.n_policies,
                                .shares = o.shares, .n_shares = o.n_shares, .window = o.window};
        FILE *md = o.markdown ? fopen(o.markdown, "w") : NULL;
        if (o.markdown && !md)
            fprintf(stderr, "lazykv-llama: cannot write --markdown '%s'\n", o.markdown);
        rc = (o.markdown && !md) || fidelity_run(&fs, ids, lens, n, md);
        if (md)
            fclose(md);
    }
    for (int i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
    free(lens);
    llama_model_free(model);
    llama_backend_free();
    return rc ? 1 : 0;
}
