/* `lazykv simulate`: the main job until a model lands. A synthetic decode
 * whose attention has the structure LazyEviction targets (tokens that regain
 * attention after long gaps) runs through an evicting cache and a full cache
 * side by side on the same inputs; we report memory saved and how far the
 * evicting cache's attention outputs drift from the full cache's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cli.h"

static int isatty_stderr(void) { return isatty(2); }

static const char *const help =
    "usage: lazykv simulate [options]\n\n"
    "Synthetic decode with eviction against the full cache, same inputs, one run.\n"
    "Queries revisit earlier tokens after random gaps (token importance\n"
    "recurrence), attend to a sink and to recent tokens; keys, values and noise\n"
    "are seeded, so a run is reproducible.\n\n"
    "  --backend SPEC     default $LAZYKV_BACKEND, else auto\n"
    "  --policy NAME      lazy (default), streaming, h2o, tova, snapkv\n"
    "  --compare          run every evicting policy at the same budget\n"
    "  --budget N|P%      slots kept per head; default 50% of the final length\n"
    "  --window W         lazy eviction period / snapkv window (default 101 / 32)\n"
    "  --alpha A          lazy threshold (default 1e-4)\n"
    "  --prompt N         prompt tokens (default 256)\n"
    "  --steps N          decode steps (default 3000)\n"
    "  --layers N         default 2\n"
    "  --q-heads N        default 8\n"
    "  --kv-heads N       default 2\n"
    "  --head-dim N       default 64\n"
    "  --dtype f32|f16|bf16 K/V storage (default f16)\n"
    "  --gqa grouped|expanded  (default grouped)\n"
    "  --seed N           default 1\n";

typedef struct sim_opts {
    const char *backend, *policy;
    int compare;
    int32_t budget, budget_pct, window, prompt, steps, layers, q_heads, kv_heads, head_dim, seed;
    double alpha;
    int have_window;
    lkv_dtype dtype;
    lkv_gqa_mode gqa;
} sim_opts;

/* ---- seeded generator: splitmix64 and Box-Muller ---- */

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0; }

static double gauss(uint64_t *s)
{
    return sqrt(-2.0 * log(uniform(s))) * cos(6.283185307179586 * uniform(s));
}

/* ---- synthetic workload ---- */

typedef struct workload {
    int32_t tokens, layers, q_heads, kv_heads, dim;
    float *keys;        /* [layers][tokens][kv_heads][dim] */
    int32_t *next_hit;  /* [tokens] step at which the token is next revisited, 0 = never */
    int32_t *gap;       /* [tokens] its recurrence gap */
    int32_t *visits;    /* [tokens] revisits left */
    uint64_t rng;
} workload;

static float *key_of(const workload *w, int32_t layer, int32_t token)
{
    return w->keys + (((size_t)layer * (size_t)w->tokens + (size_t)token) * (size_t)w->kv_heads) *
                         (size_t)w->dim;
}

static void make_token(workload *w, int32_t token, float *k, float *v)
{
    for (int32_t l = 0; l < w->layers; l++) {
        float *kl = key_of(w, l, token);
        for (int32_t i = 0; i < w->kv_heads * w->dim; i++) {
            kl[i] = (float)gauss(&w->rng);
            v[(size_t)l * (size_t)(w->kv_heads * w->dim) + (size_t)i] = (float)gauss(&w->rng);
        }
        memcpy(k + (size_t)l * (size_t)(w->kv_heads * w->dim), kl,
               sizeof(float) * (size_t)(w->kv_heads * w->dim));
    }
    /* One token in eight recurs, 2 to 12 times with a gap between 20 and 500
     * steps, then falls silent: intermediate results of a reasoning chain. */
    w->gap[token] = 0;
    w->next_hit[token] = 0;
    w->visits[token] = 0;
    if (uniform(&w->rng) < 0.125) {
        w->gap[token] = 20 + (int32_t)(uniform(&w->rng) * 480);
        w->next_hit[token] = token + w->gap[token];
        w->visits[token] = 2 + (int32_t)(uniform(&w->rng) * 11);
    }
}

/* The query of `token`: points at the sink, the previous token and every
 * token whose recurrence falls due now, plus noise. */
static void make_query(workload *w, int32_t token, float *q)
{
    int32_t group = w->q_heads / w->kv_heads;
    /* logit of a target ~ gain * |k|^2 / sqrt(dim) = gain * sqrt(dim): sharp */
    const double gain = 2.0;
    for (int32_t l = 0; l < w->layers; l++) {
        float *ql = q + (size_t)l * (size_t)(w->q_heads * w->dim);
        for (int32_t i = 0; i < w->q_heads * w->dim; i++)
            ql[i] = (float)(0.3 * gauss(&w->rng));
        int32_t targets[64], n_targets = 0;
        targets[n_targets++] = 0;
        if (token > 0)
            targets[n_targets++] = token - 1;
        for (int32_t j = 1; j < token && n_targets < 64; j++)
            if (w->next_hit[j] == token)
                targets[n_targets++] = j;
        for (int32_t h = 0; h < w->q_heads; h++) {
            const int32_t kvh = h / group;
            for (int32_t t = 0; t < n_targets; t++) {
                const float *k = key_of(w, l, targets[t]) + (size_t)kvh * (size_t)w->dim;
                double weight = t == 0 ? 0.6 : gain;
                for (int32_t d = 0; d < w->dim; d++)
                    ql[(size_t)h * (size_t)w->dim + (size_t)d] += (float)(weight * k[d]);
            }
        }
    }
    for (int32_t j = 1; j < token; j++)
        if (w->next_hit[j] == token)
            w->next_hit[j] = --w->visits[j] > 0 ? token + w->gap[j] : 0;
}

/* ---- runs ---- */

typedef struct run {
    const char *policy;
    lkv_cache *cache;
    double err_sum, err_max;
    long err_count;
} run;

static int parse(int argc, char **argv, sim_opts *o)
{
    *o = (sim_opts){.policy = "lazy", .budget_pct = 50, .window = 101, .prompt = 256,
                    .steps = 3000, .layers = 2, .q_heads = 8, .kv_heads = 2, .head_dim = 64,
                    .seed = 1, .alpha = 1e-4, .dtype = LKV_DTYPE_F16, .gqa = LKV_GQA_GROUPED};
    static const char *const valued[] = {
        "--backend", "--policy", "--budget", "--window", "--alpha", "--prompt", "--steps",
        "--layers", "--q-heads", "--kv-heads", "--head-dim", "--seed", "--dtype", "--gqa"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0, known = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        if (!strcmp(a, "--compare")) {
            o->compare = 1;
            continue;
        }
        for (size_t f = 0; f < sizeof valued / sizeof valued[0]; f++)
            known |= !strcmp(a, valued[f]);
        if (!known)
            return cli_error("simulate", a[0] == '-' ? "unknown option '%s' (see --help)"
                                                     : "unexpected argument '%s' (see --help)", a);
        if (!v)
            return cli_error("simulate", "%s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--policy")) o->policy = v;
        else if (!strcmp(a, "--budget")) {
            size_t n = strlen(v);
            if (n > 1 && v[n - 1] == '%') {
                char num[32];
                snprintf(num, sizeof num, "%.*s", (int)(n - 1), v);
                rc = cli_int("simulate", "--budget", num, 1, 100, &o->budget_pct);
                o->budget = 0;
            } else {
                rc = cli_int("simulate", "--budget", v, 1, 1 << 24, &o->budget);
                o->budget_pct = 0;
            }
        }
        else if (!strcmp(a, "--window")) { rc = cli_int("simulate", a, v, 1, 1 << 20, &o->window); o->have_window = 1; }
        else if (!strcmp(a, "--alpha")) { rc = cli_real("simulate", a, v, 0, 1, &o->alpha); }
        else if (!strcmp(a, "--prompt")) rc = cli_int("simulate", a, v, 1, 1 << 20, &o->prompt);
        else if (!strcmp(a, "--steps")) rc = cli_int("simulate", a, v, 1, 1 << 20, &o->steps);
        else if (!strcmp(a, "--layers")) rc = cli_int("simulate", a, v, 1, 64, &o->layers);
        else if (!strcmp(a, "--q-heads")) rc = cli_int("simulate", a, v, 1, 256, &o->q_heads);
        else if (!strcmp(a, "--kv-heads")) rc = cli_int("simulate", a, v, 1, 256, &o->kv_heads);
        else if (!strcmp(a, "--head-dim")) rc = cli_int("simulate", a, v, 1, 1024, &o->head_dim);
        else if (!strcmp(a, "--seed")) rc = cli_int("simulate", a, v, 0, 2147483647, &o->seed);
        else if (!strcmp(a, "--dtype")) rc = cli_dtype("simulate", a, v, &o->dtype);
        else if (!strcmp(a, "--gqa")) {
            if (strcmp(v, "grouped") && strcmp(v, "expanded"))
                return cli_error("simulate", "--gqa '%s' is not grouped or expanded", v);
            o->gqa = strcmp(v, "grouped") ? LKV_GQA_EXPANDED : LKV_GQA_GROUPED;
        }
        if (rc)
            return rc;
    }
    if (o->q_heads % o->kv_heads)
        return cli_error("simulate", "--kv-heads %d does not divide --q-heads %d", o->kv_heads,
                         o->q_heads);
    return 0;
}

static int create_run(lkv_runtime *rt, const sim_opts *o, const char *policy, int32_t budget,
                      run *r)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = o->layers;
    cfg.q_heads = o->q_heads;
    cfg.kv_heads = o->kv_heads;
    cfg.head_dim = o->head_dim;
    cfg.capacity = o->prompt + o->steps;
    cfg.dtype = o->dtype;
    cfg.gqa = o->gqa;
    lkv_policy_kind kind;
    lkv_status st = lkv_policy_from_name(policy, &kind);
    if (st == LKV_OK)
        st = lkv_policy_init(&cfg.policy, kind);
    if (st == LKV_OK && kind != LKV_POLICY_FULL) {
        char text[32];
        snprintf(text, sizeof text, "%d", budget);
        st = lkv_policy_set(&cfg.policy, "budget", text);
        if (st == LKV_OK && kind == LKV_POLICY_LAZY) {
            cfg.policy.window = o->window;
            cfg.policy.alpha = (float)o->alpha;
        }
        if (st == LKV_OK && kind == LKV_POLICY_SNAPKV && o->have_window)
            cfg.policy.window = o->window;
        if (kind == LKV_POLICY_NACL)
            return cli_error("simulate", "nacl evicts once at prefill and bounds no decode: "
                                         "pick lazy, streaming, h2o, tova or snapkv");
    }
    if (st == LKV_OK) {
        /* room for the policy's peak above the budget */
        int32_t extra = kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV ? cfg.policy.window : 0;
        if ((kind == LKV_POLICY_SNAPKV || kind == LKV_POLICY_RKV) && cfg.policy.interval > extra)
            extra = cfg.policy.interval;
        if (budget + extra + 1 > cfg.capacity)
            cfg.capacity = budget + extra + 1;
        st = lkv_cache_create(rt, &cfg, &r->cache);
    }
    if (st != LKV_OK)
        return cli_lib_error("simulate", st);
    r->policy = policy;
    return 0;
}

static double rel_err(const float *x, const float *ref, int32_t n)
{
    double num = 0.0, den = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Feeds one token to every run; run 0 is the full cache, the reference. */
static int feed(run *runs, int n_runs, const sim_opts *o, int32_t token, int prefill,
                const float *q, const float *k, const float *v, float *out, float *ref)
{
    size_t qs = (size_t)o->q_heads * (size_t)o->head_dim, kvs = (size_t)o->kv_heads * (size_t)o->head_dim;
    for (int r = 0; r < n_runs; r++) {
        for (int32_t l = 0; l < o->layers; l++) {
            lkv_status st;
            if (prefill) {
                lkv_prefill_io io = {.n_tokens = o->prompt, .k = k + (size_t)l * (size_t)o->prompt * kvs,
                                     .v = v + (size_t)l * (size_t)o->prompt * kvs,
                                     .q = q + (size_t)l * (size_t)o->prompt * qs};
                st = lkv_cache_prefill(runs[r].cache, 0, l, &io);
            } else {
                float *dst = r == 0 ? ref + (size_t)l * qs : out;
                lkv_decode_io io = {q + (size_t)l * qs, k + (size_t)l * kvs, v + (size_t)l * kvs,
                                    dst, LKV_MEMORY_HOST};
                st = lkv_cache_decode(runs[r].cache, 0, l, &io);
                if (st == LKV_OK && r > 0) {
                    for (int32_t h = 0; h < o->q_heads; h++) {
                        double e = rel_err(dst + (size_t)h * (size_t)o->head_dim,
                                           ref + (size_t)l * qs + (size_t)h * (size_t)o->head_dim,
                                           o->head_dim);
                        runs[r].err_sum += e;
                        runs[r].err_count++;
                        if (e > runs[r].err_max)
                            runs[r].err_max = e;
                    }
                }
            }
            if (st != LKV_OK) {
                cli_error("simulate", "token %d, policy %s: %s: %s", token, runs[r].policy,
                          lkv_status_name(st), lkv_last_error());
                return 2;
            }
        }
    }
    return 0;
}

static int simulate(const sim_opts *o, run *runs, int n_runs)
{
    int32_t total = o->prompt + o->steps;
    workload w = {total, o->layers, o->q_heads, o->kv_heads, o->head_dim, NULL, NULL, NULL,
                  NULL, 0x5eed0000ull + (uint64_t)o->seed};
    size_t kvs = (size_t)o->kv_heads * (size_t)o->head_dim, qs = (size_t)o->q_heads * (size_t)o->head_dim;
    w.keys = malloc(sizeof(float) * (size_t)o->layers * (size_t)total * kvs);
    w.next_hit = calloc((size_t)total, sizeof(int32_t));
    w.gap = calloc((size_t)total, sizeof(int32_t));
    w.visits = calloc((size_t)total, sizeof(int32_t));
    float *pk = malloc(sizeof(float) * (size_t)o->layers * (size_t)o->prompt * kvs);
    float *pv = malloc(sizeof(float) * (size_t)o->layers * (size_t)o->prompt * kvs);
    float *pq = malloc(sizeof(float) * (size_t)o->layers * (size_t)o->prompt * qs);
    float *k = malloc(sizeof(float) * (size_t)o->layers * kvs);
    float *v = malloc(sizeof(float) * (size_t)o->layers * kvs);
    float *q = malloc(sizeof(float) * (size_t)o->layers * qs);
    float *out = malloc(sizeof(float) * qs);
    float *ref = malloc(sizeof(float) * (size_t)o->layers * qs);
    int rc = 0;
    if (!w.keys || !w.next_hit || !w.gap || !w.visits || !pk || !pv || !pq || !k || !v || !q || !out || !ref)
        rc = cli_error("simulate", "out of host memory for the workload");
    /* Prompt: token-major per layer, as lkv_prefill_io wants it; its queries
     * too, for the policies that score the prompt with them. */
    for (int32_t t = 0; rc == 0 && t < o->prompt; t++) {
        make_token(&w, t, k, v);
        make_query(&w, t, q);
        for (int32_t l = 0; l < o->layers; l++) {
            memcpy(pq + ((size_t)l * (size_t)o->prompt + (size_t)t) * qs, q + (size_t)l * qs, qs * 4);
            memcpy(pk + ((size_t)l * (size_t)o->prompt + (size_t)t) * kvs, k + (size_t)l * kvs, kvs * 4);
            memcpy(pv + ((size_t)l * (size_t)o->prompt + (size_t)t) * kvs, v + (size_t)l * kvs, kvs * 4);
        }
    }
    if (rc == 0)
        rc = feed(runs, n_runs, o, 0, 1, pq, pk, pv, out, ref);
    for (int32_t t = o->prompt; rc == 0 && t < total; t++) {
        make_token(&w, t, k, v);
        make_query(&w, t, q);
        rc = feed(runs, n_runs, o, t, 0, q, k, v, out, ref);
        if (isatty_stderr() && (t - o->prompt) % 250 == 0)
            fprintf(stderr, "\r  step %d / %d", t - o->prompt + 1, o->steps);
    }
    if (isatty_stderr())
        fprintf(stderr, "\r%40s\r", "");
    free(w.keys); free(w.next_hit); free(w.gap); free(w.visits);
    free(pk); free(pv); free(pq); free(k); free(v); free(q); free(out); free(ref);
    return rc;
}

static void report(const sim_opts *o, run *runs, int n_runs, int32_t budget)
{
    lkv_cache_stats full;
    lkv_cache_get_stats(runs[0].cache, &full);
    int32_t heads = lkv_cache_heads(runs[0].cache);
    int64_t rows = (int64_t)o->layers * heads;
    printf("\n%-10s %8s %12s %12s %8s %10s %22s\n", "policy", "budget", "peak slots", "peak KV",
           "saved", "evictions", "attn err mean / max");
    for (int r = 0; r < n_runs; r++) {
        lkv_cache_stats s;
        lkv_cache_get_stats(runs[r].cache, &s);
        char bytes[32], saved[16] = "-", err[48] = "0 (reference)", b[16] = "-";
        cli_format_bytes((double)s.kv_bytes_peak, bytes, sizeof bytes);
        if (r > 0) {
            snprintf(saved, sizeof saved, "%.1f%%",
                     100.0 * (1.0 - (double)s.kv_bytes_peak / (double)full.kv_bytes_peak));
            snprintf(err, sizeof err, "%.4f / %.4f", runs[r].err_sum / (double)runs[r].err_count,
                     runs[r].err_max);
            snprintf(b, sizeof b, "%d", budget);
        }
        printf("%-10s %8s %12lld %12s %8s %10lld %22s\n", runs[r].policy, b,
               (long long)(s.peak_slots / rows), bytes, saved, (long long)s.evictions, err);
    }
    printf("\npeak slots are per cache head; attention error is the relative L2 distance of\n"
           "each query head's output from the full cache's, over every decode step.\n");
    if (n_runs > 1) {
        lkv_cache_stats s;
        lkv_cache_get_stats(runs[1].cache, &s);
        char mine[32], all[32];
        cli_format_bytes((double)s.kv_bytes_peak, mine, sizeof mine);
        cli_format_bytes((double)full.kv_bytes_peak, all, sizeof all);
        printf("\n%s at budget %d: peak KV %s vs %s for the full cache: "
               "%.1f%% memory saved, mean attention error %.4f\n",
               runs[1].policy, budget, mine, all,
               100.0 * (1.0 - (double)s.kv_bytes_peak / (double)full.kv_bytes_peak),
               runs[1].err_sum / (double)runs[1].err_count);
    }
}

int cmd_simulate(int argc, char **argv)
{
    sim_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    int32_t total = o.prompt + o.steps;
    int32_t budget = o.budget ? o.budget : (int32_t)((int64_t)total * o.budget_pct / 100);
    if (budget < 1)
        budget = 1;
    static const char *const all[] = {"lazy", "h2o", "tova", "snapkv", "streaming"};
    const char *chosen[6] = {"full", o.policy};
    int n_runs = 2;
    if (o.compare) {
        n_runs = 1;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            chosen[n_runs++] = all[i];
    }
    lkv_runtime *rt = NULL;
    lkv_status st = lkv_runtime_open(o.backend, &rt);
    if (st != LKV_OK)
        return cli_lib_error("simulate", st);
    lkv_runtime_info info;
    lkv_runtime_get_info(rt, &info);
    run runs[6];
    memset(runs, 0, sizeof runs);
    for (int r = 0; r < n_runs && rc == 0; r++)
        rc = create_run(rt, &o, chosen[r], budget, &runs[r]);
    if (rc == 0) {
        printf("lazykv simulate: synthetic decode, no model\n");
        printf("backend   %s:%d %s\n          %s\n", info.backend, info.device, info.device_name,
               info.selection);
        printf("shape     %d layers, %d query heads, %d KV heads (%s), head_dim %d, %s storage\n",
               o.layers, o.q_heads, o.kv_heads, o.gqa == LKV_GQA_GROUPED ? "grouped" : "expanded",
               o.head_dim, lkv_dtype_name(o.dtype));
        printf("sequence  %d-token prompt + %d decode steps = %d tokens; budget %d slots (%.0f%%)\n",
               o.prompt, o.steps, total, budget, 100.0 * budget / total);
        if (o.compare || !strcmp(o.policy, "lazy"))
            printf("lazy      window %d, alpha %g\n", o.window, o.alpha);
        fflush(stdout);
        rc = simulate(&o, runs, n_runs);
    }
    if (rc == 0)
        report(&o, runs, n_runs, budget);
    for (int r = 0; r < n_runs; r++)
        lkv_cache_destroy(runs[r].cache);
    lkv_runtime_close(rt);
    return rc;
}
