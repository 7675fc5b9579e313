/* Chunked prefill: two caches of four sequences, all given the same
 * prompt: in the first, sequence k gets it in k + 1 chunks (cut at random,
 * the last chunk at least 9 tokens long: longer than every policy's voting
 * window here, so the header's promise of an exact reproduction applies;
 * sequence 1's first chunk is a single token, the prompt's last query for
 * a moment, which a chunked tova once let vote);
 * in the twin every sequence gets it in one shot. Then the same decode
 * steps for all. After the prompt and after steps 3 and 6, each
 * sequence must hold what the same sequence of the twin holds (every
 * layer's and head's kept positions, length and step; the policy state of
 * every slot after the prompt and after the last step), and its outputs, the
 * prompt's causal ones included, must match within attend's threshold. The
 * twin holds the reference at the same sequence index because nacl's
 * random stage draws its noise per cache row. One variant sends each sequence by itself through
 * lkv_cache_prefill/decode, the other all four at once through the batch
 * calls (more_chunks per sequence). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define SEQS 4 /* sequence k is sent in k + 1 chunks */
#define D CONF_ENGINE_HEAD_DIM
#define STEPS 6

typedef struct chunked_shape {
    conf_engine_shape engine;
    int batch_calls;
} chunked_shape;

typedef struct chunked_run {
    const chunked_shape *c;
    lkv_cache *cache[2];            /* chunked, one-shot twin */
    int32_t prompt;
    int32_t cut[2][SEQS][SEQS + 1]; /* chunk boundaries of sequence k: cut[][k][0..k+1] */
    size_t qw, kvw;
    float *q, *k, *v;               /* [layers][prompt + STEPS][..]: one input stream */
    float *out[2][SEQS];            /* [layers][prompt + STEPS][q_heads][d] per sequence */
    conf_diff diff;
} chunked_run;

/* Over every budget (24), so the policies evict at prefill or at the first
 * steps; short, since voting queries attend one launch at a time. */
static int32_t prompt_of(lkv_policy_kind p)
{
    (void)p;
    return 30;
}

static size_t at(const chunked_run *cr, int32_t layer, int32_t token)
{
    return (size_t)layer * (size_t)(cr->prompt + STEPS) + (size_t)token;
}

static void plan_cuts(chunked_run *cr, conf_rng *rng)
{
    for (int32_t k = 0; k < SEQS; k++) {
        int32_t inner[SEQS];
        conf_rng_subset(rng, cr->prompt - 9, k, inner); /* ascending, in 0 .. prompt - 10 */
        int32_t *cut = cr->cut[0][k];
        cut[0] = 0;
        for (int32_t i = 0; i < k; i++)
            cut[i + 1] = inner[i] + 1;
        if (k == 1) /* a first chunk of one token: its query is the prompt's last so far */
            cut[1] = 1;
        cut[k + 1] = cr->prompt;
        cr->cut[1][k][0] = 0;
        cr->cut[1][k][1] = cr->prompt;
    }
}

static int alloc_run(chunked_run *cr, uint64_t seed)
{
    const conf_engine_shape *e = &cr->c->engine;
    cr->qw = (size_t)e->q_heads * D;
    cr->kvw = (size_t)e->kv_heads * D;
    size_t tokens = (size_t)e->layers * (size_t)(cr->prompt + STEPS);
    cr->q = calloc(tokens * cr->qw, sizeof(float));
    cr->k = calloc(tokens * cr->kvw, sizeof(float));
    cr->v = calloc(tokens * cr->kvw, sizeof(float));
    int ok = cr->q && cr->k && cr->v;
    for (int32_t s = 0; s < 2 * SEQS; s++)
        ok = ok && (cr->out[s / SEQS][s % SEQS] = calloc(tokens * cr->qw, sizeof(float))) != NULL;
    for (int32_t l = 0; ok && l < e->layers; l++)
        for (int32_t t = 0; t < cr->prompt + STEPS; t++) {
            size_t i = at(cr, l, t);
            conf_engine_token(e, seed, 0, l, t, cr->q + i * cr->qw, cr->k + i * cr->kvw,
                              cr->v + i * cr->kvw);
        }
    return ok;
}

/* Round r on cache w: chunk r of every sequence that has one. */
static lkv_status prefill_round(chunked_run *cr, int w, int32_t r)
{
    const conf_engine_shape *e = &cr->c->engine;
    int32_t seqs[SEQS], n_tokens[SEQS], more[SEQS], m = 0;
    int32_t(*cuts)[SEQS + 1] = cr->cut[w];
    lkv_cache *cache = cr->cache[w];
    float **outs = cr->out[w];
    for (int32_t k = 0; k < SEQS; k++) {
        int32_t chunks = w == 0 ? k + 1 : 1;
        if (r >= chunks)
            continue;
        seqs[m] = k;
        n_tokens[m] = cuts[k][r + 1] - cuts[k][r];
        more[m++] = r + 1 < chunks;
    }
    if (m == 0)
        return LKV_OK;
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
        if (!cr->c->batch_calls) {
            for (int32_t i = 0; i < m && st == LKV_OK; i++) {
                size_t t = at(cr, l, cuts[seqs[i]][r]);
                lkv_prefill_io io = {
                    .n_tokens = n_tokens[i], .k = cr->k + t * cr->kvw, .v = cr->v + t * cr->kvw,
                    .q = cr->q + t * cr->qw, .out = outs[seqs[i]] + t * cr->qw,
                    .memory = LKV_MEMORY_HOST, .more_chunks = more[i],
                };
                st = lkv_cache_prefill(cache, seqs[i], l, &io);
            }
            continue;
        }
        /* the batch packs each sequence's chunk one after the other */
        int32_t total = 0;
        for (int32_t i = 0; i < m; i++)
            total += n_tokens[i];
        float *q = malloc((size_t)total * cr->qw * 4), *k = malloc((size_t)total * cr->kvw * 4);
        float *v = malloc((size_t)total * cr->kvw * 4), *out = malloc((size_t)total * cr->qw * 4);
        if (!q || !k || !v || !out) {
            st = LKV_OUT_OF_MEMORY;
        } else {
            for (int32_t i = 0, o = 0; i < m; o += n_tokens[i++]) {
                size_t t = at(cr, l, cuts[seqs[i]][r]), n = (size_t)n_tokens[i];
                memcpy(q + (size_t)o * cr->qw, cr->q + t * cr->qw, n * cr->qw * 4);
                memcpy(k + (size_t)o * cr->kvw, cr->k + t * cr->kvw, n * cr->kvw * 4);
                memcpy(v + (size_t)o * cr->kvw, cr->v + t * cr->kvw, n * cr->kvw * 4);
            }
            lkv_prefill_batch_io io = {
                .n_sequences = m, .sequences = seqs, .n_tokens = n_tokens, .more_chunks = more,
                .memory = LKV_MEMORY_HOST, .q = q, .k = k, .v = v, .out = out,
            };
            st = lkv_cache_prefill_batch(cache, l, &io);
            for (int32_t i = 0, o = 0; st == LKV_OK && i < m; o += n_tokens[i++]) {
                size_t t = at(cr, l, cuts[seqs[i]][r]);
                memcpy(outs[seqs[i]] + t * cr->qw, out + (size_t)o * cr->qw,
                       (size_t)n_tokens[i] * cr->qw * 4);
            }
        }
        free(q), free(k), free(v), free(out);
    }
    return st;
}

/* One step of the same token for every sequence of cache w, as one batch
 * call per layer: decoding is not what this family checks (conf_batch.c
 * shows the batch call equals per-sequence ones), and one call per layer
 * keeps it cheap on a software GPU. */
static lkv_status decode_step(chunked_run *cr, int w, int32_t step)
{
    const conf_engine_shape *e = &cr->c->engine;
    int32_t token = cr->prompt + step;
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < e->layers && st == LKV_OK; l++) {
        size_t t = at(cr, l, token);
        float q[SEQS * 8 * D], k[SEQS * 8 * D], v[SEQS * 8 * D], out[SEQS * 8 * D];
        int32_t seqs[SEQS] = {3, 1, 0, 2}; /* any order */
        for (int32_t i = 0; i < SEQS; i++) {
            memcpy(q + i * cr->qw, cr->q + t * cr->qw, cr->qw * 4);
            memcpy(k + i * cr->kvw, cr->k + t * cr->kvw, cr->kvw * 4);
            memcpy(v + i * cr->kvw, cr->v + t * cr->kvw, cr->kvw * 4);
        }
        lkv_decode_batch_io io = {.n_sequences = SEQS, .sequences = seqs,
                                  .memory = LKV_MEMORY_HOST, .q = q, .k = k, .v = v, .out = out};
        st = lkv_cache_decode_batch(cr->cache[w], l, &io);
        for (int32_t i = 0; st == LKV_OK && i < SEQS; i++)
            memcpy(cr->out[w][seqs[i]] + t * cr->qw, out + i * cr->qw, cr->qw * 4);
    }
    return st;
}

/* Every chunked sequence against its one-shot twin, and the outputs of
 * tokens [from, to). */
static void compare(chunked_run *cr, int32_t from, int32_t to, int states, const char *when)
{
    for (int32_t s = 0; s < SEQS; s++) {
        conf_engine_compare_seq(&cr->diff, cr->cache[1], s, cr->cache[0], s, states, when);
        for (int32_t l = 0; l < cr->c->engine.layers; l++) {
            size_t t = at(cr, l, from);
            conf_engine_compare_out(&cr->diff, cr->out[1][s] + t * cr->qw,
                                    cr->out[0][s] + t * cr->qw, (size_t)(to - from) * cr->qw,
                                    when);
        }
    }
}

static void run(chunked_run *cr)
{
    lkv_status st = LKV_OK;
    for (int w = 0; w < 2; w++)
        for (int32_t r = 0; r < SEQS && st == LKV_OK; r++)
            st = prefill_round(cr, w, r);
    if (st != LKV_OK) {
        conf_diff_fail(&cr->diff, "prefill", st);
        return;
    }
    compare(cr, 0, cr->prompt, 1, "after the prompt");
    for (int32_t step = 0; step < STEPS; step++) {
        for (int w = 0; w < 2 && st == LKV_OK; w++)
            st = decode_step(cr, w, step);
        if (st != LKV_OK) {
            conf_diff_fail(&cr->diff, "decode", st);
            return;
        }
        char when[32];
        snprintf(when, sizeof when, "after step %d", step + 1);
        if (step % 3 == 2) /* some steps: the decode calls are what costs */
            compare(cr, cr->prompt + step - 2, cr->prompt + step + 1, step + 1 == STEPS, when);
    }
}

typedef struct chunked_case {
    chunked_shape shape;
} chunked_case;

static void run_seed(conf_run *r, const void *proto, uint64_t seed)
{
    const chunked_case *cc = proto;
    chunked_run cr = {.c = &cc->shape, .prompt = prompt_of(cc->shape.engine.policy)};
    conf_diff_init(&cr.diff);
    conf_rng rng;
    conf_rng_init(&rng, seed, r->name);
    plan_cuts(&cr, &rng);
    lkv_status st = conf_engine_cache(r->rt[CONF_TESTED], &cc->shape.engine, &cr.cache[0]);
    if (st == LKV_OK)
        st = conf_engine_cache(r->rt[CONF_TESTED], &cc->shape.engine, &cr.cache[1]);
    if (st != LKV_OK)
        conf_diff_fail(&cr.diff, "lkv_cache_create", st);
    else if (!alloc_run(&cr, seed))
        conf_diff_fail(&cr.diff, "host memory", LKV_OUT_OF_MEMORY);
    else
        run(&cr);
    conf_verdict v;
    conf_verdict_init(&v);
    conf_engine_verdict(&cr.diff, "the one-shot prefill", &v);
    conf_group_result(r, seed, &v);
    lkv_cache_destroy(cr.cache[0]);
    lkv_cache_destroy(cr.cache[1]);
    free(cr.q), free(cr.k), free(cr.v);
    for (int32_t s = 0; s < 2 * SEQS; s++)
        free(cr.out[s / SEQS][s % SEQS]);
}

static const lkv_policy_kind policies[] = {
    LKV_POLICY_FULL, LKV_POLICY_LAZY, LKV_POLICY_STREAMING, LKV_POLICY_H2O,
    LKV_POLICY_TOVA, LKV_POLICY_SNAPKV, LKV_POLICY_NACL,
};

static const chunked_shape shapes[] = {
    {{LKV_POLICY_FULL, SEQS, 2, 4, 2, LKV_GQA_GROUPED, LKV_DTYPE_F32}, 0},
    {{LKV_POLICY_FULL, SEQS, 2, 4, 2, LKV_GQA_EXPANDED, LKV_DTYPE_F16}, 1},
};

void conf_run_chunked(conf_run *r)
{
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    int supported = ops->attend && ops->observe && ops->score && ops->select && ops->compact;
    size_t ns = sizeof shapes / sizeof shapes[0], np = sizeof policies / sizeof policies[0];
    int index = 0;
    int saved = r->seeds;
    r->seeds = r->opt->quick ? 1 : (saved < 2 ? saved : 2);
    if (r->opt->quick) /* each policy one of the two, alternating (see conf_batch.c) */
        ns = 1;
    int count = (int)(ns * np);
    for (size_t i = 0; i < ns; i++)
        for (size_t p = 0; p < np; p++, index++) {
            chunked_case cc = {shapes[r->opt->quick ? p % 2 : i]};
            const conf_engine_shape *e = &cc.shape.engine;
            cc.shape.engine.policy = policies[p];
            char name[192];
            snprintf(name, sizeof name,
                     "chunked(policy=%s,prompt=%d,chunks=1..%d,layers=%d,hq=%d,hkv=%d,%s,%s,%s)",
                     lkv_policy_name(e->policy), prompt_of(e->policy), SEQS, e->layers,
                     e->q_heads, e->kv_heads, e->gqa == LKV_GQA_GROUPED ? "grouped" : "expanded",
                     cc.shape.batch_calls ? "batch" : "single", conf_dtype_name(e->dtype));
            conf_progress(r, "chunked", index, count);
            conf_group_run(r, name, "chunked", conf_dtype_name(e->dtype), supported, run_seed,
                           &cc);
        }
    r->seeds = saved;
}
