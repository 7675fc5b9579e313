/* `lazykv conformance`: every backend's ops against the ref oracle. The suite
 * itself lives in conformance/; this file picks the backends, opens them,
 * and turns the outcomes into an exit status CI can act on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conformance.h"

#define CONF_MAX_TARGETS 64
#define CONF_EXIT_SKIPPED 77 /* ctest's SKIP_RETURN_CODE: nothing could be checked */

static const char *const help =
    "usage: lazykv conformance [--backend SPEC[,SPEC...]] [--quick] [--json FILE]\n"
    "                          [--seeds N] [--only FAMILY[,FAMILY...]] [--filter PATTERNS]\n\n"
    "Runs every op (attend, observe, score, select, compact) of a backend over a\n"
    "named grid of shapes, storage types and seeds against the ref oracle on the\n"
    "same inputs, checks guard bytes around every output, replays long random\n"
    "traces through every policy on both, and drives the engine API (batch calls,\n"
    "chunked prefill, fork, truncate) against per-sequence calls and the oracle.\n"
    "One line per case, a summary per backend.\n\n"
    "  --backend SPEC   backends to check: cpu, vulkan, vulkan:1, ... (comma list;\n"
    "                   ref checks the oracle against itself).\n"
    "                   Default: every available device but ref (cpu and emulated\n"
    "                   ones included), SKIP rows for the unavailable backends.\n"
    "  --quick          the small grid (well under a minute on a software GPU)\n"
    "  --json FILE      one JSON object per case and seed (- for standard output,\n"
    "                   the table then goes to standard error)\n"
    "  --seeds N        seeds per op case (default 2 quick, 3 full; replays use 1 / 2)\n"
    "  --only FAMILIES  attend, observe, score, select, compact, replay, batch,\n"
    "                   chunked, lifecycle, store, redundancy (comma list)\n"
    "  --filter PATTERNS  only the cases whose name matches: '*' matches anything,\n"
    "                   '|' separates alternatives, e.g. 'attend(d=64,*|select(*'\n\n"
    "LAZYKV_REQUIRE_BACKENDS=vulkan,opencl turns the SKIP of an unavailable listed\n"
    "backend into a FAIL, so a CI job cannot pass without its driver.\n\n"
    "Exit status: 0 no FAIL, 1 some FAIL, 2 usage error, 77 every requested backend\n"
    "was unavailable (all SKIP) and none is required.\n";

typedef struct target {
    char spec[64];
    char reason[320]; /* why it cannot be checked; "" when it can */
} target;

typedef struct plan {
    target t[CONF_MAX_TARGETS];
    int count;
} plan;

/* ---- names ---- */

typedef struct known {
    lkv_device_report *reps;
    int count;
} known;

static int load_known(known *k)
{
    k->reps = NULL;
    k->count = 0;
    lkv_status st = lkv_list_devices(NULL, 0, &k->count);
    if (st == LKV_OK && !(k->reps = calloc((size_t)k->count + 1, sizeof *k->reps)))
        st = LKV_OUT_OF_MEMORY;
    if (st == LKV_OK)
        st = lkv_list_devices(k->reps, k->count, &k->count);
    return st == LKV_OK ? 0 : cli_lib_error("conformance", st);
}

static int is_backend(const known *k, const char *name, size_t len)
{
    for (int i = 0; i < k->count; i++)
        if (strlen(k->reps[i].backend) == len && strncmp(k->reps[i].backend, name, len) == 0)
            return 1;
    return 0;
}

/* 1 when `backend` (the part of a spec before ':') is in the comma list. */
static int listed(const char *list, const char *spec)
{
    size_t len = strcspn(spec, ":");
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, spec, n) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* Every item of a comma list must be a backend lazykv knows, with a device
 * index in digits if any ("vulkan", "vulkan:1"). */
static int check_names(const known *k, const char *list, const char *what)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        size_t name = strcspn(p, ":,");
        size_t digits = name < n ? strspn(p + name + 1, "0123456789") : 0;
        if (n == 0 || !is_backend(k, p, name) || (name < n && digits != n - name - 1) ||
            (name < n && digits == 0))
            return cli_error("conformance", "%s names '%.*s': expected a backend (see 'lazykv "
                             "devices'), optionally with a device index, as in 'vulkan:0'",
                             what, (int)n, p);
        p += n + (p[n] == ',');
    }
    return 0;
}

/* ---- targets ---- */

static void add(plan *pl, const char *spec, const char *reason)
{
    if (pl->count == CONF_MAX_TARGETS)
        return;
    target *t = &pl->t[pl->count++];
    snprintf(t->spec, sizeof t->spec, "%s", spec);
    snprintf(t->reason, sizeof t->reason, "%s", reason ? reason : "");
}

/* Every listed device but the oracle's: the cpu backend is always one. */
static void plan_default(plan *pl, const known *k)
{
    for (int i = 0; i < k->count; i++) {
        const lkv_device_report *r = &k->reps[i];
        if (strcmp(r->backend, "ref") == 0)
            continue;
        char spec[64];
        if (r->device >= 0)
            snprintf(spec, sizeof spec, "%s:%d", r->backend, r->device);
        else
            snprintf(spec, sizeof spec, "%s", r->backend);
        add(pl, spec, r->available ? NULL : r->reason);
    }
}

static void plan_named(plan *pl, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        char spec[64];
        snprintf(spec, sizeof spec, "%.*s", (int)n, p);
        add(pl, spec, NULL);
        p += n + (p[n] == ',');
    }
}

/* ---- options ---- */

typedef struct args {
    const char *backends, *json, *only, *filter;
    int quick, seeds;
} args;

static int parse_only(const char *list, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"attend", LKV_CONF_ATTEND},   {"observe", LKV_CONF_OBSERVE},
                 {"score", LKV_CONF_SCORE},     {"select", LKV_CONF_SELECT},
                 {"compact", LKV_CONF_COMPACT}, {"replay", LKV_CONF_REPLAY},
                 {"batch", LKV_CONF_BATCH},     {"chunked", LKV_CONF_CHUNKED},
                 {"lifecycle", LKV_CONF_LIFECYCLE}, {"store", LKV_CONF_STORE},
                 {"redundancy", LKV_CONF_REDUNDANCY}};
    *out = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ","), i;
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && strncmp(names[i].name, p, n) == 0)
                break;
        if (i == sizeof names / sizeof names[0])
            return cli_error("conformance", "--only: unknown family '%.*s': expected attend, "
                             "observe, score, select, compact, replay, batch, chunked, lifecycle, store or "
                             "redundancy",
                             (int)n, p);
        *out |= names[i].bit;
        p += n + (p[n] == ',');
    }
    return *out ? 0 : cli_error("conformance", "--only needs at least one family");
}

/* 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(help, stdout);
            return 1;
        }
        if (!strcmp(s, "--quick")) {
            a->quick = 1;
            continue;
        }
        if (strcmp(s, "--backend") && strcmp(s, "--json") && strcmp(s, "--seeds") &&
            strcmp(s, "--only") && strcmp(s, "--filter"))
            return cli_error("conformance", "unexpected argument '%s' (see --help)", s);
        if (i + 1 >= argc || !argv[i + 1][0])
            return cli_error("conformance", "%s needs a value", s);
        const char *v = argv[++i];
        if (!strcmp(s, "--backend"))
            a->backends = v;
        else if (!strcmp(s, "--json"))
            a->json = v;
        else if (!strcmp(s, "--only"))
            a->only = v;
        else if (!strcmp(s, "--filter"))
            a->filter = v;
        else if (cli_int("conformance", "--seeds", v, 1, 1000, &a->seeds) != 0)
            return 2;
    }
    return 0;
}

/* ---- running ---- */

/* Runs one target, or reports why it cannot run. 1 when it could not. */
static int run_target(const target *t, const lkv_conformance_options *opt, const char *required,
                      lkv_conformance_summary *total)
{
    lkv_runtime *rt = NULL;
    int req = listed(required, t->spec);
    if (t->reason[0]) {
        lkv_conformance_report_unavailable(opt, t->spec, t->reason, req, total);
        return 1;
    }
    lkv_status st = lkv_runtime_open(t->spec, &rt);
    if (st != LKV_OK) {
        char why[320];
        snprintf(why, sizeof why, "%s: %s", lkv_status_name(st), lkv_last_error());
        lkv_conformance_report_unavailable(opt, t->spec, why, req, total);
        return 1;
    }
    st = lkv_conformance_run(opt, rt, t->spec, total);
    lkv_runtime_close(rt);
    if (st != LKV_OK) {
        cli_lib_error("conformance", st);
        total->fail++;
    }
    return 0;
}

static int run_plan(const plan *pl, const lkv_conformance_options *opt, const char *required)
{
    lkv_conformance_summary total = {0};
    int unavailable = 0;
    for (int i = 0; i < pl->count; i++)
        unavailable += run_target(&pl->t[i], opt, required, &total);
    if (opt->table && pl->count > 1)
        lkv_conformance_print_summary(opt->table, "\nall backends", &total);
    if (total.fail > 0)
        return 1;
    return unavailable == pl->count ? CONF_EXIT_SKIPPED : 0;
}

static int run(const args *a, const known *k, FILE *json)
{
    const char *required = getenv("LAZYKV_REQUIRE_BACKENDS");
    if (required && *required && check_names(k, required, "LAZYKV_REQUIRE_BACKENDS") != 0)
        return 2;
    if (a->backends && check_names(k, a->backends, "--backend") != 0)
        return 2;
    lkv_conformance_options opt;
    lkv_conformance_options_init(&opt);
    if (a->only && parse_only(a->only, &opt.ops) != 0)
        return 2;
    opt.quick = a->quick;
    opt.seeds = a->seeds;
    opt.filter = a->filter;
    opt.json = json;
    opt.table = json == stdout ? stderr : stdout;
    opt.progress = stderr;
    plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return cli_error("conformance", "out of memory");
    if (a->backends)
        plan_named(pl, a->backends);
    else
        plan_default(pl, k);
    int rc = run_plan(pl, &opt, required);
    free(pl);
    return rc;
}

int cmd_conformance(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    known k;
    if (load_known(&k) != 0)
        return 2;
    FILE *json = NULL;
    if (a.json && !(json = strcmp(a.json, "-") == 0 ? stdout : fopen(a.json, "w"))) {
        free(k.reps);
        return cli_error("conformance", "cannot write '%s'", a.json);
    }
    rc = run(&a, &k, json);
    if (json && json != stdout && fclose(json) != 0 && rc != 2)
        rc = cli_error("conformance", "cannot write '%s'", a.json);
    free(k.reps);
    return rc;
}
