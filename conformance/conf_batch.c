/* Batch replays: one multi-sequence schedule driven through three engines
 * in lockstep,
 *   the oracle's cache, per-sequence calls (lkv_cache_prefill/decode),
 *   the backend's cache, per-sequence calls,
 *   the backend's cache, batch calls (lkv_cache_prefill_batch/decode_batch),
 * and after every tick every sequence that moved is compared: its length and
 * step and every layer's and head's kept positions, and every fourth tick
 * and at the end the policy state of every slot too. The
 * schedule is what the batch calls promise to handle: sequences joining at
 * different ticks (so steps differ within a batch) with ragged prompts, some
 * longer than the budget (one of `capacity` tokens, which brings the early
 * eviction), some sent in two chunks, one that skips prefill; each tick a
 * random subset decodes, listed in a shuffled order.
 *
 * Two results per case: `batch(...)` is the batch calls against the same
 * backend's per-sequence calls (identical decisions, outputs within attend's
 * threshold); `batch(...,vs=ref)` the batch calls against the oracle's
 * per-sequence calls, where a backend's known deviations (f32 lazy scores)
 * may apply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define MAX_SEQS 12
#define D CONF_ENGINE_HEAD_DIM

enum { E_ORACLE, E_SINGLE, E_BATCH, ENGINES };

typedef struct batch_shape {
    conf_engine_shape engine;
    int32_t ticks;
} batch_shape;

typedef struct seq_plan {
    int32_t join, prompt, first_chunk; /* first_chunk 0: one shot */
    int32_t fed;                        /* tokens so far, prompt included */
    int chunk_sent, decoding;
} seq_plan;

/* One tick's calls: the prefill chunks, then the decode step, each list in
 * batch order (the per-sequence engines take them sorted by sequence). */
typedef struct tick {
    int32_t n_pre, pre[MAX_SEQS], pre_tokens[MAX_SEQS], pre_first[MAX_SEQS],
        pre_more[MAX_SEQS], pre_off[MAX_SEQS];
    int32_t n_dec, dec[MAX_SEQS];
    int32_t pre_total;
} tick;

typedef struct batch_io {
    size_t qw, kvw;              /* floats per token */
    float *pq, *pk, *pv, *dq, *dk, *dv; /* [layers][tokens][..] */
    float *pout[ENGINES], *dout[ENGINES];
    size_t ptok;                 /* token room per layer */
} batch_io;

/* ---- the schedule ---- */

static void plan_seqs(const batch_shape *b, conf_rng *rng, seq_plan *seqs)
{
    lkv_policy_kind p = b->engine.policy;
    int32_t longest = conf_engine_longest(p);
    for (int32_t s = 0; s < b->engine.seqs; s++) {
        seq_plan *q = &seqs[s];
        memset(q, 0, sizeof *q);
        q->join = s == 0 ? 0 : conf_rng_below(rng, 7);
        /* the first brings the longest prompt (capacity, where the policy
         * evicts early), one skips prefill, the others are ragged */
        q->prompt = s == 0 ? longest : s == 2 ? 0 : 1 + conf_rng_below(rng, longest);
        if (q->prompt >= 12 && conf_rng_uniform(rng) < 0.4)
            q->first_chunk = 1 + conf_rng_below(rng, q->prompt - 9); /* last chunk >= 8 */
    }
}

static int32_t first_position(int32_t s) { return 3 * s; }

static void add_prefill(tick *t, int32_t s, int32_t tokens, int32_t index, int more)
{
    int32_t i = t->n_pre++;
    t->pre[i] = s;
    t->pre_tokens[i] = tokens;
    t->pre_first[i] = index;
    t->pre_more[i] = more;
    t->pre_off[i] = t->pre_total;
    t->pre_total += tokens;
}

static void plan_tick(const batch_shape *b, int32_t at, conf_rng *rng, seq_plan *seqs, tick *t)
{
    memset(t, 0, sizeof *t);
    for (int32_t s = 0; s < b->engine.seqs; s++) {
        seq_plan *q = &seqs[s];
        if (q->chunk_sent && !q->decoding) { /* the rest of a chunked prompt */
            add_prefill(t, s, q->prompt - q->first_chunk, q->fed, 0);
            q->fed = q->prompt;
            q->decoding = 1;
        } else if (q->join == at && q->prompt > 0) {
            int chunked = q->first_chunk > 0;
            add_prefill(t, s, chunked ? q->first_chunk : q->prompt, 0, chunked);
            q->fed = chunked ? q->first_chunk : q->prompt;
            q->chunk_sent = chunked;
            q->decoding = !chunked;
        } else if (q->join == at) {
            q->decoding = 1; /* no prefill: it decodes from this tick on */
            t->dec[t->n_dec++] = s;
        } else if (q->decoding && conf_rng_uniform(rng) < 0.7) {
            t->dec[t->n_dec++] = s;
        }
    }
    for (int32_t i = 0; i < t->n_dec; i++)
        seqs[t->dec[i]].fed++;
    /* batch order: shuffled (the prefill list with its offsets) */
    for (int32_t i = t->n_pre - 1; i > 0; i--) {
        int32_t j = conf_rng_below(rng, i + 1);
#define SWAP(a) do { int32_t x_ = t->a[i]; t->a[i] = t->a[j]; t->a[j] = x_; } while (0)
        SWAP(pre); SWAP(pre_tokens); SWAP(pre_first); SWAP(pre_more);
#undef SWAP
    }
    t->pre_total = 0;
    for (int32_t i = 0; i < t->n_pre; i++) {
        t->pre_off[i] = t->pre_total;
        t->pre_total += t->pre_tokens[i];
    }
    conf_rng_shuffle(rng, t->dec, t->n_dec);
}

/* ---- inputs and the calls of one tick ---- */

static void fill_inputs(const batch_shape *b, uint64_t seed, const tick *t, const seq_plan *seqs,
                        batch_io *io)
{
    const conf_engine_shape *e = &b->engine;
    for (int32_t l = 0; l < e->layers; l++) {
        size_t pl = (size_t)l * io->ptok, dl = (size_t)l * MAX_SEQS;
        for (int32_t i = 0; i < t->n_pre; i++)
            for (int32_t j = 0; j < t->pre_tokens[i]; j++) {
                size_t tok = pl + (size_t)(t->pre_off[i] + j);
                conf_engine_token(e, seed, t->pre[i], l, t->pre_first[i] + j,
                                  io->pq + tok * io->qw, io->pk + tok * io->kvw,
                                  io->pv + tok * io->kvw);
            }
        for (int32_t i = 0; i < t->n_dec; i++) {
            size_t tok = dl + (size_t)i;
            int32_t index = seqs[t->dec[i]].fed - 1; /* already counted */
            conf_engine_token(e, seed, t->dec[i], l, index, io->dq + tok * io->qw,
                              io->dk + tok * io->kvw, io->dv + tok * io->kvw);
        }
    }
}

static lkv_status single_tick(lkv_cache *c, int32_t layers, const tick *t, const batch_io *io,
                              int e)
{
    lkv_status st = LKV_OK;
    for (int32_t s = 0; s < MAX_SEQS && st == LKV_OK; s++) /* sequence order */
        for (int32_t i = 0; i < t->n_pre && st == LKV_OK; i++) {
            if (t->pre[i] != s)
                continue;
            for (int32_t l = 0; l < layers && st == LKV_OK; l++) {
                size_t tok = (size_t)l * io->ptok + (size_t)t->pre_off[i];
                lkv_prefill_io p = {
                    .n_tokens = t->pre_tokens[i], .k = io->pk + tok * io->kvw,
                    .v = io->pv + tok * io->kvw, .q = io->pq + tok * io->qw,
                    .out = io->pout[e] + tok * io->qw, .first_position = first_position(s),
                    .memory = LKV_MEMORY_HOST, .more_chunks = t->pre_more[i],
                };
                st = lkv_cache_prefill(c, s, l, &p);
            }
        }
    for (int32_t s = 0; s < MAX_SEQS && st == LKV_OK; s++)
        for (int32_t i = 0; i < t->n_dec && st == LKV_OK; i++) {
            if (t->dec[i] != s)
                continue;
            for (int32_t l = 0; l < layers && st == LKV_OK; l++) {
                size_t tok = (size_t)l * MAX_SEQS + (size_t)i;
                lkv_decode_io d = {io->dq + tok * io->qw, io->dk + tok * io->kvw,
                                   io->dv + tok * io->kvw, io->dout[e] + tok * io->qw,
                                   LKV_MEMORY_HOST};
                st = lkv_cache_decode(c, s, l, &d);
            }
        }
    return st;
}

static lkv_status batch_tick(lkv_cache *c, int32_t layers, const tick *t, const batch_io *io)
{
    int32_t firsts[MAX_SEQS];
    for (int32_t i = 0; i < t->n_pre; i++)
        firsts[i] = first_position(t->pre[i]);
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < layers && st == LKV_OK && t->n_pre; l++) {
        size_t tok = (size_t)l * io->ptok;
        lkv_prefill_batch_io p = {
            .n_sequences = t->n_pre, .sequences = t->pre, .n_tokens = t->pre_tokens,
            .first_position = firsts, .more_chunks = t->pre_more, .memory = LKV_MEMORY_HOST,
            .q = io->pq + tok * io->qw, .k = io->pk + tok * io->kvw, .v = io->pv + tok * io->kvw,
            .out = io->pout[E_BATCH] + tok * io->qw,
        };
        st = lkv_cache_prefill_batch(c, l, &p);
    }
    for (int32_t l = 0; l < layers && st == LKV_OK && t->n_dec; l++) {
        size_t tok = (size_t)l * MAX_SEQS;
        lkv_decode_batch_io d = {
            .n_sequences = t->n_dec, .sequences = t->dec, .memory = LKV_MEMORY_HOST,
            .q = io->dq + tok * io->qw, .k = io->dk + tok * io->kvw, .v = io->dv + tok * io->kvw,
            .out = io->dout[E_BATCH] + tok * io->qw,
        };
        st = lkv_cache_decode_batch(c, l, &d);
    }
    return st;
}

/* ---- one seed ---- */

typedef struct batch_run {
    const batch_shape *b;
    lkv_cache *cache[ENGINES];
    batch_io io;
    conf_diff self, oracle; /* batch against the backend's / the oracle's per-sequence calls */
} batch_run;

static int alloc_io(batch_run *br)
{
    const conf_engine_shape *e = &br->b->engine;
    batch_io *io = &br->io;
    io->qw = (size_t)e->q_heads * D;
    io->kvw = (size_t)e->kv_heads * D;
    io->ptok = (size_t)e->seqs * (size_t)conf_engine_longest(e->policy);
    size_t pt = io->ptok * (size_t)e->layers, dt = (size_t)MAX_SEQS * (size_t)e->layers;
    io->pq = calloc(pt * io->qw, sizeof(float));
    io->pk = calloc(pt * io->kvw, sizeof(float));
    io->pv = calloc(pt * io->kvw, sizeof(float));
    io->dq = calloc(dt * io->qw, sizeof(float));
    io->dk = calloc(dt * io->kvw, sizeof(float));
    io->dv = calloc(dt * io->kvw, sizeof(float));
    int ok = io->pq && io->pk && io->pv && io->dq && io->dk && io->dv;
    for (int e2 = 0; e2 < ENGINES; e2++) {
        io->pout[e2] = calloc(pt * io->qw, sizeof(float));
        io->dout[e2] = calloc(dt * io->qw, sizeof(float));
        ok = ok && io->pout[e2] && io->dout[e2];
    }
    return ok;
}

static void free_run(batch_run *br)
{
    batch_io *io = &br->io;
    free(io->pq), free(io->pk), free(io->pv), free(io->dq), free(io->dk), free(io->dv);
    for (int e = 0; e < ENGINES; e++) {
        free(io->pout[e]);
        free(io->dout[e]);
        lkv_cache_destroy(br->cache[e]);
    }
}

static void fail_both(batch_run *br, const char *what, lkv_status st)
{
    conf_diff_fail(&br->self, what, st);
    conf_diff_fail(&br->oracle, what, st);
}

/* Sequence s on the three engines: the batch calls' snapshot against the
 * two others, read once. */
static void compare_seq(batch_run *br, int32_t s, int states, const char *when)
{
    conf_snapshot snap[ENGINES] = {{0}};
    int ok = 1;
    for (int k = 0; k < ENGINES && ok; k++)
        ok = conf_snapshot_take(&snap[k], &br->self, br->cache[k], s, states);
    if (ok) {
        conf_snapshot_compare(&br->self, &snap[E_SINGLE], &snap[E_BATCH], when);
        conf_snapshot_compare(&br->oracle, &snap[E_ORACLE], &snap[E_BATCH], when);
    } else {
        conf_diff_fail(&br->oracle, br->self.error, br->self.failed);
    }
    for (int k = 0; k < ENGINES; k++)
        conf_snapshot_free(&snap[k]);
}

/* Outputs of the tick (prefill and decode, every layer) and the snapshots
 * of every sequence that moved. */
static void compare_tick(batch_run *br, const tick *t, int32_t at)
{
    const batch_io *io = &br->io;
    const conf_engine_shape *e = &br->b->engine;
    char when[64];
    snprintf(when, sizeof when, "tick %d", at);
    for (int32_t l = 0; l < e->layers; l++) {
        size_t po = (size_t)l * io->ptok * io->qw, pn = (size_t)t->pre_total * io->qw;
        size_t dofs = (size_t)l * MAX_SEQS * io->qw, dn = (size_t)t->n_dec * io->qw;
        conf_engine_compare_out(&br->self, io->pout[E_SINGLE] + po, io->pout[E_BATCH] + po, pn,
                                when);
        conf_engine_compare_out(&br->self, io->dout[E_SINGLE] + dofs, io->dout[E_BATCH] + dofs,
                                dn, when);
        conf_engine_compare_out(&br->oracle, io->pout[E_ORACLE] + po, io->pout[E_BATCH] + po, pn,
                                when);
        conf_engine_compare_out(&br->oracle, io->dout[E_ORACLE] + dofs,
                                io->dout[E_BATCH] + dofs, dn, when);
    }
    /* every sequence that moved: positions every tick, states at checkpoints */
    int states = at % 4 == 3 || at + 1 == br->b->ticks;
    for (int32_t i = 0; i < t->n_pre + t->n_dec; i++)
        compare_seq(br, i < t->n_pre ? t->pre[i] : t->dec[i - t->n_pre], states, when);
    conf_engine_compare_stats(&br->self, br->cache[E_SINGLE], br->cache[E_BATCH], when);
    conf_engine_compare_stats(&br->oracle, br->cache[E_ORACLE], br->cache[E_BATCH], when);
}

static void run_ticks(batch_run *br, conf_rng *rng, uint64_t seed)
{
    const conf_engine_shape *e = &br->b->engine;
    seq_plan seqs[MAX_SEQS];
    plan_seqs(br->b, rng, seqs);
    for (int32_t at = 0; at < br->b->ticks && !br->self.failed; at++) {
        tick t;
        plan_tick(br->b, at, rng, seqs, &t);
        fill_inputs(br->b, seed, &t, seqs, &br->io);
        static const char *const names[] = {"oracle, per-sequence calls",
                                            "backend, per-sequence calls",
                                            "backend, batch calls"};
        for (int k = 0; k < ENGINES && !br->self.failed; k++) {
            lkv_status st = k == E_BATCH ? batch_tick(br->cache[k], e->layers, &t, &br->io)
                                         : single_tick(br->cache[k], e->layers, &t, &br->io, k);
            if (st != LKV_OK) {
                char what[96];
                snprintf(what, sizeof what, "%s at tick %d", names[k], at);
                fail_both(br, what, st);
            }
        }
        if (!br->self.failed)
            compare_tick(br, &t, at);
    }
}

static void run_seed(conf_run *r, const batch_shape *b, const char *name, uint64_t seed,
                     conf_verdict *self, conf_verdict *oracle)
{
    batch_run br = {.b = b};
    conf_diff_init(&br.self);
    conf_diff_init(&br.oracle);
    lkv_runtime *rts[ENGINES] = {r->rt[CONF_ORACLE], r->rt[CONF_TESTED], r->rt[CONF_TESTED]};
    for (int k = 0; k < ENGINES && !br.self.failed; k++) {
        lkv_status st = conf_engine_cache(rts[k], &b->engine, &br.cache[k]);
        if (st != LKV_OK)
            fail_both(&br, "lkv_cache_create", st);
    }
    if (!br.self.failed && !alloc_io(&br))
        fail_both(&br, "host memory", LKV_OUT_OF_MEMORY);
    if (!br.self.failed) {
        conf_rng rng;
        conf_rng_init(&rng, seed, name);
        run_ticks(&br, &rng, seed);
    }
    for (int32_t s = 0; s < b->engine.seqs && !br.self.failed; s++)
        compare_seq(&br, s, 1, "at the end");
    conf_engine_verdict(&br.self, "the backend's per-sequence calls", self);
    conf_engine_verdict(&br.oracle, "the oracle's per-sequence calls", oracle);
    free_run(&br);
}

/* ---- bit for bit at a wide batch ----
 *
 * The header promises that a batch call is exactly the per-sequence calls
 * "in every decision"; where a backend cuts its work by the whole call (a
 * chunk length, a split plan from the batch's slots), an output's sums are
 * reordered and an alpha near the probabilities flips an observe. The
 * schedule above is too small to see that (a dozen sequences of a few dozen
 * slots: every row is one chunk), and compares outputs within attend's
 * threshold. Here: `seqs` sequences of 300 to 363 slots, prefilled by one
 * prefill batch per layer (ragged, shuffled, outputs asked) and then
 * decoded by one decode batch of all of them per layer and tick (shuffled),
 * against the same backend's per-sequence calls, every output float and
 * every slot's position and policy state (after the prefill and every tick;
 * quick: at the end, as each read is a device read-back) compared BIT FOR
 * BIT.
 * Under lazy, alpha sits among the hot slots' probabilities (about 4 / n).
 * A backend that plans its work from the whole call declares these cases
 * in its deviations (`batch_bits(*`). */

#define BITS_SEQS 32
#define BITS_PROMPT 300 /* to 363 */
#define BITS_ROOM 64

typedef struct bits_shape {
    conf_engine_shape engine;
    int32_t ticks;
    int prefill_out; /* the prefill attends for outputs (in the full grid) */
} bits_shape;

typedef struct bits_run {
    const bits_shape *b;
    lkv_cache *cache[2]; /* per-sequence calls, batch calls */
    int32_t prompt[BITS_SEQS], order[BITS_SEQS], off[BITS_SEQS], total;
    size_t qw, kvw;
    float *pq, *pk, *pv, *pout[2]; /* [layers][total][..] */
    float *dq, *dk, *dv, *dout[2]; /* [layers][seqs][..] */
    int64_t outs, out_diff, snaps, snap_diff;
    double worst;
    char first_out[200], first_snap[200];
    lkv_status failed;
    char error[400];
} bits_run;

static lkv_status bits_cache(lkv_runtime *rt, const bits_shape *b, lkv_cache **out)
{
    const conf_engine_shape *s = &b->engine;
    lkv_cache_config cfg;
    lkv_status st = conf_engine_config(s, &cfg);
    cfg.capacity = BITS_PROMPT + BITS_ROOM + b->ticks;
    cfg.policy.budget = BITS_PROMPT + 16; /* the longer prompts evict at prefill */
    if (s->policy == LKV_POLICY_LAZY) {
        cfg.policy.window = 8;
        cfg.policy.alpha = 0.012f;
    }
    return st == LKV_OK ? lkv_cache_create(rt, &cfg, out) : st;
}

static void bits_fail(bits_run *br, const char *what, lkv_status st)
{
    if (br->failed)
        return;
    br->failed = st;
    snprintf(br->error, sizeof br->error, "%s: %s: %s", what, lkv_status_name(st),
             lkv_last_error());
}

static void bits_outputs(bits_run *br, const float *want, const float *got, size_t n,
                         const char *when)
{
    for (size_t i = 0; i < n; i++) {
        br->outs++;
        if (memcmp(&want[i], &got[i], sizeof(float)) == 0)
            continue;
        double d = fabs((double)got[i] - (double)want[i]);
        if (br->out_diff++ == 0)
            snprintf(br->first_out, sizeof br->first_out, "%s float %zu: %.9g, per-sequence %.9g",
                     when, i, (double)got[i], (double)want[i]);
        if (!(d <= br->worst))
            br->worst = d;
    }
}

/* Every sequence's kept positions and policy state on both caches, bitwise. */
static void bits_states(bits_run *br, const char *when)
{
    for (int32_t s = 0; s < br->b->engine.seqs && !br->failed; s++) {
        conf_snapshot snap[2] = {{0}};
        conf_diff d;
        conf_diff_init(&d);
        int ok = conf_snapshot_take(&snap[0], &d, br->cache[0], s, 1) &&
                 conf_snapshot_take(&snap[1], &d, br->cache[1], s, 1);
        if (!ok) {
            br->failed = d.failed;
            snprintf(br->error, sizeof br->error, "%s", d.error);
        } else {
            const conf_snapshot *w = &snap[0], *g = &snap[1];
            size_t rows = (size_t)w->layers * (size_t)w->heads, slots = rows * (size_t)w->cap;
            const char *what = NULL;
            if (w->length != g->length || w->step != g->step)
                what = "length or step";
            else if (memcmp(w->n, g->n, rows * sizeof(int32_t)) != 0)
                what = "kept slots";
            else if (memcmp(w->pos, g->pos, slots * sizeof(int32_t)) != 0)
                what = "kept positions";
            else if (w->ints && (memcmp(w->a, g->a, slots * sizeof(int32_t)) != 0 ||
                                 memcmp(w->b, g->b, slots * sizeof(int32_t)) != 0))
                what = "state (last, mri)";
            else if (!w->ints && memcmp(w->f, g->f, slots * sizeof(float)) != 0)
                what = "state_f";
            br->snaps++;
            if (what && br->snap_diff++ == 0)
                snprintf(br->first_snap, sizeof br->first_snap, "%s: sequence %d: %s differ",
                         when, s, what);
        }
        conf_snapshot_free(&snap[0]);
        conf_snapshot_free(&snap[1]);
    }
}

static int bits_alloc(bits_run *br)
{
    const conf_engine_shape *e = &br->b->engine;
    size_t L = (size_t)e->layers, pt = L * (size_t)br->total, dt = L * (size_t)e->seqs;
    br->pq = calloc(pt * br->qw, sizeof(float));
    br->pk = calloc(pt * br->kvw, sizeof(float));
    br->pv = calloc(pt * br->kvw, sizeof(float));
    br->dq = calloc(dt * br->qw, sizeof(float));
    br->dk = calloc(dt * br->kvw, sizeof(float));
    br->dv = calloc(dt * br->kvw, sizeof(float));
    int ok = br->pq && br->pk && br->pv && br->dq && br->dk && br->dv;
    for (int k = 0; k < 2; k++) {
        br->pout[k] = calloc(pt * br->qw, sizeof(float));
        br->dout[k] = calloc(dt * br->qw, sizeof(float));
        ok = ok && br->pout[k] && br->dout[k];
    }
    return ok;
}

static void bits_free(bits_run *br)
{
    free(br->pq), free(br->pk), free(br->pv), free(br->dq), free(br->dk), free(br->dv);
    for (int k = 0; k < 2; k++) {
        free(br->pout[k]);
        free(br->dout[k]);
        lkv_cache_destroy(br->cache[k]);
    }
}

/* The prefill: every sequence's prompt, in batch order `order`. */
static lkv_status bits_prefill(bits_run *br, uint64_t seed, int outputs)
{
    const conf_engine_shape *e = &br->b->engine;
    int32_t n = e->seqs, firsts[BITS_SEQS] = {0}, more[BITS_SEQS] = {0};
    for (int32_t l = 0; l < e->layers; l++)
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < br->prompt[br->order[i]]; j++) {
                size_t tok = (size_t)l * (size_t)br->total + (size_t)(br->off[i] + j);
                conf_engine_token(e, seed, br->order[i], l, j, br->pq + tok * br->qw,
                                  br->pk + tok * br->kvw, br->pv + tok * br->kvw);
            }
    lkv_status st = LKV_OK;
    for (int32_t i = 0; i < n && st == LKV_OK; i++) /* sequence order, per-sequence calls */
        for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
            size_t tok = (size_t)l * (size_t)br->total + (size_t)br->off[i];
            lkv_prefill_io p = {
                .n_tokens = br->prompt[br->order[i]], .k = br->pk + tok * br->kvw,
                .v = br->pv + tok * br->kvw, .q = outputs ? br->pq + tok * br->qw : NULL,
                .out = outputs ? br->pout[0] + tok * br->qw : NULL, .memory = LKV_MEMORY_HOST,
            };
            st = lkv_cache_prefill(br->cache[0], br->order[i], l, &p);
        }
    if (st != LKV_OK) {
        bits_fail(br, "lkv_cache_prefill", st);
        return st;
    }
    int32_t counts[BITS_SEQS];
    for (int32_t i = 0; i < n; i++)
        counts[i] = br->prompt[br->order[i]];
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
        size_t tok = (size_t)l * (size_t)br->total;
        lkv_prefill_batch_io p = {
            .n_sequences = n, .sequences = br->order, .n_tokens = counts,
            .first_position = firsts, .more_chunks = more, .memory = LKV_MEMORY_HOST,
            .q = outputs ? br->pq + tok * br->qw : NULL, .k = br->pk + tok * br->kvw,
            .v = br->pv + tok * br->kvw, .out = outputs ? br->pout[1] + tok * br->qw : NULL,
        };
        st = lkv_cache_prefill_batch(br->cache[1], l, &p);
    }
    if (st != LKV_OK)
        bits_fail(br, "lkv_cache_prefill_batch", st);
    return st;
}

/* Decode tick `at`: every sequence, in the shuffled batch order. */
static lkv_status bits_decode(bits_run *br, uint64_t seed, int32_t at)
{
    const conf_engine_shape *e = &br->b->engine;
    int32_t n = e->seqs;
    for (int32_t l = 0; l < e->layers; l++)
        for (int32_t i = 0; i < n; i++) {
            size_t tok = (size_t)l * (size_t)n + (size_t)i;
            int32_t s = br->order[i];
            conf_engine_token(e, seed, s, l, br->prompt[s] + at, br->dq + tok * br->qw,
                              br->dk + tok * br->kvw, br->dv + tok * br->kvw);
        }
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++)
        for (int32_t i = 0; i < n && st == LKV_OK; i++) {
            size_t tok = (size_t)l * (size_t)n + (size_t)i;
            lkv_decode_io d = {br->dq + tok * br->qw, br->dk + tok * br->kvw,
                               br->dv + tok * br->kvw, br->dout[0] + tok * br->qw,
                               LKV_MEMORY_HOST};
            st = lkv_cache_decode(br->cache[0], br->order[i], l, &d);
        }
    if (st != LKV_OK) {
        bits_fail(br, "lkv_cache_decode", st);
        return st;
    }
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
        size_t tok = (size_t)l * (size_t)n;
        lkv_decode_batch_io d = {
            .n_sequences = n, .sequences = br->order, .memory = LKV_MEMORY_HOST,
            .q = br->dq + tok * br->qw, .k = br->dk + tok * br->kvw, .v = br->dv + tok * br->kvw,
            .out = br->dout[1] + tok * br->qw,
        };
        st = lkv_cache_decode_batch(br->cache[1], l, &d);
    }
    if (st != LKV_OK)
        bits_fail(br, "lkv_cache_decode_batch", st);
    return st;
}

static void bits_seed(conf_run *r, const bits_shape *b, const char *name, uint64_t seed,
                      conf_verdict *v)
{
    const conf_engine_shape *e = &b->engine;
    bits_run br = {.b = b};
    br.qw = (size_t)e->q_heads * D;
    br.kvw = (size_t)e->kv_heads * D;
    conf_rng rng;
    conf_rng_init(&rng, seed, name);
    for (int32_t s = 0; s < e->seqs; s++) {
        br.prompt[s] = BITS_PROMPT + conf_rng_below(&rng, BITS_ROOM);
        br.order[s] = s;
    }
    conf_rng_shuffle(&rng, br.order, e->seqs);
    for (int32_t i = 0; i < e->seqs; i++) {
        br.off[i] = br.total;
        br.total += br.prompt[br.order[i]];
    }
    for (int k = 0; k < 2 && !br.failed; k++) {
        lkv_status st = bits_cache(r->rt[CONF_TESTED], b, &br.cache[k]);
        if (st != LKV_OK)
            bits_fail(&br, "lkv_cache_create", st);
    }
    if (!br.failed && !bits_alloc(&br))
        bits_fail(&br, "host memory", LKV_OUT_OF_MEMORY);
    /* without outputs the prefill batch stores (and h2o's observes) but
     * attends for no outputs: their attend is this family's cost on a
     * software GPU */
    int outputs = b->prefill_out && !r->opt->quick;
    if (!br.failed && bits_prefill(&br, seed, outputs) == LKV_OK) {
        size_t n = (size_t)e->layers * (size_t)br.total * br.qw;
        if (outputs)
            bits_outputs(&br, br.pout[0], br.pout[1], n, "prefill");
        if (!r->opt->quick)
            bits_states(&br, "after the prefill");
    }
    for (int32_t at = 0; at < b->ticks && !br.failed; at++) {
        conf_rng_shuffle(&rng, br.order, e->seqs);
        if (bits_decode(&br, seed, at) != LKV_OK)
            break;
        char when[48];
        snprintf(when, sizeof when, "decode tick %d", at);
        bits_outputs(&br, br.dout[0], br.dout[1], (size_t)e->layers * (size_t)e->seqs * br.qw,
                     when);
        if (!r->opt->quick || at + 1 == b->ticks) /* quick: the reads cost, once at the end */
            bits_states(&br, when);
    }
    if (br.failed) {
        conf_verdict_set(v, br.failed == LKV_UNSUPPORTED ? LKV_CONF_SKIP : LKV_CONF_FAIL, "%s",
                         br.error);
    } else {
        conf_verdict_check(v, br.out_diff != 0, "outputs differing", (double)br.out_diff, 0,
                           "%lld of %lld output floats differ from the per-sequence calls' "
                           "bits (largest %.3g)%s%s; %lld of %lld sequence snapshots differ%s%s",
                           (long long)br.out_diff, (long long)br.outs, br.worst,
                           br.out_diff ? ", the first: " : "", br.first_out,
                           (long long)br.snap_diff, (long long)br.snaps,
                           br.snap_diff ? ", the first: " : "", br.first_snap);
        conf_verdict_check(v, br.snap_diff != 0, "snapshots differing", (double)br.snap_diff, 0,
                           "%lld of %lld sequence snapshots (positions, policy state) differ "
                           "bitwise%s%s", (long long)br.snap_diff, (long long)br.snaps,
                           br.snap_diff ? ", the first: " : "", br.first_snap);
    }
    bits_free(&br);
}

/* quick: lazy, one layer, GQA 4:1 grouped f32, two ticks, the prefill
 * without outputs (measured 0.1 s on cpu, 0.2-0.4 s on lavapipe, 0.5-0.8 s
 * on PoCL, 0.8 s on the CPU SIMT emulator; with the prefill's outputs
 * lavapipe took 12 s). The full grid adds h2o's accumulated f32 state over
 * two layers in f16 with the prefill's outputs (whose probabilities h2o
 * accumulates), and lazy expanded bf16, four ticks each, states after every
 * tick. */
static const bits_shape bits_shapes[] = {
    {{LKV_POLICY_LAZY, BITS_SEQS, 1, 8, 2, LKV_GQA_GROUPED, LKV_DTYPE_F32}, 2, 1},
    {{LKV_POLICY_H2O, BITS_SEQS, 2, 8, 2, LKV_GQA_GROUPED, LKV_DTYPE_F16}, 4, 1},
    {{LKV_POLICY_LAZY, BITS_SEQS, 2, 4, 2, LKV_GQA_EXPANDED, LKV_DTYPE_BF16}, 4, 0},
};

static void bits_name(char *out, size_t len, const bits_shape *b)
{
    const conf_engine_shape *e = &b->engine;
    snprintf(out, len, "batch_bits(policy=%s,seqs=%d,layers=%d,hq=%d,hkv=%d,%s,prompts=%d-%d,"
             "ticks=%d,%s)", lkv_policy_name(e->policy), e->seqs, e->layers, e->q_heads,
             e->kv_heads, e->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded", BITS_PROMPT,
             BITS_PROMPT + BITS_ROOM - 1, b->ticks, conf_dtype_name(e->dtype));
}

static void run_bits(conf_run *r, int supported)
{
    size_t n = r->opt->quick ? 1 : sizeof bits_shapes / sizeof bits_shapes[0];
    for (size_t i = 0; i < n; i++) {
        const bits_shape *b = &bits_shapes[i];
        char name[192];
        bits_name(name, sizeof name, b);
        const char *dtype = conf_dtype_name(b->engine.dtype);
        if (r->opt->filter && !conf_glob_match(r->opt->filter, name))
            continue;
        if (!supported) {
            conf_group_skip(r, name, "batch", dtype,
                            "op unsupported: the engine needs attend, observe, score, select "
                            "and compact");
            continue;
        }
        conf_group_begin(r, name, "batch", dtype);
        for (int s = 0; s < r->seeds; s++) {
            conf_verdict v;
            conf_verdict_init(&v);
            bits_seed(r, b, name, (uint64_t)s + 1, &v);
            conf_group_result(r, (uint64_t)s + 1, &v);
        }
        conf_group_end(r);
    }
}

/* ---- the grid ---- */

static const lkv_policy_kind policies[] = {
    LKV_POLICY_FULL, LKV_POLICY_LAZY, LKV_POLICY_STREAMING, LKV_POLICY_H2O,
    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV, LKV_POLICY_NACL, LKV_POLICY_RKV,
};

/* (seqs, layers, hq, hkv, gqa, dtype): GQA 2:1 grouped in f32, expanded in
 * f16; the full grid adds 3 layers of both and a wider batch, 4:1, in bf16.
 * A per-sequence decode call costs about 4 ms on lavapipe (2 on PoCL), so
 * the quick grid gives each policy one of the first two shapes, alternating,
 * over 10 ticks (about 0.4 s a case there, 3 s on the CPU SIMT emulator,
 * whose launches cost about 10 ms); the full grid runs all of them
 * over 30. */
static const conf_engine_shape shapes[] = {
    {LKV_POLICY_FULL, 5, 2, 4, 2, LKV_GQA_GROUPED, LKV_DTYPE_F32},
    {LKV_POLICY_FULL, 5, 2, 4, 2, LKV_GQA_EXPANDED, LKV_DTYPE_F16},
    {LKV_POLICY_FULL, 7, 3, 4, 2, LKV_GQA_GROUPED, LKV_DTYPE_F32},
    {LKV_POLICY_FULL, 5, 3, 4, 2, LKV_GQA_EXPANDED, LKV_DTYPE_F16},
    {LKV_POLICY_FULL, 9, 3, 8, 2, LKV_GQA_GROUPED, LKV_DTYPE_BF16},
};

static void case_name(char *out, size_t len, const batch_shape *b, const char *suffix)
{
    const conf_engine_shape *e = &b->engine;
    snprintf(out, len, "batch(policy=%s,seqs=%d,layers=%d,hq=%d,hkv=%d,%s,ticks=%d,%s%s)",
             lkv_policy_name(e->policy), e->seqs, e->layers, e->q_heads, e->kv_heads,
             e->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded", b->ticks,
             conf_dtype_name(e->dtype), suffix);
}

/* Both results come from one run per seed: the oracle comparison is
 * reported as its own case, so a known deviation against the oracle never
 * hides a difference between the backend's two paths. */
static void run_case(conf_run *r, const batch_shape *b)
{
    char name[192], vs[192];
    case_name(name, sizeof name, b, "");
    case_name(vs, sizeof vs, b, ",vs=ref");
    const char *filter = r->opt->filter;
    int want_self = !filter || conf_glob_match(filter, name);
    int want_vs = !filter || conf_glob_match(filter, vs);
    if (!want_self && !want_vs)
        return;
    const char *dtype = conf_dtype_name(b->engine.dtype);
    enum { MAX_SEEDS = 16 };
    conf_verdict self[MAX_SEEDS], oracle[MAX_SEEDS];
    int seeds = r->seeds < MAX_SEEDS ? r->seeds : MAX_SEEDS;
    for (int s = 0; s < seeds; s++) {
        conf_verdict_init(&self[s]);
        conf_verdict_init(&oracle[s]);
    }
    if (want_self)
        conf_group_begin(r, name, "batch", dtype);
    for (int s = 0; s < seeds; s++) {
        run_seed(r, b, name, (uint64_t)s + 1, &self[s], &oracle[s]);
        if (want_self)
            conf_group_result(r, (uint64_t)s + 1, &self[s]);
    }
    if (want_self)
        conf_group_end(r);
    if (!want_vs)
        return;
    conf_group_begin(r, vs, "batch", dtype);
    for (int s = 0; s < seeds; s++)
        conf_group_result(r, (uint64_t)s + 1, &oracle[s]);
    conf_group_end(r);
}

void conf_run_batch(conf_run *r)
{
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int supported = ops->attend && ops->observe && ops->score && ops->select && ops->compact;
    size_t ns = r->opt->quick ? 1 : sizeof shapes / sizeof shapes[0]; /* quick: see shapes */
    size_t np = sizeof policies / sizeof policies[0];
    int count = (int)(ns * np), index = 0;
    int saved = r->seeds; /* long runs, one seed quick, at most two full (as replays) */
    r->seeds = r->opt->quick ? 1 : (saved < 2 ? saved : 2);
    for (size_t i = 0; i < ns; i++)
        for (size_t p = 0; p < np; p++, index++) {
            batch_shape b = {shapes[r->opt->quick ? p % 2 : i], r->opt->quick ? 10 : 30};
            b.engine.policy = policies[p];
            conf_progress(r, "batch", index, count);
            if (supported) {
                run_case(r, &b);
            } else {
                char name[192];
                case_name(name, sizeof name, &b, "");
                conf_group_skip(r, name, "batch", conf_dtype_name(b.engine.dtype),
                                "op unsupported: the engine needs attend, observe, score, "
                                "select and compact");
            }
        }
    run_bits(r, supported); /* one seed quick, at most two full */
    r->seeds = saved;
}
