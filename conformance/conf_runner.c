/* lkv_conformance_run: one backend through every case family, in the order
 * a kernel author wants to hear about them (attend first: it is the one with
 * the hard numerics), replays and the engine API's families last (they need
 * every eviction op). */
#include <stdio.h>
#include <string.h>

#include <unistd.h>

#include "conf_internal.h"
#include "error.h"
#include "clock.h"

void lkv_conformance_options_init(lkv_conformance_options *opt)
{
    if (opt)
        memset(opt, 0, sizeof *opt);
}

static const struct {
    unsigned bit;
    void (*run)(conf_run *r);
} families[] = {
    {LKV_CONF_ATTEND, conf_run_attend},   {LKV_CONF_OBSERVE, conf_run_observe},
    {LKV_CONF_SCORE, conf_run_score},     {LKV_CONF_SELECT, conf_run_select},
    {LKV_CONF_COMPACT, conf_run_compact}, {LKV_CONF_STORE, conf_run_store},
    {LKV_CONF_REPLAY, conf_run_replay},   {LKV_CONF_BATCH, conf_run_batch},
    {LKV_CONF_CHUNKED, conf_run_chunked}, {LKV_CONF_LIFECYCLE, conf_run_lifecycle},
    {LKV_CONF_REDUNDANCY, conf_run_redundancy},
};

static void print_header(const conf_run *r)
{
    FILE *t = r->opt->table;
    if (!t)
        return;
    fprintf(t, "\n%s: %s against the ref oracle; %s grid, %d seed(s) per case\n", r->label,
            r->device, r->opt->quick ? "quick" : "full", r->seeds);
    conf_table_row(t, "", "CASE", "SEEDS", 0, "WORST SEED: MEASURE / THRESHOLD");
    fputc('\n', t);
    fflush(t);
}

/* The device's line in lkv_list_devices (its reason text names
 * capabilities, e.g. "f32 scores"); empty when it is not listed. */
static void device_traits(const lkv_runtime *rt, char *out, size_t len)
{
    out[0] = '\0';
    lkv_device_report reps[64];
    int n = 0;
    if (lkv_list_devices(reps, 64, &n) != LKV_OK)
        return;
    for (int i = 0; i < n && i < 64; i++)
        if (!strcmp(reps[i].backend, rt->info.backend) && reps[i].device == rt->info.device)
            snprintf(out, len, "%s", reps[i].reason);
}

lkv_status lkv_conformance_run(const lkv_conformance_options *opt, lkv_runtime *under_test,
                               const char *label, lkv_conformance_summary *out_summary)
{
    lkv_clear_error();
    if (!opt || !under_test || !out_summary)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_conformance_run: %s is NULL",
                        !opt ? "opt" : !under_test ? "under_test" : "out_summary");
    lkv_runtime *oracle = opt->oracle;
    if (!oracle) {
        lkv_status st = lkv_runtime_open("ref", &oracle);
        if (st != LKV_OK)
            return lkv_fail_context(st, "conformance: cannot open the ref oracle");
    }
    char own_label[64];
    snprintf(own_label, sizeof own_label, "%s:%d", under_test->info.backend,
             under_test->info.device);
    lkv_conformance_summary sum = {0};
    conf_run r = {
        .opt = opt,
        .rt = {oracle, under_test},
        .label = label ? label : own_label,
        .backend = under_test->info.backend,
        .device = under_test->info.device_name,
        .sum = &sum,
        .seeds = opt->seeds > 0 ? opt->seeds : opt->quick ? 2 : 3,
        .started = lkv_clock_seconds(),
    };
    FILE *p = opt->progress;
    lkv_progress_line_init(&r.progress, p, p && isatty(fileno(p)), LKV_PROGRESS_ANSI);
    device_traits(under_test, r.traits, sizeof r.traits);
    print_header(&r);
    unsigned ops = opt->ops ? opt->ops : LKV_CONF_ALL;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (ops & families[i].bit)
            families[i].run(&r);
    sum.seconds = lkv_clock_seconds() - r.started;
    lkv_progress_line_end(&r.progress);
    if (opt->table)
        lkv_conformance_print_summary(opt->table, r.label, &sum);
    out_summary->pass += sum.pass;
    out_summary->fail += sum.fail;
    out_summary->skip += sum.skip;
    out_summary->xfail += sum.xfail;
    out_summary->seconds += sum.seconds;
    if (!opt->oracle)
        lkv_runtime_close(oracle);
    return LKV_OK;
}
