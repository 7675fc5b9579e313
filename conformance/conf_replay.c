/* End-to-end replays: a long random trace through every policy, once on the
 * oracle and once on the backend, through the public lkv_trace_replay, so
 * observe, score, select and compact run as the scheduler batches them. The
 * JSONL outputs (every head's surviving ids and per-slot state after every
 * step) must match line for line; the report names the first step that
 * differs and shows where.
 *
 * Lengths: 2000 steps per policy in the quick grid (1 to 3 s per policy on
 * lavapipe, 2 cores), 4000 in the full one, with a cache of 3/4 of the prompt
 * for the policies with a budget. full and nacl never evict while decoding
 * (nacl evicts once, at prefill), so their cache, and every output line,
 * grows with every step: the full grid keeps them at 2000 steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

typedef struct replay_plan {
    int32_t prompt, heads;
    int32_t steps;       /* the policies that evict while decoding */
    int32_t grow_steps;  /* full, nacl: the cache only grows */
} replay_plan;

static const replay_plan quick_plan = {128, 2, 2000, 2000};
static const replay_plan full_plan = {256, 4, 4000, 2000};

static int32_t steps_for(const replay_plan *plan, lkv_policy_kind p)
{
    return p == LKV_POLICY_FULL || p == LKV_POLICY_NACL ? plan->grow_steps : plan->steps;
}

static const lkv_policy_kind policies[] = {
    LKV_POLICY_FULL, LKV_POLICY_LAZY, LKV_POLICY_STREAMING, LKV_POLICY_H2O,
    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV, LKV_POLICY_NACL, LKV_POLICY_RKV,
};

/* ---- the oracle's lines ---- */

typedef struct lines {
    char *text;
    size_t len, cap;
    size_t *start;
    int count, slots;
    int failed;
} lines;

static int keep_line(void *user, const char *line)
{
    lines *l = user;
    size_t n = strlen(line) + 1;
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1 << 20;
        while (cap < l->len + n)
            cap *= 2;
        char *t = realloc(l->text, cap);
        if (!t)
            return l->failed = 1;
        l->text = t;
        l->cap = cap;
    }
    if (l->count == l->slots) {
        int slots = l->slots ? l->slots * 2 : 1024;
        size_t *s = realloc(l->start, sizeof *s * (size_t)slots);
        if (!s)
            return l->failed = 1;
        l->start = s;
        l->slots = slots;
    }
    l->start[l->count++] = l->len;
    memcpy(l->text + l->len, line, n);
    l->len += n;
    return 0;
}

/* ---- the backend's lines, compared as they come ---- */

typedef struct matcher {
    const lines *want;
    int seen, mismatched, first; /* first: 0-based line of the first mismatch, -1 none */
    char where[400];
} matcher;

/* "... 40 chars before | 60 after" of both lines around the first difference. */
static void describe(matcher *m, const char *want, const char *got)
{
    size_t i = 0;
    while (want[i] && want[i] == got[i])
        i++;
    size_t from = i > 40 ? i - 40 : 0;
    snprintf(m->where, sizeof m->where, "at column %zu: oracle \"%s%.100s\" backend \"%s%.100s\"",
             i, from ? "..." : "", want + from, from ? "..." : "", got + from);
}

static int match_line(void *user, const char *line)
{
    matcher *m = user;
    int i = m->seen++;
    const char *want = i < m->want->count ? m->want->text + m->want->start[i] : "";
    if (strcmp(want, line) != 0 && m->mismatched++ == 0) {
        m->first = i;
        describe(m, want, line);
    }
    return 0;
}

/* ---- one replay ---- */

typedef struct replay_case {
    conf_trace_shape shape;
} replay_case;

static void judge(const matcher *m, const lines *want, lkv_status st, conf_verdict *v)
{
    if (st == LKV_UNSUPPORTED) {
        conf_verdict_set(v, LKV_CONF_SKIP, "backend: %s", lkv_last_error());
        return;
    }
    if (st != LKV_OK && m->mismatched == 0) {
        conf_verdict_set(v, LKV_CONF_FAIL, "backend replay failed after %d of %d steps: %s: %s",
                         m->seen, want->count, lkv_status_name(st), lkv_last_error());
        return;
    }
    if (m->mismatched == 0 && m->seen != want->count) {
        conf_verdict_check(v, 1, "mismatched steps", abs(want->count - m->seen), 0,
                           "the backend wrote %d lines, the oracle %d", m->seen, want->count);
        return;
    }
    if (m->mismatched) {
        conf_verdict_check(v, 1, "mismatched steps", m->mismatched, 0,
                           "%d of %d steps differ, the first at step %d %s", m->mismatched,
                           want->count, m->first + 1, m->where);
        return;
    }
    conf_verdict_check(v, 0, "mismatched steps", 0, 0, "%d of %d steps identical", m->seen,
                       want->count);
}

static void run_seed(conf_run *r, const void *proto, uint64_t seed)
{
    const replay_case *rc = proto;
    conf_verdict v;
    conf_verdict_init(&v);
    lines want = {0};
    matcher m = {&want, 0, 0, -1, ""};
    char *trace = NULL;
    lkv_status st = conf_trace_make(&rc->shape, seed, &trace);
    if (st != LKV_OK) {
        conf_verdict_set(&v, LKV_CONF_FAIL, "%s", lkv_last_error());
    } else if ((st = lkv_trace_replay(r->rt[CONF_ORACLE], trace, NULL, keep_line, &want)) !=
                   LKV_OK ||
               want.failed) {
        conf_verdict_set(&v, LKV_CONF_FAIL, "oracle replay failed: %s: %s", lkv_status_name(st),
                         want.failed ? "host out of memory" : lkv_last_error());
    } else {
        st = lkv_trace_replay(r->rt[CONF_TESTED], trace, NULL, match_line, &m);
        judge(&m, &want, st, &v);
    }
    conf_group_result(r, seed, &v);
    free(trace);
    free(want.text);
    free(want.start);
}

void conf_run_replay(conf_run *r)
{
    const replay_plan *plan = r->opt->quick ? &quick_plan : &full_plan;
    int count = (int)(sizeof policies / sizeof policies[0]);
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int supported = ops->observe && ops->score && ops->select && ops->compact;
    /* long and mostly redundant across seeds: one seed quick, two full */
    int saved = r->seeds;
    r->seeds = r->opt->quick ? 1 : (saved < 2 ? saved : 2);
    for (int i = 0; i < count; i++) {
        lkv_policy_kind p = policies[i];
        replay_case rc = {{p, plan->prompt, plan->heads, steps_for(plan, p)}};
        char name[192];
        snprintf(name, sizeof name, "replay(policy=%s,prompt=%d,heads=%d,steps=%d)",
                 lkv_policy_name(p), rc.shape.prompt, rc.shape.heads, rc.shape.steps);
        conf_progress(r, "replay", i, count);
        if (supported)
            conf_group_run(r, name, "replay", "f32", 1, run_seed, &rc);
        else
            conf_group_skip(r, name, "replay", "f32",
                            "op unsupported: a replay needs observe, score, select and compact");
    }
    r->seeds = saved;
}
