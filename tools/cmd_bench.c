/* `lazykv bench`: every backend's ops timed side by side on the same inputs,
 * against each backend's own copy bandwidth, plus the decode step with
 * eviction against the full cache and the batched decode step against
 * per-sequence calls; a table, and optionally JSON and an SVG plot. The
 * measuring lives in bench/; this file is the command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bench.h"
#include "bench_model.h"
#include "bench_step.h"
#include "cli.h"

static const char *const help =
    "usage: lazykv bench [options]\n\n"
    "Times every backend's ops (attend with and without probabilities, observe,\n"
    "score, select, compact) side by side on the same inputs, at several cache\n"
    "lengths and head shapes; reports bytes moved, effective bandwidth and its\n"
    "share of the backend's own device copy bandwidth; the cost of observation\n"
    "(attend + probs vs plain); and a whole decode step through the public API,\n"
    "LazyEviction at a 50% budget vs the full cache, with peak KV memory; and the\n"
    "batched decode step (one lkv_cache_decode_batch call for n sequences vs n\n"
    "lkv_cache_decode calls) with the device counters each step costs.\n"
    "Times are host-observed (issue, then sync): median and min of timed runs.\n\n"
    "  --backends LIST   comma-separated specs (cpu,vulkan:0,...); default every\n"
    "                    available device, emulated ones included, cpu first\n"
    "  --lengths LIST    cache lengths in slots, e.g. 1024,4096 or 1K,128K\n"
    "                    (default 1K,4K,16K,64K,128K; with --quick 1K,4K)\n"
    "  --dtype f32|f16|bf16  K/V storage of every shape (default f16)\n"
    "  --batches LIST    sequences per batched decode step, e.g. 1,8,64 (the\n"
    "                    default; with --quick 1,8); 0 skips the batch table\n"
    "  --batch-slots N   slots each sequence of a batch holds (default 4K;\n"
    "                    with --quick 1K)\n"
    "  --decode-shape Q/KV/D  the decode step's query heads, KV heads and head\n"
    "                    dim (default 9/3/64, SmolLM2-135M's)\n"
    "  --window N        its eviction period W (default 101)\n"
    "  --budget N        its lazy budget B in slots (default 50% of each length;\n"
    "                    a length below B is skipped for the decode step)\n"
    "  --step-ratios     only the batched engine step's scaling: 4 layers, 8/2\n"
    "                    heads, d 64, sequences at 256..400 slots, one decode\n"
    "                    batch call per layer at batch 1, 8 and 32; per-sequence\n"
    "                    time over batch 1's, medians and minima of one run\n"
    "  --quick           short lengths and timing, for a smoke test\n"
    "  --json FILE       write every measurement as JSON\n"
    "  --plot FILE       write an SVG plot: time per op vs cache length per\n"
    "                    backend, the decode step lazy vs full, observation cost\n"
    "  --model LIST      also (alone unless --backends is given) the roofline\n"
    "                    model of the CUDA/HIP kernels on named GPUs (h200, h100,\n"
    "                    a100, mi300x): each op's predicted time at the lengths\n"
    "                    and shapes above, from bytes, waves and launches;\n"
    "                    estimates, labelled MODEL (bench/README.md)\n\n"
    "Exit status 0; 1 when some measurement failed (see the notes); 2 on bad\n"
    "options or a backend that cannot be opened. bench/README.md explains the\n"
    "bytes model and how to read the output.\n";

typedef struct bench_opts {
    const char *backends, *lengths, *json, *plot, *dtype, *batches, *batch_slots;
    const char *decode_shape, *window, *budget, *model;
    int quick, step_ratios;
} bench_opts;

static int parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        if (!strcmp(a, "--quick")) {
            o->quick = 1;
            continue;
        }
        if (!strcmp(a, "--step-ratios")) {
            o->step_ratios = 1;
            continue;
        }
        const char **slot = !strcmp(a, "--backends") ? &o->backends
                          : !strcmp(a, "--lengths")  ? &o->lengths
                          : !strcmp(a, "--json")     ? &o->json
                          : !strcmp(a, "--plot")     ? &o->plot
                          : !strcmp(a, "--dtype")    ? &o->dtype
                          : !strcmp(a, "--batches")  ? &o->batches
                          : !strcmp(a, "--batch-slots") ? &o->batch_slots
                          : !strcmp(a, "--decode-shape") ? &o->decode_shape
                          : !strcmp(a, "--window")   ? &o->window
                          : !strcmp(a, "--budget")   ? &o->budget
                          : !strcmp(a, "--model")    ? &o->model
                                                     : NULL;
        if (!slot)
            return cli_error("bench", a[0] == '-' ? "unknown option '%s' (see --help)"
                                                  : "unexpected argument '%s' (see --help)", a);
        if (!v)
            return cli_error("bench", "%s needs a value (see --help)", a);
        *slot = v;
        i++;
    }
    return 0;
}

static int parse_backends(const char *list, lkv_bench_settings *s)
{
    const char *p = list;
    s->n_specs = 0;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= LKV_BENCH_SPEC_LEN)
            return cli_error("bench", "--backends '%s': empty or overlong entry", list);
        if (s->n_specs == LKV_BENCH_MAX_DEVICES)
            return cli_error("bench", "--backends '%s': at most %d backends", list,
                             LKV_BENCH_MAX_DEVICES);
        snprintf(s->specs[s->n_specs++], LKV_BENCH_SPEC_LEN, "%.*s", (int)n, p);
        p += n + (p[n] == ',');
    }
    if (s->n_specs == 0)
        return cli_error("bench", "--backends is empty: name at least one (cpu, vulkan:0, ...)");
    return 0;
}

#define MIN_LENGTH 16
#define MAX_LENGTH (1 << 22)

/* One entry of option `opt`: digits with an optional K (x1024). */
static int parse_length(const char *opt, const char *list, const char *entry, size_t n,
                        int32_t *out)
{
    char text[32];
    if (n == 0 || n >= sizeof text)
        return cli_error("bench", "%s '%s': empty or overlong entry", opt, list);
    snprintf(text, sizeof text, "%.*s", (int)n, entry);
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end != text && (*end == 'K' || *end == 'k') && end[1] == '\0') {
        v *= 1024;
        end++;
    }
    if (errno || end == text || *end || v < MIN_LENGTH || v > MAX_LENGTH)
        return cli_error("bench", "%s entry '%s' is not a length in %d..%d (a number, "
                         "optionally with K)", opt, text, MIN_LENGTH, MAX_LENGTH);
    *out = (int32_t)v;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Ascending and distinct, as the plot's axis wants them. */
static int parse_lengths(const char *list, lkv_bench_settings *s)
{
    int32_t v[LKV_BENCH_MAX_LENGTHS];
    int n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (n == LKV_BENCH_MAX_LENGTHS)
            return cli_error("bench", "--lengths '%s': at most %d lengths", list,
                             LKV_BENCH_MAX_LENGTHS);
        if (parse_length("--lengths", list, p, len, &v[n]))
            return 2;
        n++;
        p += len + (p[len] == ',');
    }
    if (n == 0)
        return cli_error("bench", "--lengths is empty: give at least one, e.g. 1024");
    qsort(v, (size_t)n, sizeof v[0], cmp_i32);
    s->n_lengths = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || v[i] != v[i - 1])
            s->lengths[s->n_lengths++] = v[i];
    return 0;
}

/* Ascending and distinct batch sizes, or "0" for none. */
static int parse_batches(const char *list, lkv_bench_settings *s)
{
    if (!strcmp(list, "0")) {
        s->n_batches = 0;
        return 0;
    }
    int32_t v[LKV_BENCH_MAX_BATCHES];
    int n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char text[16], *end = NULL;
        snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), p);
        errno = 0;
        long b = strtol(text, &end, 10);
        if (n == LKV_BENCH_MAX_BATCHES)
            return cli_error("bench", "--batches '%s': at most %d batch sizes", list,
                             LKV_BENCH_MAX_BATCHES);
        if (len == 0 || len >= sizeof text || errno || end == text || *end || b < 1 ||
            b > LKV_BENCH_MAX_BATCH)
            return cli_error("bench", "--batches entry '%.*s' is not a sequence count in 1..%d",
                             (int)len, p, LKV_BENCH_MAX_BATCH);
        v[n++] = (int32_t)b;
        p += len + (p[len] == ',');
    }
    if (n == 0)
        return cli_error("bench", "--batches is empty: give sizes such as 1,8,64, or 0 for none");
    qsort(v, (size_t)n, sizeof v[0], cmp_i32);
    s->n_batches = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || v[i] != v[i - 1])
            s->batches[s->n_batches++] = v[i];
    return 0;
}

static int parse_batch_slots(const char *text, lkv_bench_settings *s)
{
    return parse_length("--batch-slots", text, text, strlen(text), &s->batch_slots) ? 2 : 0;
}

/* Q/KV/D: heads that divide, each in range. */
static int parse_decode_shape(const char *text, lkv_bench_settings *s)
{
    int q = 0, kv = 0, d = 0, used = 0;
    if (sscanf(text, "%d/%d/%d%n", &q, &kv, &d, &used) != 3 || text[used] || q < 1 || q > 256 ||
        kv < 1 || q % kv || d < 1 || d > 1024)
        return cli_error("bench", "--decode-shape '%s' is not Q/KV/D with 1 <= Q <= 256, KV "
                         "dividing Q and 1 <= D <= 1024 (e.g. 28/28/128)", text);
    s->decode_shape.like = "--decode-shape";
    s->decode_shape.q_heads = q;
    s->decode_shape.kv_heads = kv;
    s->decode_shape.head_dim = d;
    return 0;
}

static int parse_count(const char *opt, const char *text, int32_t lo, int32_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > MAX_LENGTH)
        return cli_error("bench", "%s '%s' is not an integer in %d..%d", opt, text, lo,
                         MAX_LENGTH);
    *out = (int32_t)v;
    return 0;
}

static int parse_dtype(const char *text, lkv_bench_settings *s)
{
    lkv_dtype d;
    int rc = cli_dtype("bench", "--dtype", text, &d);
    if (rc)
        return rc;
    for (int i = 0; i < s->n_shapes; i++)
        s->shapes[i].dtype = d;
    s->decode_shape.dtype = d;
    return 0;
}

static int open_output(const char *path, FILE **out)
{
    *out = NULL;
    if (!path)
        return 0;
    *out = fopen(path, "w");
    if (!*out)
        return cli_error("bench", "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

/* Writes one output file; its stream is closed either way. */
static int write_output(FILE *f, const char *path, const lkv_bench_results *r,
                        int (*writer)(FILE *, const lkv_bench_results *))
{
    if (!f)
        return 0;
    int bad = writer(f, r) != 0;
    bad |= fclose(f) != 0;
    if (bad)
        return cli_error("bench", "writing '%s' failed", path);
    fprintf(stderr, "lazykv bench: wrote %s\n", path);
    return 0;
}

/* The named model devices of --model. */
static int parse_models(const char *list, const lkv_bench_gpu **out, int *out_n)
{
    const char *p = list;
    int n = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
        const lkv_bench_gpu *g = len < sizeof name ? lkv_bench_gpu_named(name) : NULL;
        if (!g)
            return cli_error("bench", "--model '%.*s' is not a modelled GPU (%s)", (int)len, p,
                             lkv_bench_gpu_names());
        if (n == LKV_BENCH_MAX_DEVICES)
            return cli_error("bench", "--model '%s': at most %d devices", list,
                             LKV_BENCH_MAX_DEVICES);
        out[n++] = g;
        p += len + (p[len] == ',');
    }
    if (n == 0)
        return cli_error("bench", "--model is empty: name a GPU (%s)", lkv_bench_gpu_names());
    *out_n = n;
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, o.quick);
    s.progress = isatty(2);
    if ((o.backends && (rc = parse_backends(o.backends, &s))) ||
        (o.lengths && (rc = parse_lengths(o.lengths, &s))) ||
        (o.dtype && (rc = parse_dtype(o.dtype, &s))) ||
        (o.batches && (rc = parse_batches(o.batches, &s))) ||
        (o.batch_slots && (rc = parse_batch_slots(o.batch_slots, &s))) ||
        (o.decode_shape && (rc = parse_decode_shape(o.decode_shape, &s))) ||
        (o.window && (rc = parse_count("--window", o.window, 1, &s.window))) ||
        (o.budget && (rc = parse_count("--budget", o.budget, 1, &s.decode_budget))))
        return rc;
    if (o.step_ratios) {
        lkv_status st = lkv_bench_step_ratios(&s, stdout);
        return st == LKV_OK ? 0 : st == LKV_INVALID_ARGUMENT ? cli_lib_error("bench", st) : 1;
    }
    const lkv_bench_gpu *models[LKV_BENCH_MAX_DEVICES];
    int n_models = 0;
    if (o.model && (rc = parse_models(o.model, models, &n_models)))
        return rc;
    if (o.model && !o.backends) { /* the model alone: nothing to measure */
        lkv_bench_model_print(stdout, &s, models, n_models);
        return 0;
    }
    FILE *json = NULL, *plot = NULL;
    if ((rc = open_output(o.json, &json)) || (rc = open_output(o.plot, &plot))) {
        if (json)
            fclose(json);
        return rc;
    }
    lkv_bench_results r;
    lkv_status st = lkv_bench_run(&s, &r);
    if (st != LKV_OK) {
        if (json)
            fclose(json);
        if (plot)
            fclose(plot);
        return cli_lib_error("bench", st);
    }
    lkv_bench_print_table(stdout, &r);
    lkv_bench_model_print(stdout, &s, models, n_models);
    fflush(stdout);
    rc = write_output(json, o.json, &r, lkv_bench_write_json);
    int rc_plot = write_output(plot, o.plot, &r, lkv_bench_write_svg);
    if (rc == 0)
        rc = rc_plot;
    if (rc == 0 && lkv_bench_any_failure(&r))
        rc = 1;
    lkv_bench_results_free(&r);
    return rc;
}
