/* Trace replay (spec/policies.md, section 4): recorded per-head attention fed
 * through a policy on a one-layer cache, one JSONL line out per step. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"
#include "json.h"
#include "strbuf.h"

#define LKV_TRACE_MAX_HEADS 1024


typedef struct trace {
    lkv_runtime *rt;
    const char *text;
    size_t at;
    int line_no;
    int header_line;
    int32_t prompt, heads;
    lkv_cache_config cfg;
    lkv_cache *cache;
    int (*write_line)(void *, const char *);
    void *user;
} trace;

/* Next non-blank line into *out (parsed); 0 at end, -1 on error. */
static int next_line(trace *tr, lkv_json *out, lkv_status *st)
{
    while (tr->text[tr->at]) {
        const char *start = tr->text + tr->at;
        size_t len = strcspn(start, "\n");
        tr->at += len + (start[len] == '\n');
        tr->line_no++;
        size_t blank = strspn(start, " \t\r");
        if (blank >= len)
            continue;
        char err[160];
        if (lkv_json_parse(start, len, out, err, sizeof err) != 0) {
            *st = lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: malformed JSON: %s", tr->line_no, err);
            return -1;
        }
        if (out->type != LKV_JSON_OBJECT) {
            lkv_json_free(out);
            *st = lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: expected a JSON object", tr->line_no);
            return -1;
        }
        return 1;
    }
    return 0;
}

static int count_remaining(const trace *tr)
{
    int n = 0;
    for (const char *p = tr->text + tr->at; *p;) {
        size_t len = strcspn(p, "\n");
        if (strspn(p, " \t\r") < len)
            n++;
        p += len + (p[len] == '\n');
    }
    return n;
}

static lkv_status int_field(const trace *tr, const lkv_json *v, const char *key, int32_t lo,
                            int32_t hi, int32_t *out)
{
    if (!v || v->type != LKV_JSON_NUMBER || v->number != floor(v->number) || v->number < lo ||
        v->number > hi)
        return lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: \"%s\" must be an integer in %d..%d",
                        tr->line_no, key, lo, hi);
    *out = (int32_t)v->number;
    return LKV_OK;
}

static lkv_status read_header(trace *tr, const lkv_json *h, const char *policy_override)
{
    lkv_status st = int_field(tr, lkv_json_get(h, "prompt"), "prompt", 0, 1 << 24, &tr->prompt);
    if (st == LKV_OK)
        st = int_field(tr, lkv_json_get(h, "heads"), "heads", 1, LKV_TRACE_MAX_HEADS, &tr->heads);
    if (st != LKV_OK)
        return st;
    const lkv_json *pol = lkv_json_get(h, "policy");
    if (pol && pol->type != LKV_JSON_STRING)
        return lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: \"policy\" must be a string", tr->line_no);
    const char *name = pol ? pol->text : policy_override ? policy_override : "lazy";
    if (pol && policy_override && strcmp(pol->text, policy_override) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "trace line %d: the header says policy '%s' but '%s' was asked for",
                        tr->line_no, pol->text, policy_override);
    lkv_policy_kind kind;
    if ((st = lkv_policy_from_name(name, &kind)) != LKV_OK)
        return lkv_fail_context(st, "trace line %d", tr->line_no);
    lkv_cache_config_init(&tr->cfg);
    lkv_policy_init(&tr->cfg.policy, kind);
    /* a key given twice never gets here: the JSON reader refuses it */
    for (int i = 0; i < h->count; i++) {
        const char *key = h->keys[i];
        if (!strcmp(key, "prompt") || !strcmp(key, "heads") || !strcmp(key, "policy"))
            continue;
        const lkv_json *v = &h->items[i];
        if (v->type != LKV_JSON_NUMBER && v->type != LKV_JSON_STRING)
            return lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: \"%s\" must be a number or string",
                            tr->line_no, key);
        if ((st = lkv_policy_set(&tr->cfg.policy, key, v->text)) != LKV_OK)
            return lkv_fail_context(st, "trace line %d", tr->line_no);
    }
    return LKV_OK;
}

static lkv_status create_cache(trace *tr, int steps)
{
    lkv_policy_params *p = &tr->cfg.policy;
    tr->cfg.q_heads = tr->cfg.kv_heads = tr->heads;
    tr->cfg.head_dim = 1;
    /* The policy is checked against room for every token the trace can add
     * plus its peak; only the tokens are allocated (lkv_cache_create_holding). */
    int64_t cap = (int64_t)tr->prompt + steps + p->budget + p->window + p->interval + 2;
    tr->cfg.capacity = cap > (1 << 24) ? (1 << 24) : (int32_t)cap;
    lkv_status st = lkv_cache_create_holding(tr->rt, &tr->cfg, (int64_t)tr->prompt + steps, &tr->cache);
    if (st != LKV_OK)
        return lkv_fail_context(st, "trace header (line %d)", tr->header_line);
    return LKV_OK;
}

/* Per-head rows of numbers in [0, max]: [[...] x heads], or a flat list
 * when heads == 1. */
static lkv_status head_rows(const trace *tr, const lkv_json *v, const char *key, int32_t width,
                            double max, const lkv_json **rows)
{
    if (v && v->type == LKV_JSON_ARRAY && tr->heads == 1 &&
        (v->count == 0 || v->items[0].type != LKV_JSON_ARRAY)) {
        rows[0] = v;
    } else {
        if (!v || v->type != LKV_JSON_ARRAY || v->count != tr->heads)
            return lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: \"%s\" must hold %d per-head lists",
                            tr->line_no, key, tr->heads);
        for (int32_t h = 0; h < tr->heads; h++)
            rows[h] = &v->items[h];
    }
    for (int32_t h = 0; h < tr->heads; h++) {
        const lkv_json *r = rows[h];
        if (r->type != LKV_JSON_ARRAY || r->count != width)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "trace line %d: \"%s\" of head %d must list %d values (one per id), got %d",
                            tr->line_no, key, h, width, r->type == LKV_JSON_ARRAY ? r->count : 0);
        for (int i = 0; i < r->count; i++) {
            const lkv_json *x = &r->items[i];
            if (x->type != LKV_JSON_NUMBER || !(x->number >= 0 && x->number <= max))
                return lkv_fail(LKV_INVALID_ARGUMENT,
                                "trace line %d: \"%s\" head %d id %d is %s: expected a number in "
                                "[0, %g]",
                                tr->line_no, key, h, i, x->type == LKV_JSON_NUMBER ? x->text : "not a number",
                                max);
        }
    }
    return LKV_OK;
}

static lkv_status check_keys(const trace *tr, const lkv_json *o, const char *a, const char *b)
{
    for (int i = 0; i < o->count; i++)
        if (strcmp(o->keys[i], a) != 0 && (!b || strcmp(o->keys[i], b) != 0))
            return lkv_fail(LKV_INVALID_ARGUMENT, "trace line %d: unknown key \"%s\"", tr->line_no,
                            o->keys[i]);
    return LKV_OK;
}

/* The header's prompt and heads size everything the replay allocates; the
 * first line after it (the prompt's votes or step 1) lists a value for
 * each of them, so it is read and checked before anything is allocated.
 * Memory then stays in proportion to the trace text, whatever the header
 * declares. */
static lkv_status check_first_line(trace *tr)
{
    trace peek = *tr;
    lkv_json line = {0};
    lkv_status st = LKV_OK;
    int got = next_line(&peek, &line, &st);
    if (got <= 0)
        return st;
    const lkv_json *rows[LKV_TRACE_MAX_HEADS];
    int votes = lkv_json_get(&line, "prefill") != NULL;
    if (votes)
        st = check_keys(&peek, &line, "prefill", NULL);
    else if ((st = check_keys(&peek, &line, "t", "p")) == LKV_OK) {
        int32_t t;
        st = int_field(&peek, lkv_json_get(&line, "t"), "t", 1, 1, &t);
    }
    if (st == LKV_OK)
        st = votes ? head_rows(&peek, lkv_json_get(&line, "prefill"), "prefill", tr->prompt, FLT_MAX, rows)
                   : head_rows(&peek, lkv_json_get(&line, "p"), "p", tr->prompt + 1, 1.0, rows);
    lkv_json_free(&line);
    return st;
}

static lkv_status prefill(trace *tr, const lkv_json *line)
{
    lkv_status st = LKV_OK;
    const lkv_json *rows[LKV_TRACE_MAX_HEADS];
    float *votes = NULL;
    lkv_vote_plan plan;
    const lkv_policy_rules *rules = tr->cache->rules;
    int votes_needed = rules->prefill_votes && rules->prefill_votes(&tr->cfg.policy, tr->prompt, &plan) &&
                       plan.required;
    if (line) {
        if (!rules->prefill_votes)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "trace line %d: a \"prefill\" line, but policy %s takes no prompt votes",
                            tr->line_no, rules->name);
        if ((st = check_keys(tr, line, "prefill", NULL)) != LKV_OK ||
            (st = head_rows(tr, lkv_json_get(line, "prefill"), "prefill", tr->prompt, FLT_MAX, rows)) != LKV_OK)
            return st;
        votes = calloc((size_t)tr->heads * (size_t)(tr->prompt ? tr->prompt : 1), sizeof *votes);
        if (!votes)
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of memory for prefill votes");
        for (int32_t h = 0; h < tr->heads; h++)
            for (int32_t i = 0; i < tr->prompt; i++)
                votes[(size_t)h * (size_t)tr->prompt + (size_t)i] = (float)rows[h]->items[i].number;
    } else if (votes_needed) {
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "trace: policy %s evicts the prompt by its queries' votes; add a line "
                        "{\"prefill\": [[vote per prompt id] per head]} after the header",
                        rules->name);
    }
    if (tr->prompt > 0) {
        float *zeros = calloc((size_t)tr->prompt * (size_t)tr->heads, sizeof *zeros);
        int32_t seq = 0, n = tr->prompt;
        lkv_prefill_batch_io io = {
            .n_sequences = 1, .sequences = &seq, .n_tokens = &n, .k = zeros, .v = zeros,
        };
        lkv_given given = {.p = votes ? votes : zeros, .stride = n};
        st = zeros ? lkv_core_prefill(tr->cache, 0, &io, &given, "lkv_trace_replay")
                   : lkv_fail(LKV_OUT_OF_MEMORY, "out of memory for the prompt");
        free(zeros);
    }
    free(votes);
    return st;
}

static void emit_ints(lkv_strbuf *o, const char *key, const int32_t *x, int32_t n)
{
    lkv_strbuf_printf(o, ", \"%s\": [", key);
    for (int32_t i = 0; i < n; i++)
        lkv_strbuf_printf(o, "%s%d", i ? ", " : "", x[i]);
    lkv_strbuf_printf(o, "]");
}

static lkv_status emit_step(trace *tr, int32_t t, int32_t *pos, int32_t *a, int32_t *b, float *f)
{
    static const char *const float_names[LKV_POLICY_COUNT_] = {
        [LKV_POLICY_H2O] = "acc", [LKV_POLICY_TOVA] = "p", [LKV_POLICY_SNAPKV] = "votes",
        [LKV_POLICY_NACL] = "score", [LKV_POLICY_RKV] = "votes"};
    lkv_policy_kind kind = tr->cfg.policy.kind;
    lkv_strbuf o = {0};
    lkv_strbuf_printf(&o, "{\"t\": %d, \"heads\": [", t);
    for (int32_t h = 0; h < tr->heads; h++) {
        lkv_slot_view view = {tr->cache->cfg.capacity, pos, a, b, f};
        int32_t n = 0;
        lkv_status st = lkv_cache_read_slots(tr->cache, 0, 0, h, &view, &n);
        if (st != LKV_OK) {
            free(o.s);
            return st;
        }
        lkv_strbuf_printf(&o, "%s{", h ? ", " : "");
        lkv_strbuf_printf(&o, "\"ids\": [");
        for (int32_t i = 0; i < n; i++)
            lkv_strbuf_printf(&o, "%s%d", i ? ", " : "", pos[i]);
        lkv_strbuf_printf(&o, "]");
        if (kind == LKV_POLICY_LAZY) {
            emit_ints(&o, "last", a, n);
            emit_ints(&o, "mri", b, n);
        } else if (float_names[kind]) {
            lkv_strbuf_printf(&o, ", \"%s\": [", float_names[kind]);
            for (int32_t i = 0; i < n; i++)
                lkv_strbuf_printf(&o, "%s%.9g", i ? ", " : "", (double)f[i]);
            lkv_strbuf_printf(&o, "]");
        }
        lkv_strbuf_printf(&o, "}");
    }
    lkv_strbuf_printf(&o, "]}");
    lkv_status st = LKV_OK;
    if (o.failed)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of memory formatting step %d", t);
    else if (tr->write_line(tr->user, o.s) != 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "trace step %d: the output could not be written", t);
    free(o.s);
    return st;
}

/* Maps each cached slot's id to this step's probability for it. */
static lkv_status step(trace *tr, const lkv_json *line, int32_t expect_t, int32_t *pos, float *probs)
{
    int32_t t = 0;
    const lkv_json *rows[LKV_TRACE_MAX_HEADS];
    lkv_status st = check_keys(tr, line, "t", "p");
    if (st == LKV_OK)
        st = int_field(tr, lkv_json_get(line, "t"), "t", expect_t, expect_t, &t);
    int32_t ids = tr->prompt + expect_t;
    if (st == LKV_OK)
        st = head_rows(tr, lkv_json_get(line, "p"), "p", ids, 1.0, rows);
    if (st != LKV_OK)
        return st;
    lkv_cache *c = tr->cache;
    int32_t n = c->seqs[0].len[0] + 1; /* after the append */
    for (int32_t h = 0; h < tr->heads; h++) {
        lkv_slot_view view = {c->cfg.capacity, pos, NULL, NULL, NULL};
        if ((st = lkv_cache_read_slots(c, 0, 0, h, &view, NULL)) != LKV_OK)
            return st;
        pos[n - 1] = ids - 1;
        for (int32_t i = 0; i < n; i++)
            probs[(size_t)h * (size_t)n + (size_t)i] = (float)rows[h]->items[pos[i]].number;
    }
    float zeros[LKV_TRACE_MAX_HEADS] = {0};
    int32_t seq = 0;
    lkv_decode_batch_io io = {.n_sequences = 1, .sequences = &seq, .k = zeros, .v = zeros};
    lkv_given given = {.p = probs, .stride = n};
    st = lkv_core_decode(c, 0, &io, &given, "lkv_trace_replay");
    if (st != LKV_OK)
        return lkv_fail_context(st, "trace line %d", tr->line_no);
    return LKV_OK;
}

static lkv_status run(trace *tr, const char *policy_override)
{
    lkv_json line = {0};
    lkv_status st = LKV_OK;
    int got = next_line(tr, &line, &st);
    if (got <= 0)
        return got < 0 ? st : lkv_fail(LKV_INVALID_ARGUMENT, "trace is empty: expected a header line");
    tr->header_line = tr->line_no;
    st = read_header(tr, &line, policy_override);
    lkv_json_free(&line);
    if (st == LKV_OK)
        st = check_first_line(tr);
    if (st == LKV_OK)
        st = create_cache(tr, count_remaining(tr));
    if (st != LKV_OK)
        return st;
    int32_t cap = tr->cache->cfg.capacity;
    int32_t *ints = malloc(sizeof(int32_t) * 3 * (size_t)cap);
    float *floats = malloc(sizeof(float) * (size_t)cap * (size_t)(tr->heads + 1));
    if (!ints || !floats)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of memory replaying the trace");
    int first = 1;
    for (int32_t t = 1; st == LKV_OK && (got = next_line(tr, &line, &st)) > 0;) {
        if (first && lkv_json_get(&line, "prefill")) {
            st = prefill(tr, &line);
        } else {
            if (first)
                st = prefill(tr, NULL);
            if (st == LKV_OK)
                st = step(tr, &line, t, ints, floats);
            if (st == LKV_OK)
                st = emit_step(tr, t, ints, ints + cap, ints + 2 * cap, floats);
            t++;
        }
        first = 0;
        lkv_json_free(&line);
    }
    free(ints);
    free(floats);
    return st;
}

lkv_status lkv_trace_replay(lkv_runtime *rt, const char *trace_text, const char *policy_override,
                            int (*write_line)(void *user, const char *line), void *user)
{
    lkv_clear_error();
    if (!rt || !trace_text || !write_line)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_trace_replay: %s is NULL",
                        !rt ? "rt" : !trace_text ? "trace_text" : "write_line");
    trace tr = {.rt = rt, .text = trace_text, .write_line = write_line, .user = user};
    lkv_status st = run(&tr, policy_override);
    lkv_cache_destroy(tr.cache);
    return st;
}
