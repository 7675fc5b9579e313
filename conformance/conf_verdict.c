/* A case's verdict: its outcome and the one measurement that explains it.
 * A case makes several checks (values, NaN parity, guard bytes); the report
 * shows the first that failed, or the headline check when all passed, so a
 * reader sees the number that decided the outcome. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"

void conf_verdict_init(conf_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->outcome = LKV_CONF_PASS;
    v->metric_name = "";
    v->metric = NAN;
    v->threshold = NAN;
}

static void vset_detail(conf_verdict *v, const char *fmt, va_list ap)
{
    vsnprintf(v->detail, sizeof v->detail, fmt, ap);
}

void conf_verdict_check(conf_verdict *v, int failed, const char *metric_name, double metric,
                        double threshold, const char *fmt, ...)
{
    int first = v->checks++ == 0;
    if (v->outcome == LKV_CONF_FAIL || (!failed && !first))
        return;
    /* a failure replaces the headline; notes made so far are dropped with it */
    v->outcome = failed ? LKV_CONF_FAIL : LKV_CONF_PASS;
    v->metric_name = metric_name;
    v->metric = metric;
    v->threshold = threshold;
    va_list ap;
    va_start(ap, fmt);
    vset_detail(v, fmt, ap);
    va_end(ap);
}

void conf_verdict_note(conf_verdict *v, const char *fmt, ...)
{
    if (v->outcome == LKV_CONF_FAIL)
        return;
    size_t used = strlen(v->detail);
    if (used + 3 >= sizeof v->detail)
        return;
    if (used) {
        memcpy(v->detail + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->detail + used, sizeof v->detail - used, fmt, ap);
    va_end(ap);
}

void conf_verdict_set(conf_verdict *v, lkv_conformance_outcome outcome, const char *fmt, ...)
{
    v->outcome = outcome;
    v->metric_name = "";
    v->metric = NAN;
    v->threshold = NAN;
    va_list ap;
    va_start(ap, fmt);
    vset_detail(v, fmt, ap);
    va_end(ap);
}
