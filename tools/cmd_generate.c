/* `lazykv generate`: a real model decoding through an evicting cache. Text
 * (or token ids) in, text out as it is generated, then what the cache held
 * against what the full cache would have held for the same tokens. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eval.h"
#include "forward.h"
#include "gen.h"
#include "model.h"
#include "pool.h"
#include "tokenizer.h"
#include "clock.h"

static const char *const cmd = "generate";

#define GEN_MAX_PARAMS 32

static const char *const help =
    "usage: lazykv generate [options] (--prompt TEXT | --chat TEXT | --prompt-file FILE |\n"
    "                                  --prompt-ids IDS)\n\n"
    "Runs a Llama-architecture model (GGUF, or a llama2.c checkpoint) on the CPU with\n"
    "every attention going through a lazykv cache that evicts by the chosen policy.\n"
    "Text streams to stdout; the statistics go to stderr.\n\n"
    "model and prompt\n"
    "  --model PATH        default $LAZYKV_MODEL_DIR, else $XDG_CACHE_HOME/lazykv/models,\n"
    "                      else ~/.cache/lazykv/models, + /" CLI_DEFAULT_MODEL "\n"
    "                      (scripts/fetch-model.sh fetches it)\n"
    "  --prompt TEXT       raw text (control-token text such as <|im_start|> is the token)\n"
    "  --chat TEXT         one user turn through the model's chat template\n"
    "  --system TEXT       the chat's system message (default: the template's)\n"
    "  --prompt-file FILE  raw text from a file ('-' is standard input)\n"
    "  --prompt-ids IDS    token ids, comma-separated (models without a tokenizer)\n"
    "  --echo              print the prompt (text, or its ids on a line of their own) first\n\n"
    "decoding\n"
    "  --max-tokens N      tokens to generate (default 256); stops early at an end token\n"
    "  --ignore-eos        do not stop at end tokens\n"
    "  --temperature T     0 (default) is greedy\n"
    "  --top-p P           nucleus cut when sampling (default 1)\n"
    "  --seed S            sampling seed (default 1): a seed gives the same tokens\n"
    "  --threads N         forward-pass threads, 1..256 (default: the online CPUs)\n\n"
    "cache\n"
    "  --policy NAME       lazy (default), full, streaming, h2o, tova, snapkv, nacl, rkv\n"
    "  --budget N|P%       slots kept per cache head; P% of prompt + max-tokens, rounded\n"
    "                      up (default 50%); at most prompt + max-tokens\n"
    "  --window W          lazy eviction period / snapkv window (default: the policy's,\n"
    "                      101 / 32, but at most half the budget)\n"
    "  --alpha A           lazy importance threshold\n"
    "  --param KEY=VALUE   any other policy parameter (schedule=peak for lazy:\n"
    "                      lazykv's variant that holds at most B; sinks, recent, ...)\n"
    "  --gqa grouped|expanded  (default grouped)\n"
    "  --eviction inline|background  when a step's evictions run: inside its last\n"
    "                      layer's call (default), or off it: on a second device\n"
    "                      queue layer by layer (a GPU), else on the cache's helper\n"
    "                      thread, overlapping the LM head and sampling; same tokens\n"
    "  --placement compact|holes|paged  what an eviction does with the kept K/V:\n"
    "                      shift them down (default), or leave them and fill the\n"
    "                      holes with new tokens, or that in a pool of blocks\n"
    "                      that rows take as they grow and give back when an\n"
    "                      eviction empties them (paged); same tokens\n"
    "  --block-size N      paged: slots per block (default 16)\n"
    "  --dtype f32|f16|bf16  K/V storage (default f16)\n"
    "  --backend SPEC      default $LAZYKV_BACKEND, else auto\n\n"
    "output\n"
    "  --ids               print token ids (space-separated, one line) instead of text\n"
    "                      (always, for a model without a tokenizer)\n"
    "  --logits-out FILE   raw little-endian f32 [generated][vocab]: the logits each\n"
    "                      generated token was chosen from\n"
    "  --quiet             no statistics\n";

typedef struct gen_opts {
    const char *model, *backend, *logits_out;
    gen_prompt_spec prompt;
    gen_cache_spec cache;
    gen_param params[GEN_MAX_PARAMS];
    int32_t max_tokens, threads;
    double temperature, top_p;
    uint64_t seed;
    int ignore_eos, ids, quiet, echo;
} gen_opts;

/* ---- command line ---- */

static int parse_seed(void *opts, const char *flag, const char *text)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-')
        return cli_error(cmd, "%s '%s' is not an integer in 0..2^64-1", flag, text);
    ((gen_opts *)opts)->seed = (uint64_t)v;
    return 0;
}

static int parse_top_p(void *opts, const char *flag, const char *v)
{
    double *top_p = &((gen_opts *)opts)->top_p;
    int rc = cli_real(cmd, flag, v, 0, 1, top_p);
    if (rc == 0 && *top_p <= 0)
        rc = cli_error(cmd, "%s '%s' is not a number in (0, 1]", flag, v);
    return rc;
}

static int parse_budget(void *opts, const char *flag, const char *v)
{
    gen_cache_spec *c = &((gen_opts *)opts)->cache;
    c->budget_given = 1;
    return lkv_budget_parse(v, flag, &c->budget) == LKV_OK ? 0
                                                         : cli_error(cmd, "%s", lkv_last_error());
}

/* `arg` is the whole argument, for the message. */
static int add_param(gen_opts *o, const char *flag, const char *arg, const char *key,
                     size_t key_len, const char *value)
{
    int n = o->cache.n_params;
    if (n == GEN_MAX_PARAMS)
        return cli_error(cmd, "more than %d policy parameters given", GEN_MAX_PARAMS);
    if (key_len == 0 || key_len >= sizeof o->params[n].key)
        return cli_error(cmd, "%s '%s': the parameter name is empty or too long", flag, arg);
    memcpy(o->params[n].key, key, key_len);
    o->params[n].key[key_len] = '\0';
    o->params[n].value = value;
    o->params[n].flag = flag;
    o->cache.n_params = n + 1;
    return 0;
}

/* --window W and --alpha A: the parameter named after the flag. */
static int parse_named(void *opts, const char *flag, const char *v)
{
    return add_param(opts, flag, v, flag + 2, strlen(flag + 2), v);
}

static int parse_param(void *opts, const char *flag, const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq)
        return cli_error(cmd, "%s '%s' is not KEY=VALUE", flag, v);
    return add_param(opts, flag, v, v, (size_t)(eq - v), eq + 1);
}

static int parse_choice(const char *flag, const char *v, const char *a, const char *b, int *out)
{
    if (strcmp(v, a) && strcmp(v, b))
        return cli_error(cmd, "%s '%s' is not %s or %s", flag, v, a, b);
    *out = strcmp(v, a) != 0;
    return 0;
}

static int parse_gqa(void *opts, const char *flag, const char *v)
{
    int expanded = 0, rc = parse_choice(flag, v, "grouped", "expanded", &expanded);
    ((gen_opts *)opts)->cache.gqa = expanded ? LKV_GQA_EXPANDED : LKV_GQA_GROUPED;
    return rc;
}

static int parse_eviction(void *opts, const char *flag, const char *v)
{
    int inline_ = 0, rc = parse_choice(flag, v, "background", "inline", &inline_);
    ((gen_opts *)opts)->cache.eviction = inline_ ? LKV_EVICTION_INLINE : LKV_EVICTION_BACKGROUND;
    return rc;
}

static int parse_placement(void *opts, const char *flag, const char *v)
{
    if (lkv_placement_from_name(v, &((gen_opts *)opts)->cache.placement) != LKV_OK)
        return cli_error(cmd, "%s '%s' is not compact, holes or paged", flag, v);
    return 0;
}

static int parse_dtype(void *opts, const char *flag, const char *v)
{
    return cli_dtype("generate", flag, v, &((gen_opts *)opts)->cache.dtype);
}

#define AT(field) offsetof(gen_opts, field)

static const cli_option options[] = {
    {"--ignore-eos", CLI_SWITCH, AT(ignore_eos), 0, 0, NULL},
    {"--ids", CLI_SWITCH, AT(ids), 0, 0, NULL},
    {"--quiet", CLI_SWITCH, AT(quiet), 0, 0, NULL},
    {"--echo", CLI_SWITCH, AT(echo), 0, 0, NULL},
    {"--model", CLI_TEXT, AT(model), 0, 0, NULL},
    {"--prompt", CLI_TEXT, AT(prompt.text), 0, 0, NULL},
    {"--chat", CLI_TEXT, AT(prompt.chat), 0, 0, NULL},
    {"--system", CLI_TEXT, AT(prompt.system), 0, 0, NULL},
    {"--prompt-file", CLI_TEXT, AT(prompt.file), 0, 0, NULL},
    {"--prompt-ids", CLI_TEXT, AT(prompt.ids), 0, 0, NULL},
    {"--max-tokens", CLI_INT, AT(max_tokens), 0, 1 << 24, NULL},
    {"--temperature", CLI_REAL, AT(temperature), 0, 100, NULL},
    {"--top-p", CLI_CALL, 0, 0, 0, parse_top_p},
    {"--seed", CLI_CALL, 0, 0, 0, parse_seed},
    {"--threads", CLI_INT, AT(threads), 1, CLI_MAX_THREADS, NULL},
    {"--policy", CLI_TEXT, AT(cache.policy), 0, 0, NULL},
    {"--budget", CLI_CALL, 0, 0, 0, parse_budget},
    {"--window", CLI_CALL, 0, 0, 0, parse_named},
    {"--alpha", CLI_CALL, 0, 0, 0, parse_named},
    {"--param", CLI_CALL, 0, 0, 0, parse_param},
    {"--gqa", CLI_CALL, 0, 0, 0, parse_gqa},
    {"--eviction", CLI_CALL, 0, 0, 0, parse_eviction},
    {"--placement", CLI_CALL, 0, 0, 0, parse_placement},
    {"--block-size", CLI_INT, AT(cache.block_size), 1, 1 << 24, NULL},
    {"--dtype", CLI_CALL, 0, 0, 0, parse_dtype},
    {"--backend", CLI_TEXT, AT(backend), 0, 0, NULL},
    {"--logits-out", CLI_TEXT, AT(logits_out), 0, 0, NULL},
};

/* 0 to run, 1 after --help, else the exit code. */
static int parse(int argc, char **argv, gen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_tokens = 256;
    o->top_p = 1.0;
    o->seed = 1;
    o->cache = (gen_cache_spec){.policy = "lazy", .budget = {.fraction = 0.5, .label = "50%"},
                                .params = o->params, .dtype = LKV_DTYPE_F16,
                                .gqa = LKV_GQA_GROUPED};
    int rc = cli_parse(cmd, argc, argv, options, sizeof options / sizeof options[0], o, help);
    if (rc == 0)
        rc = gen_prompt_check(&o->prompt);
    return rc ? rc : gen_cache_check(&o->cache);
}

/* ---- one run ---- */

typedef struct gen_run {
    lkv_model *model;
    lkv_tokenizer *tok;
    int32_t *prompt, n_prompt;
    char *prompt_text;
    char *prompt_file;      /* --prompt-file's contents */
    lkv_runtime *rt;
    lkv_cache *cache;
    lkv_pool *pool;
    lkv_forward *fw;
    gen_sampler sampler;
    float *logits;
    FILE *logits_file;
    char *piece;
    size_t piece_cap;
    /* results */
    int32_t generated, steps, end_token;
    double prefill_s, decode_s;
} gen_run;

static void run_free(gen_run *r)
{
    if (r->logits_file)
        fclose(r->logits_file);
    free(r->piece);
    free(r->logits);
    gen_sampler_free(&r->sampler);
    lkv_forward_free(r->fw);
    lkv_pool_release(r->pool);
    lkv_cache_destroy(r->cache);
    lkv_runtime_close(r->rt);
    free(r->prompt_text);
    free(r->prompt_file);
    free(r->prompt);
    lkv_tokenizer_free(r->tok);
    lkv_model_free(r->model);
}

static int load(const gen_opts *o, const char *path, gen_run *r)
{
    lkv_status st = lkv_model_load(path, &r->model);
    if (st != LKV_OK)
        return cli_error(cmd, "model '%s': %s: %s", path, lkv_status_name(st), lkv_last_error());
    if (r->model->gguf) {
        st = lkv_tokenizer_from_gguf(r->model->gguf, &r->tok);
        if (st != LKV_OK)
            return cli_error(cmd, "model '%s': tokenizer: %s: %s", path, lkv_status_name(st),
                             lkv_last_error());
    }
    int rc = gen_prompt_ids(&o->prompt, r->model, r->tok, &r->prompt, &r->n_prompt,
                            &r->prompt_text);
    if (rc)
        return rc;
    int64_t total = (int64_t)r->n_prompt + o->max_tokens;
    if (total > r->model->cfg.context)
        return cli_error(cmd, "%d prompt tokens + --max-tokens %d = %lld exceeds the context of "
                              "model '%s' (%d tokens)",
                         (int)r->n_prompt, (int)o->max_tokens, (long long)total, r->model->name,
                         (int)r->model->cfg.context);
    return 0;
}

static int prepare(const gen_opts *o, gen_run *r)
{
    lkv_cache_config cfg;
    int rc = gen_cache_config(&o->cache, r->model, r->n_prompt, o->max_tokens, &cfg);
    if (rc)
        return rc;
    lkv_status st = lkv_runtime_open(o->backend, &r->rt);
    if (st == LKV_OK)
        st = lkv_cache_create(r->rt, &cfg, &r->cache);
    if (st == LKV_OK)
        st = lkv_pool_for_model(o->threads, &r->pool);
    if (st == LKV_OK)
        st = lkv_forward_create(r->model, r->pool, 1, r->n_prompt, &r->fw);
    if (st != LKV_OK)
        return cli_lib_error(cmd, st);
    rc = gen_sampler_init(&r->sampler, r->model->cfg.vocab, o->temperature, o->top_p, o->seed);
    if (rc)
        return rc;
    r->logits = malloc(sizeof(float) * (size_t)r->model->cfg.vocab);
    r->piece_cap = 256;
    r->piece = malloc(r->piece_cap);
    if (!r->logits || !r->piece)
        return cli_error(cmd, "out of host memory for the logits (vocab %d)",
                         (int)r->model->cfg.vocab);
    if (o->logits_out && !(r->logits_file = fopen(o->logits_out, "wb")))
        return cli_error(cmd, "--logits-out '%s': cannot open for writing: %s", o->logits_out,
                         strerror(errno));
    return 0;
}

/* The file format is little-endian whatever the host. */
static int write_logits(gen_run *r, const char *path)
{
    int32_t n = r->model->cfg.vocab;
    const uint16_t probe = 1;
    if (*(const unsigned char *)&probe == 0) {
        for (int32_t i = 0; i < n; i++) {
            unsigned char b[4], s[4];
            memcpy(b, &r->logits[i], 4);
            s[0] = b[3], s[1] = b[2], s[2] = b[1], s[3] = b[0];
            if (fwrite(s, 1, 4, r->logits_file) != 4)
                return cli_error(cmd, "--logits-out '%s': write failed: %s", path, strerror(errno));
        }
        return 0;
    }
    if (fwrite(r->logits, sizeof(float), (size_t)n, r->logits_file) != (size_t)n)
        return cli_error(cmd, "--logits-out '%s': write failed: %s", path, strerror(errno));
    return 0;
}

static int piece_of(gen_run *r, int32_t id, int show_special, size_t *out_len)
{
    size_t len = 0;
    lkv_status st = lkv_tokenizer_piece(r->tok, id, show_special, r->piece, r->piece_cap, &len);
    if (st == LKV_OK && len > r->piece_cap) {
        char *grown = realloc(r->piece, len);
        if (!grown)
            return cli_error(cmd, "out of host memory for the text of token %d", (int)id);
        r->piece = grown;
        r->piece_cap = len;
        st = lkv_tokenizer_piece(r->tok, id, show_special, r->piece, r->piece_cap, &len);
    }
    if (st != LKV_OK)
        return cli_lib_error(cmd, st);
    *out_len = len;
    return 0;
}

static int echo_prompt(const gen_opts *o, gen_run *r, gen_stream *out)
{
    if (o->ids || !r->tok) {
        for (int32_t i = 0; i < r->n_prompt; i++)
            printf("%s%d", i ? " " : "", (int)r->prompt[i]);
        printf("\n");
        fflush(stdout);
        return 0;
    }
    if (r->prompt_text) {
        gen_stream_put(out, r->prompt_text, strlen(r->prompt_text));
        return 0;
    }
    for (int32_t i = 0; i < r->n_prompt; i++) {
        size_t len;
        int rc = piece_of(r, r->prompt[i], 1, &len);
        if (rc)
            return rc;
        gen_stream_put(out, r->piece, len);
    }
    return 0;
}

static int emit(const gen_opts *o, gen_run *r, gen_stream *out, int32_t id)
{
    if (o->ids || !r->tok) {
        printf("%s%d", r->generated > 1 ? " " : "", (int)id);
        fflush(stdout);
        return 0;
    }
    size_t len;
    int rc = piece_of(r, id, 0, &len);
    if (rc == 0)
        gen_stream_put(out, r->piece, len);
    return rc;
}

static int decode_loop(const gen_opts *o, gen_run *r, lkv_lane *lane, gen_stream *out)
{
    for (;;) {
        if (r->generated == o->max_tokens)
            return 0;
        int32_t next = gen_sample(&r->sampler, r->logits);
        int rc = r->logits_file ? write_logits(r, o->logits_out) : 0;
        r->generated++;
        if (rc == 0)
            rc = emit(o, r, out, next);
        if (rc)
            return rc;
        if (!o->ignore_eos && r->tok && lkv_tokenizer_is_end(r->tok, next)) {
            r->end_token = next;
            return 0;
        }
        if (r->generated == o->max_tokens)
            return 0;
        double t0 = lkv_clock_seconds();
        lkv_status st = lkv_forward_step(r->fw, lane, 1, &next, r->logits);
        r->decode_s += lkv_clock_seconds() - t0;
        if (st != LKV_OK)
            return cli_error(cmd, "decode step %d: %s: %s", (int)r->steps + 1,
                             lkv_status_name(st), lkv_last_error());
        r->steps++;
    }
}

static int generate(const gen_opts *o, gen_run *r)
{
    gen_stream out;
    gen_stream_init(&out, stdout);
    r->end_token = -1;
    int rc = o->echo ? echo_prompt(o, r, &out) : 0;
    if (rc)
        return rc;
    lkv_lane lane = {r->cache, 0, 0};
    double t0 = lkv_clock_seconds();
    lkv_status st = lkv_forward_prefill(r->fw, &lane, 1, r->prompt, r->n_prompt,
                                        o->max_tokens > 0 ? r->logits : NULL);
    r->prefill_s = lkv_clock_seconds() - t0;
    if (st != LKV_OK)
        return cli_error(cmd, "prefill of %d tokens: %s: %s", (int)r->n_prompt,
                         lkv_status_name(st), lkv_last_error());
    rc = decode_loop(o, r, &lane, &out);
    gen_stream_finish(&out);
    if (out.last != '\n' && (o->ids || !r->tok || out.last != -1))
        putchar('\n');
    fflush(stdout);
    if (rc == 0 && r->logits_file && fflush(r->logits_file) != 0)
        rc = cli_error(cmd, "--logits-out '%s': write failed: %s", o->logits_out,
                       strerror(errno));
    return rc;
}

/* ---- the report ---- */

static double rate(double n, double s) { return s > 0.0 ? n / s : 0.0; }

static void report_run(const gen_opts *o, const gen_run *r, const lkv_cache_config *cfg)
{
    const lkv_model *m = r->model;
    lkv_runtime_info info;
    lkv_runtime_get_info(r->rt, &info);
    char policy[320];
    gen_policy_line(cfg, gen_cache_window_given(&o->cache), policy, sizeof policy);
    FILE *f = stderr;
    fprintf(f, "\nmodel      %s (%s): %d layers, %d query / %d KV heads, head_dim %d, vocab %d; "
               "%d threads\n",
            m->name, m->format == LKV_MODEL_GGUF ? "GGUF" : "llama2.c", m->cfg.layers,
            m->cfg.q_heads, m->cfg.kv_heads, m->cfg.head_dim, m->cfg.vocab,
            lkv_pool_threads(r->pool));
    fprintf(f, "backend    %s:%d %s\n           %s\n", info.backend, info.device,
            info.device_name, info.selection);
    fprintf(f, "policy     %s; %s K/V, %s GQA, placement %s\n", policy,
            lkv_dtype_name(cfg->dtype),
            cfg->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded",
            lkv_placement_name(cfg->placement));
    fprintf(f, "prompt     %d tokens, prefill %.3f s (%.1f tokens/s)\n", (int)r->n_prompt,
            r->prefill_s, rate(r->n_prompt, r->prefill_s));
    fprintf(f, "generated  %d tokens", (int)r->generated);
    if (r->end_token >= 0)
        fprintf(f, " (stopped at end token %d)", (int)r->end_token);
    if (r->steps > 0)
        fprintf(f, ", decode %d steps in %.3f s (%.1f tokens/s; %.0f%% of it in lazykv's "
                   "cache calls: attention, observation, eviction)\n",
                (int)r->steps, r->decode_s, rate(r->steps, r->decode_s),
                r->decode_s > 0.0 ? 100.0 * lkv_forward_cache_seconds(r->fw) / r->decode_s : 0.0);
    else
        fprintf(f, ", no decode step\n");
}

/* What the cache held against the full cache of the same tokens. */
static void report_memory(const gen_run *r, const lkv_cache_config *cfg)
{
    lkv_cache_stats s;
    lkv_cache_get_stats(r->cache, &s);
    int32_t heads = lkv_cache_heads(r->cache);
    int64_t rows = (int64_t)cfg->layers * heads, tokens = (int64_t)r->n_prompt + r->steps;
    int64_t dbytes = (int64_t)lkv_dtype_size(cfg->dtype);
    int64_t full = tokens * cfg->layers * cfg->kv_heads * 2 * cfg->head_dim * dbytes;
    char peak[32], all[32], reserved[32];
    cli_format_bytes((double)s.kv_bytes_peak, peak, sizeof peak);
    cli_format_bytes((double)full, all, sizeof all);
    cli_format_bytes((double)s.kv_bytes_reserved, reserved, sizeof reserved);
    FILE *f = stderr;
    fprintf(f, "KV slots   peak %lld per cache head (%lld over %d layers x %d heads), capacity %d; "
               "full cache %lld per head\n",
            (long long)((s.peak_slots + rows - 1) / rows), (long long)s.peak_slots,
            (int)cfg->layers, (int)heads, (int)cfg->capacity, (long long)tokens);
    fprintf(f, "KV memory  %s: peak KV %s vs %s for the full cache of the same %lld tokens: "
               "%.1f%% memory saved (reserved %s, %lld evictions)\n",
            lkv_policy_name(cfg->policy.kind), peak, all, (long long)tokens,
            full > 0 ? 100.0 * (1.0 - (double)s.kv_bytes_peak / (double)full) : 0.0, reserved,
            (long long)s.evictions);
    if (cfg->placement == LKV_PLACEMENT_PAGED) {
        lkv_cache_config got;
        lkv_cache_get_config(r->cache, &got);
        int64_t block_bytes = (int64_t)got.block_size * 2 * cfg->head_dim * dbytes;
        cli_format_bytes((double)(s.blocks_peak * block_bytes), peak, sizeof peak);
        fprintf(f, "KV blocks  paged: peak %lld blocks of %d slots held (%s) of a pool of %lld "
                   "(%s); %lld held at the end\n",
                (long long)s.blocks_peak, (int)got.block_size, peak, (long long)s.pool_blocks,
                reserved, (long long)s.blocks_in_use);
    }
    if (cfg->gqa == LKV_GQA_EXPANDED && cfg->q_heads != cfg->kv_heads)
        fprintf(f, "           (expanded GQA keeps %d cache heads per layer where the model has "
                   "%d KV heads; the full cache counts %d)\n",
                (int)heads, (int)cfg->kv_heads, (int)cfg->kv_heads);
    if (s.evictions > 0 && s.eviction_lane)
        fprintf(f, "eviction   background on a second device queue: issuing the evictions took "
                   "%.1f ms of host time; the device ran them beside the later layers\n",
                1e3 * s.eviction_seconds);
    else if (s.evictions > 0)
        fprintf(f, "eviction   %s: after-step evictions took %.1f ms, the decode steps waited "
                   "%.1f ms for them (%.0f%% overlapped)\n",
                cfg->eviction == LKV_EVICTION_BACKGROUND ? "background" : "inline",
                1e3 * s.eviction_seconds, 1e3 * s.eviction_wait_seconds,
                s.eviction_seconds > 0.0
                    ? 100.0 * (1.0 - s.eviction_wait_seconds / s.eviction_seconds) : 0.0);
}

static void report(const gen_opts *o, const gen_run *r)
{
    lkv_cache_config cfg;
    lkv_cache_get_config(r->cache, &cfg);
    report_run(o, r, &cfg);
    report_memory(r, &cfg);
}

int cmd_generate(int argc, char **argv)
{
    gen_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    gen_run r;
    memset(&r, 0, sizeof r);
    char path[4096];
    rc = gen_prompt_read_file(&o.prompt, &r.prompt_file);
    if (rc == 0)
        rc = cli_model_path(cmd, o.model, path, sizeof path);
    if (rc == 0)
        rc = load(&o, path, &r);
    if (rc == 0)
        rc = prepare(&o, &r);
    if (rc == 0)
        rc = generate(&o, &r);
    if (rc == 0 && !o.quiet)
        report(&o, &r);
    run_free(&r);
    return rc;
}
