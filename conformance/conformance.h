/* The cross-backend conformance suite as a library.
 *
 * lkv_conformance_run() drives every op of one backend (reached through the
 * internal ops table of an open lkv_runtime) over a named grid of shapes,
 * storage types and seeds, runs the same inputs through the CPU oracle, and
 * reports one result per case and seed: PASS, FAIL (with the measured error
 * against the threshold, or the first mismatch), SKIP (op unsupported, or the
 * backend could not be opened) or XFAIL (a known deviation, see
 * conf_xfail.c). Long random traces replayed through every policy on both
 * runtimes close the loop end to end. `lazykv conformance` is a thin front
 * end; tests call it directly on deliberately broken backends.
 */
#ifndef LKV_CONFORMANCE_H
#define LKV_CONFORMANCE_H

#include <stdint.h>
#include <stdio.h>

#include "lazykv.h"

/* Ordered by severity: a group of seeds reports its worst. */
typedef enum lkv_conformance_outcome {
    LKV_CONF_PASS = 0,
    LKV_CONF_SKIP,
    LKV_CONF_XFAIL,
    LKV_CONF_FAIL
} lkv_conformance_outcome;

const char *lkv_conformance_outcome_name(lkv_conformance_outcome outcome);

/* Case families, as a mask for lkv_conformance_options.ops. */
enum {
    LKV_CONF_ATTEND = 1 << 0,
    LKV_CONF_OBSERVE = 1 << 1,
    LKV_CONF_SCORE = 1 << 2,
    LKV_CONF_SELECT = 1 << 3,
    LKV_CONF_COMPACT = 1 << 4,
    LKV_CONF_REPLAY = 1 << 5,
    LKV_CONF_STORE = 1 << 6,     /* store against the oracle, bit for bit */
    LKV_CONF_BATCH = 1 << 7,     /* batched decode/prefill against per-sequence calls */
    LKV_CONF_CHUNKED = 1 << 8,   /* chunked prefill against one-shot */
    LKV_CONF_LIFECYCLE = 1 << 9, /* fork and truncate */
    LKV_CONF_REDUNDANCY = 1 << 10, /* rkv's key redundancy mixed into scores */
    LKV_CONF_ALL = (1 << 11) - 1
};

/* One case and seed, as reported. Strings live until the callback returns. */
typedef struct lkv_conformance_result {
    const char *label;       /* the run's label, "vulkan:0" */
    const char *backend;     /* "vulkan" */
    const char *device;      /* device name */
    const char *name;        /* "attend(d=128,n=4097,hq=32,hkv=8,groups=1,probs=max,f16)" */
    const char *op;          /* "attend", ..., "store", "replay" */
    const char *dtype;       /* "f32", "f16" or "bf16" */
    uint64_t seed;
    lkv_conformance_outcome outcome;
    const char *metric_name; /* "nmse", "err/tol", "mismatches", ... ("" when none) */
    double metric;           /* NAN when nothing was measured */
    double threshold;        /* NAN when nothing was measured */
    const char *detail;
    double seconds;          /* wall time of this case and seed, both sides */
} lkv_conformance_result;

typedef struct lkv_conformance_options {
    int quick;              /* the small grid (minutes on a software GPU -> seconds) */
    int seeds;              /* seeds per op case; 0: 2 quick, 3 full */
    unsigned ops;           /* LKV_CONF_* mask; 0 means all */
    const char *filter;     /* case-name patterns ('*' wildcard, '|' between
                               alternatives); NULL: every case */
    lkv_runtime *oracle;    /* the reference; NULL: the suite opens "ref" itself */
    FILE *table;            /* one line per case, then the summary; NULL: none */
    FILE *json;             /* one JSON object per case and seed; NULL: none */
    FILE *progress;         /* a progress line for long runs; NULL: none */
    /* Called once per case and seed, after the JSON line. May be NULL. */
    void (*on_result)(void *user, const lkv_conformance_result *result);
    void *user;
} lkv_conformance_options;

typedef struct lkv_conformance_summary {
    int pass, fail, skip, xfail; /* counted per case and seed */
    double seconds;
} lkv_conformance_summary;

/* Everything off: full grid, default seeds, all ops, no output. */
void lkv_conformance_options_init(lkv_conformance_options *opt);

/* Runs the suite against `under_test`, labelled `label` in every result
 * ("vulkan:0"; NULL: "<backend>:<device>"). Counts are added to
 * *out_summary, so one summary can total several backends. Returns OK when
 * the suite ran, whatever the outcomes; another status only when it could
 * not run at all (no oracle, bad arguments), with lkv_last_error() set. */
lkv_status lkv_conformance_run(const lkv_conformance_options *opt, lkv_runtime *under_test,
                               const char *label, lkv_conformance_summary *out_summary);

/* Reports one row for a backend that could not be opened: SKIP with the
 * reason, or FAIL when `required` (CI must not pass without its driver).
 * Counts go to *out_summary. */
void lkv_conformance_report_unavailable(const lkv_conformance_options *opt, const char *label,
                                        const char *reason, int required,
                                        lkv_conformance_summary *out_summary);

/* Prints "<label>: N pass, N fail, N skip, N xfail in S s" to `f`. */
void lkv_conformance_print_summary(FILE *f, const char *label,
                                   const lkv_conformance_summary *summary);

#endif
