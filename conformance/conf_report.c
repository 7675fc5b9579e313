/* Reporting: every case and seed becomes one JSON object and one count; every
 * case name (its seeds together) becomes one table line showing its worst
 * seed. Known deviations (conf_xfail.c) turn a FAIL into an XFAIL here, in
 * one place, so no case module can forget them. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conf_internal.h"
#include "json_writer.h"
#include "clock.h"
#include "table.h"

const char *lkv_conformance_outcome_name(lkv_conformance_outcome outcome)
{
    switch (outcome) {
    case LKV_CONF_PASS: return "PASS";
    case LKV_CONF_SKIP: return "SKIP";
    case LKV_CONF_XFAIL: return "XFAIL";
    case LKV_CONF_FAIL: return "FAIL";
    }
    return "?";
}

const lkv_dtype conf_dtypes[] = {LKV_DTYPE_F32, LKV_DTYPE_F16, LKV_DTYPE_BF16};
const size_t conf_dtype_count = sizeof conf_dtypes / sizeof conf_dtypes[0];

const char *conf_dtype_name(lkv_dtype dtype)
{
    const char *name = lkv_dtype_name(dtype);
    return name ? name : "?";
}

int conf_runs_dtype(conf_bf16_modes bf16, lkv_dtype dtype, size_t mode)
{
    return dtype != LKV_DTYPE_BF16 || (mode < sizeof bf16 * CHAR_BIT && (bf16 >> mode & 1u));
}

/* ---- JSON ---- */

/* One line per result (JSONL), flushed, so a killed run keeps what it did.
 * NaN metrics, which JSON lacks, are null. */
static void json_result(FILE *f, const lkv_conformance_result *r)
{
    lkv_jw w;
    lkv_jw_init(&w, f);
    lkv_jw_begin_object(&w, NULL, 1);
    lkv_jw_string(&w, "backend", r->label);
    lkv_jw_string(&w, "device", r->device);
    lkv_jw_string(&w, "case", r->name);
    lkv_jw_string(&w, "op", r->op);
    lkv_jw_string(&w, "dtype", r->dtype);
    lkv_jw_uint(&w, "seed", r->seed);
    lkv_jw_string(&w, "outcome", lkv_conformance_outcome_name(r->outcome));
    lkv_jw_string(&w, "metric_name", r->metric_name);
    lkv_jw_number(&w, "metric", r->metric);
    lkv_jw_number(&w, "threshold", r->threshold);
    lkv_jw_string(&w, "detail", r->detail);
    lkv_jw_fixed(&w, "seconds", r->seconds, 3);
    lkv_jw_end_object(&w);
    lkv_jw_finish(&w);
}

/* ---- counting and the per-case hook ---- */

static void count(lkv_conformance_summary *sum, lkv_conformance_outcome o)
{
    switch (o) {
    case LKV_CONF_PASS: sum->pass++; break;
    case LKV_CONF_SKIP: sum->skip++; break;
    case LKV_CONF_XFAIL: sum->xfail++; break;
    case LKV_CONF_FAIL: sum->fail++; break;
    }
}

static void emit(const lkv_conformance_options *opt, lkv_conformance_summary *sum,
                 const lkv_conformance_result *res)
{
    count(sum, res->outcome);
    if (opt->json)
        json_result(opt->json, res);
    if (opt->on_result)
        opt->on_result(opt->user, res);
}

/* ---- groups: one case name over its seeds ---- */

/* How close a measurement came to its threshold, to pick the seed to show. */
static double closeness(const conf_verdict *v)
{
    if (isnan(v->metric))
        return 0.0;
    if (v->threshold > 0.0)
        return v->metric / v->threshold;
    return v->metric > 0.0 ? INFINITY : 0.0;
}

void conf_group_begin(conf_run *r, const char *name, const char *op, const char *dtype)
{
    snprintf(r->name, sizeof r->name, "%s", name);
    r->op = op;
    r->dtype = dtype;
    r->runs = r->bad = 0;
    r->worst = LKV_CONF_PASS;
    r->worst_ratio = -1.0;
    r->mark = lkv_clock_seconds();
    conf_verdict_init(&r->shown);
}

static void apply_xfail(const conf_run *r, conf_verdict *v)
{
    const char *why = conf_xfail_reason(r->rt[1]->ops, r->traits, r->name);
    if (!why)
        return;
    if (v->outcome == LKV_CONF_FAIL) {
        char was[sizeof v->detail];
        snprintf(was, sizeof was, "%s", v->detail);
        v->outcome = LKV_CONF_XFAIL;
        snprintf(v->detail, sizeof v->detail, "known deviation (%s): %.400s", why, was);
    } else if (v->outcome == LKV_CONF_PASS) {
        conf_verdict_note(v, "passes although listed as a known deviation (%s): remove the XFAIL "
                             "entry", why);
    }
}

void conf_group_result(conf_run *r, uint64_t seed, const conf_verdict *given)
{
    conf_verdict v = *given;
    apply_xfail(r, &v);
    lkv_conformance_result res = {
        .label = r->label, .backend = r->backend, .device = r->device, .name = r->name,
        .op = r->op, .dtype = r->dtype, .seed = seed, .outcome = v.outcome,
        .metric_name = v.metric_name, .metric = v.metric, .threshold = v.threshold,
        .detail = v.detail, .seconds = lkv_clock_seconds() - r->mark,
    };
    emit(r->opt, r->sum, &res);
    r->mark = lkv_clock_seconds();
    r->runs++;
    if (v.outcome != LKV_CONF_PASS)
        r->bad++;
    double ratio = closeness(&v);
    if (v.outcome > r->worst || (v.outcome == r->worst && ratio > r->worst_ratio)) {
        r->worst = v.outcome;
        r->worst_ratio = ratio;
        r->shown = v;
        snprintf(r->shown.detail, sizeof r->shown.detail, "seed %llu: %.600s",
                 (unsigned long long)seed, v.detail);
    }
}

void conf_table_row(FILE *t, const char *outcome, const char *name, const char *seeds,
                    int measure_width, const char *measure)
{
    const lkv_table_column cols[] = {{5, 1}, {66, 1}, {5, 1}, {measure_width, 1}};
    const char *cells[] = {outcome, name, seeds, measure};
    lkv_table_cells(t, cols, 4, cells);
}

void conf_group_end(conf_run *r)
{
    FILE *t = r->opt->table;
    if (!t || r->runs == 0)
        return;
    lkv_progress_line_end(&r->progress);
    const conf_verdict *v = &r->shown;
    char measure[96] = "";
    if (!isnan(v->metric))
        snprintf(measure, sizeof measure, "%s %.3g %s %.3g", v->metric_name, v->metric,
                 v->metric > v->threshold ? ">" : "<=", v->threshold);
    /* a passing line stays short; anything else says why */
    int why = r->worst != LKV_CONF_PASS || strstr(v->detail, "near tie") ||
              strstr(v->detail, "known deviation");
    char seeds[24];
    snprintf(seeds, sizeof seeds, "%2d/%-2d", r->runs - r->bad, r->runs);
    conf_table_row(t, lkv_conformance_outcome_name(r->worst), r->name, seeds, why ? 30 : 0,
                   measure);
    if (why)
        fprintf(t, " %s", v->detail);
    fputc('\n', t);
    fflush(t);
}

static int wanted(const conf_run *r, const char *name)
{
    return !r->opt->filter || conf_glob_match(r->opt->filter, name);
}

void conf_group_skip(conf_run *r, const char *name, const char *op, const char *dtype,
                     const char *fmt, ...)
{
    if (!wanted(r, name))
        return;
    conf_verdict v;
    conf_verdict_init(&v);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v.detail, sizeof v.detail, fmt, ap);
    va_end(ap);
    v.outcome = LKV_CONF_SKIP;
    conf_group_begin(r, name, op, dtype);
    conf_group_result(r, 0, &v);
    conf_group_end(r);
}

void conf_group_run(conf_run *r, const char *name, const char *op, const char *dtype,
                    int supported, conf_seed_fn one, const void *proto)
{
    if (!wanted(r, name))
        return;
    if (!supported) {
        conf_group_skip(r, name, op, dtype, "op unsupported: the backend's %s entry is NULL", op);
        return;
    }
    conf_group_begin(r, name, op, dtype);
    for (int s = 1; s <= r->seeds; s++)
        one(r, proto, (uint64_t)s);
    conf_group_end(r);
}

void conf_progress(conf_run *r, const char *family, int index, int count)
{
    double t = lkv_clock_seconds() - r->started;
    if (r->progress.tty)
        lkv_progress_line_show(&r->progress, "[%s] %s %d/%d, %.0f s", r->label, family,
                               index + 1, count, t);
    else if (index == 0) /* a log file gets one line per family, not a flood */
        lkv_progress_line_log(&r->progress, "[%s] %s: %d cases, %.0f s so far", r->label,
                              family, count, t);
}

/* ---- backend-level rows and the summary ---- */

void lkv_conformance_report_unavailable(const lkv_conformance_options *opt, const char *label,
                                        const char *reason, int required,
                                        lkv_conformance_summary *out_summary)
{
    char detail[600];
    snprintf(detail, sizeof detail, "%s%s",
             required ? "required by LAZYKV_REQUIRE_BACKENDS but " : "", reason);
    const char *colon = strchr(label, ':');
    char backend[32];
    snprintf(backend, sizeof backend, "%.*s", colon ? (int)(colon - label) : (int)strlen(label),
             label);
    lkv_conformance_result res = {
        .label = label, .backend = backend, .device = "", .name = "backend", .op = "backend",
        .dtype = "", .seed = 0, .outcome = required ? LKV_CONF_FAIL : LKV_CONF_SKIP,
        .metric_name = "", .metric = NAN, .threshold = NAN, .detail = detail,
    };
    lkv_conformance_summary local = {0};
    emit(opt, out_summary ? out_summary : &local, &res);
    if (opt->table) {
        const lkv_table_column cols[] = {{5, 1}, {12, 1}, {0, 1}};
        const char *cells[] = {lkv_conformance_outcome_name(res.outcome), label, detail};
        lkv_table_cells(opt->table, cols, 3, cells);
        fputc('\n', opt->table);
        fflush(opt->table);
    }
}

void lkv_conformance_print_summary(FILE *f, const char *label,
                                   const lkv_conformance_summary *s)
{
    fprintf(f, "%s: %d pass, %d fail, %d skip, %d xfail in %.1f s\n", label, s->pass, s->fail,
            s->skip, s->xfail, s->seconds);
}
