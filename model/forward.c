/* The Llama forward pass with lazykv caches doing the attention. The rows of
 * the scratch arrays are lanes in a decode step and tokens in a prefill; all
 * of it is allocated at create, none per step.
 *
 * Per layer: RMSNorm, the Q/K/V projection (one matmul when the loader put
 * wq, wk, wv side by side, as it does), RoPE on adjacent pairs (angles in
 * double, rotation in float), attention by the cache, the output projection
 * and the residual; then RMSNorm, gate and up (again one matmul), SwiGLU, the
 * down projection and the residual. A prefill runs the FFN over the prompt in
 * chunks of rows so its scratch stays small.
 *
 * The attention of a layer is one lazykv call per cache: the lanes that share
 * a cache (its sequences) go together through lkv_cache_decode_batch or
 * lkv_cache_prefill_batch, so the cache stores, attends and observes them in
 * one dispatch each. */
#include "forward.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "forward_ops.h"
#include "matmul.h"

#define LKV_FFN_CHUNK 64              /* prompt rows per FFN pass */
#define LKV_FORWARD_MAX_ROWS (1 << 20) /* max_lanes and max_prompt bound */
#define LKV_POSITION_HEADROOM (1 << 24) /* what the cache wants left above a position */

struct lkv_forward {
    const lkv_model *m;
    lkv_pool *pool;
    double cache_s; /* seconds inside lkv_cache_decode_batch, all steps */
    int32_t max_lanes, max_prompt, rows, chunk;
    int32_t qd, kvd, half;
    double *inv_freq;          /* [half] theta^(-2i / head_dim) */
    float *x, *xn, *tmp;       /* [rows][dim] */
    float *qkv;                /* [rows][qd + 2 kvd], the fused projection */
    float *q, *att;            /* [rows][qd] */
    float *k, *v;              /* [rows][kvd] */
    float *hb;                 /* [chunk][2 ffn]: gate, up */
    float *hb2;                /* [chunk][ffn] */
    float *cos_t, *sin_t;      /* [rows][half] */
    /* one cache's lanes in a layer: the batch call's lists */
    int32_t *group;            /* [max_lanes] lane indices, in lane order */
    int32_t *seqs;             /* [max_lanes] their sequences */
    int32_t *n_tok, *first;    /* [max_lanes] prompt tokens and first positions */
    unsigned char *taken;      /* [max_lanes] lanes already in a call this layer */
    float *pq, *pk, *pv, *pout; /* [max_lanes][qd | kvd] rows of lanes not side by side */
    float *prompt;             /* the prompt's rows once per sequence of a shared cache */
    size_t prompt_cap;         /* floats in prompt, grown by the prefills that need it */
};

/* What one call runs: a step (one row per lane) or a prompt (one row per
 * token, shared by every lane). */
typedef struct lkv_pass {
    lkv_lane *lanes;
    int32_t n_lanes;
    int32_t rows;
    int prefill;
} lkv_pass;

static float *alloc_floats(size_t n, int *failed)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p)
        *failed = 1;
    return p;
}

static void free_scratch(lkv_forward *fw)
{
    float *all[] = {fw->x,     fw->xn,    fw->tmp, fw->qkv, fw->q,  fw->att,
                    fw->k,     fw->v,     fw->hb,  fw->hb2, fw->pq, fw->pk,
                    fw->pv,    fw->pout,  fw->cos_t, fw->sin_t, fw->prompt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(fw->inv_freq);
    free(fw->group);
    free(fw->seqs);
    free(fw->n_tok);
    free(fw->first);
    free(fw->taken);
}

/* The lists and packed rows of the per-cache batch calls. */
static int alloc_lists(lkv_forward *fw)
{
    size_t lanes = (size_t)fw->max_lanes, qd = (size_t)fw->qd, kvd = (size_t)fw->kvd;
    int failed = 0;
    fw->pq = alloc_floats(lanes * qd, &failed);
    fw->pout = alloc_floats(lanes * qd, &failed);
    fw->pk = alloc_floats(lanes * kvd, &failed);
    fw->pv = alloc_floats(lanes * kvd, &failed);
    fw->group = malloc(lanes * sizeof *fw->group);
    fw->seqs = malloc(lanes * sizeof *fw->seqs);
    fw->n_tok = malloc(lanes * sizeof *fw->n_tok);
    fw->first = malloc(lanes * sizeof *fw->first);
    fw->taken = malloc(lanes);
    return failed || !fw->group || !fw->seqs || !fw->n_tok || !fw->first || !fw->taken;
}

static lkv_status alloc_scratch(lkv_forward *fw)
{
    const lkv_model_config *c = &fw->m->cfg;
    size_t rows = (size_t)fw->rows, chunk = (size_t)fw->chunk;
    size_t dim = (size_t)c->dim, ffn = (size_t)c->ffn_dim;
    size_t qd = (size_t)fw->qd, kvd = (size_t)fw->kvd, half = (size_t)fw->half;
    double per_row = 3.0 * (double)dim + 3.0 * (double)qd + 4.0 * (double)kvd + 2.0 * (double)half;
    double total = (double)rows * per_row + 3.0 * (double)chunk * (double)ffn +
                   2.0 * (double)fw->max_lanes * (double)(qd + kvd);
    if (total * sizeof(float) > (double)(SIZE_MAX / 2))
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "forward pass scratch for %d lanes and %d-token prompts is too large",
                        fw->max_lanes, fw->max_prompt);
    int failed = 0;
    fw->x = alloc_floats(rows * dim, &failed);
    fw->xn = alloc_floats(rows * dim, &failed);
    fw->tmp = alloc_floats(rows * dim, &failed);
    fw->qkv = alloc_floats(rows * (qd + 2 * kvd), &failed);
    fw->q = alloc_floats(rows * qd, &failed);
    fw->att = alloc_floats(rows * qd, &failed);
    fw->k = alloc_floats(rows * kvd, &failed);
    fw->v = alloc_floats(rows * kvd, &failed);
    fw->hb = alloc_floats(chunk * 2 * ffn, &failed);
    fw->hb2 = alloc_floats(chunk * ffn, &failed);
    fw->cos_t = alloc_floats(rows * half, &failed);
    fw->sin_t = alloc_floats(rows * half, &failed);
    fw->inv_freq = malloc(half * sizeof(double));
    failed |= alloc_lists(fw);
    if (failed || !fw->inv_freq)
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "forward pass scratch for %d lanes and %d-token prompts: out of memory",
                        fw->max_lanes, fw->max_prompt);
    for (size_t i = 0; i < half; i++)
        fw->inv_freq[i] = pow((double)c->rope_theta, -2.0 * (double)i / (double)c->head_dim);
    return LKV_OK;
}

lkv_status lkv_forward_create(const lkv_model *m, lkv_pool *pool, int32_t max_lanes,
                              int32_t max_prompt, lkv_forward **out_fw)
{
    lkv_clear_error();
    if (!m || !out_fw)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_forward_create: %s is NULL",
                        !m ? "model" : "out_fw");
    if (max_lanes < 1 || max_lanes > LKV_FORWARD_MAX_ROWS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "max_lanes %d is not in 1..%d", max_lanes,
                        LKV_FORWARD_MAX_ROWS);
    if (max_prompt < 0 || max_prompt > LKV_FORWARD_MAX_ROWS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "max_prompt %d is not in 0..%d", max_prompt,
                        LKV_FORWARD_MAX_ROWS);
    lkv_forward *fw = calloc(1, sizeof *fw);
    if (!fw)
        return lkv_fail(LKV_OUT_OF_MEMORY, "forward pass: out of memory");
    fw->m = m;
    fw->pool = pool;
    fw->max_lanes = max_lanes;
    fw->max_prompt = max_prompt;
    fw->rows = max_lanes > max_prompt ? max_lanes : max_prompt;
    fw->chunk = max_lanes > LKV_FFN_CHUNK ? max_lanes : LKV_FFN_CHUNK;
    if (fw->chunk > fw->rows)
        fw->chunk = fw->rows;
    fw->qd = m->cfg.q_heads * m->cfg.head_dim;
    fw->kvd = m->cfg.kv_heads * m->cfg.head_dim;
    fw->half = m->cfg.head_dim / 2;
    lkv_status st = alloc_scratch(fw);
    if (st != LKV_OK) {
        lkv_forward_free(fw);
        return st;
    }
    *out_fw = fw;
    return LKV_OK;
}

void lkv_forward_free(lkv_forward *fw)
{
    if (!fw)
        return;
    free_scratch(fw);
    free(fw);
}

/* ---- checks: everything is validated before anything changes ---------- */

static lkv_status check_tokens(const lkv_forward *fw, const int32_t *tokens, int32_t n)
{
    if (!tokens)
        return lkv_fail(LKV_INVALID_ARGUMENT, "tokens is NULL");
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= fw->m->cfg.vocab)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "token %d (id %d) is outside the vocabulary 0..%d", i, tokens[i],
                            fw->m->cfg.vocab - 1);
    return LKV_OK;
}

static lkv_status check_shape(const lkv_forward *fw, int32_t i, const lkv_cache_config *c)
{
    const lkv_model_config *m = &fw->m->cfg;
    const char *names[] = {"layers", "q_heads", "kv_heads", "head_dim"};
    const int32_t have[] = {c->layers, c->q_heads, c->kv_heads, c->head_dim};
    const int32_t want[] = {m->layers, m->q_heads, m->kv_heads, m->head_dim};
    for (int f = 0; f < 4; f++)
        if (have[f] != want[f])
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "lane %d: the cache has %s %d but the model %d (size it with "
                            "lkv_model_cache_shape)",
                            i, names[f], have[f], want[f]);
    double scale = 1.0 / sqrt((double)m->head_dim);
    if (c->scale != 0.0f && fabs((double)c->scale - scale) > 1e-6 * scale)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lane %d: the cache's softmax scale %g is not the model's 1/sqrt(%d)", i,
                        (double)c->scale, m->head_dim);
    return LKV_OK;
}

/* The cache's own checks would fire only after earlier lanes had taken the
 * token; these run first so a refused call changes nothing. */
static lkv_status check_lane(const lkv_forward *fw, const lkv_lane *ln, int32_t i,
                             int32_t n_new, int prefill, lkv_cache_config *out_cfg)
{
    if (!ln->cache)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lane %d has no cache", i);
    const lkv_cache_config *c = out_cfg;
    lkv_status st = lkv_cache_get_config(ln->cache, out_cfg);
    if (st == LKV_OK)
        st = check_shape(fw, i, c);
    if (st != LKV_OK)
        return st;
    if (ln->sequence < 0 || ln->sequence >= c->sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lane %d: sequence %d is not in 0..%d", i,
                        ln->sequence, c->sequences - 1);
    if (ln->position < 0 || ln->position > INT32_MAX - LKV_POSITION_HEADROOM - n_new)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lane %d: position %d is out of range", i,
                        ln->position);
    int32_t len = 0, step = 0;
    if ((st = lkv_cache_sequence_info(ln->cache, ln->sequence, &len, &step)) != LKV_OK)
        return st;
    if (prefill && (len != 0 || step != 0))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lane %d: sequence %d already holds %d tokens (step %d): reset it before "
                        "a prefill",
                        i, ln->sequence, len, step);
    if ((int64_t)len + n_new > c->capacity)
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "lane %d: sequence %d holds %d of %d slots, no room for %d more", i,
                        ln->sequence, len, c->capacity, n_new);
    return LKV_OK;
}

/* The scale the cache applies: 0 in a config stands for 1/sqrt(head_dim),
 * worked out as the cache does. */
static float applied_scale(const lkv_cache_config *c)
{
    return c->scale > 0.0f ? c->scale : (float)(1.0 / sqrt((double)c->head_dim));
}

/* A prompt's attention is computed once, through lane 0's cache, and every
 * lane continues from the hidden states it gives; a lane whose cache rounds
 * K/V to another dtype or applies another softmax scale would silently
 * inherit lane 0's numerics. The gqa mode may differ: an expanded cache holds
 * the same K/V values as a grouped one, a copy per q head, and attends them in
 * the same order (test_forward checks the two agree bit for bit), and lazykv
 * eval prefills expanded lanes beside its grouped reference. */
static lkv_status check_same_storage(int32_t i, const lkv_cache_config *c,
                                     const lkv_cache_config *first)
{
    if (c->dtype == first->dtype && applied_scale(c) == applied_scale(first))
        return LKV_OK;
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "lane %d's cache stores K/V as %s with scale %.9g but lane 0's as %s with "
                    "scale %.9g: a prefill attends once, through lane 0's cache, so every lane "
                    "needs lane 0's dtype and scale (prefill such lanes separately)",
                    i, lkv_dtype_name(c->dtype), (double)applied_scale(c), lkv_dtype_name(first->dtype),
                    (double)applied_scale(first));
}

static lkv_status check_lanes(const lkv_forward *fw, const lkv_lane *lanes, int32_t n_lanes,
                              int32_t n_new, int prefill)
{
    if (!lanes)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lanes is NULL");
    if (n_lanes < 1 || n_lanes > fw->max_lanes)
        return lkv_fail(LKV_INVALID_ARGUMENT, "n_lanes %d is not in 1..%d (this pass's max_lanes)",
                        n_lanes, fw->max_lanes);
    lkv_cache_config first, c;
    for (int32_t i = 0; i < n_lanes; i++) {
        lkv_status st = check_lane(fw, &lanes[i], i, n_new, prefill, i == 0 ? &first : &c);
        if (st == LKV_OK && prefill && i > 0)
            st = check_same_storage(i, &c, &first);
        if (st != LKV_OK)
            return st;
        for (int32_t j = 0; j < i; j++)
            if (lanes[j].cache == lanes[i].cache && lanes[j].sequence == lanes[i].sequence)
                return lkv_fail(LKV_INVALID_ARGUMENT,
                                "lanes %d and %d are both sequence %d of one cache", j, i,
                                lanes[i].sequence);
        if (prefill && lanes[i].position != lanes[0].position)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "lane %d is at position %d but lane 0 at %d: a shared prompt needs "
                            "every lane at one position",
                            i, lanes[i].position, lanes[0].position);
    }
    return LKV_OK;
}

/* ---- the layers ----------------------------------------------------------- */

static void embed(lkv_forward *fw, const int32_t *tokens, int32_t rows)
{
    size_t dim = (size_t)fw->m->cfg.dim;
    for (int32_t r = 0; r < rows; r++)
        memcpy(fw->x + (size_t)r * dim, fw->m->embed + (size_t)tokens[r] * dim,
               dim * sizeof(float));
}

static void rms_rows(lkv_forward *fw, float *out, const float *x, const float *w, int32_t rows)
{
    int32_t dim = fw->m->cfg.dim;
    for (int32_t r = 0; r < rows; r++)
        lkv_rmsnorm(out + (size_t)r * (size_t)dim, x + (size_t)r * (size_t)dim, w, dim,
                    fw->m->cfg.norm_eps);
}

/* q, k, v for `rows` rows of xn, post-RoPE, each in the API's layout. */
static void project_qkv(lkv_forward *fw, const lkv_model_layer *L, int32_t rows)
{
    int32_t dim = fw->m->cfg.dim, qd = fw->qd, kvd = fw->kvd;
    size_t d = (size_t)dim;
    if (L->wk == L->wq + (size_t)qd * d && L->wv == L->wk + (size_t)kvd * d) {
        int32_t width = qd + 2 * kvd;
        lkv_matmul(fw->pool, L->wq, width, dim, fw->xn, rows, fw->qkv);
        for (int32_t r = 0; r < rows; r++) {
            const float *src = fw->qkv + (size_t)r * (size_t)width;
            memcpy(fw->q + (size_t)r * (size_t)qd, src, (size_t)qd * sizeof(float));
            memcpy(fw->k + (size_t)r * (size_t)kvd, src + qd, (size_t)kvd * sizeof(float));
            memcpy(fw->v + (size_t)r * (size_t)kvd, src + qd + kvd, (size_t)kvd * sizeof(float));
        }
    } else {
        lkv_matmul(fw->pool, L->wq, qd, dim, fw->xn, rows, fw->q);
        lkv_matmul(fw->pool, L->wk, kvd, dim, fw->xn, rows, fw->k);
        lkv_matmul(fw->pool, L->wv, kvd, dim, fw->xn, rows, fw->v);
    }
    const lkv_model_config *c = &fw->m->cfg;
    for (int32_t r = 0; r < rows; r++) {
        const float *ct = fw->cos_t + (size_t)r * (size_t)fw->half;
        const float *st = fw->sin_t + (size_t)r * (size_t)fw->half;
        lkv_rope_apply(fw->q + (size_t)r * (size_t)qd, c->q_heads, c->head_dim, ct, st);
        lkv_rope_apply(fw->k + (size_t)r * (size_t)kvd, c->kv_heads, c->head_dim, ct, st);
    }
}

/* The lanes from i on that share lane i's cache, in lane order, into
 * fw->group and fw->seqs: the sequence list of one batch call. */
static int32_t gather_cache(lkv_forward *fw, const lkv_pass *p, int32_t i)
{
    int32_t m = 0;
    for (int32_t j = i; j < p->n_lanes; j++)
        if (!fw->taken[j] && p->lanes[j].cache == p->lanes[i].cache) {
            fw->taken[j] = 1;
            fw->group[m] = j;
            fw->seqs[m++] = p->lanes[j].sequence;
        }
    return m;
}

/* Rows group[0..m) of src, `width` floats each, side by side in dst. */
static void pack_rows(float *dst, const float *src, const int32_t *group, int32_t m, size_t width)
{
    for (int32_t k = 0; k < m; k++)
        memcpy(dst + (size_t)k * width, src + (size_t)group[k] * width, width * sizeof(float));
}

static int consecutive(const int32_t *group, int32_t m)
{
    for (int32_t k = 1; k < m; k++)
        if (group[k] != group[0] + k)
            return 0;
    return 1;
}

/* One step of the cache's m lanes. A decode row is its lane's, so lanes
 * side by side pass their rows as they lie; others are packed and their
 * outputs put back. */
static lkv_status decode_cache(lkv_forward *fw, const lkv_pass *p, int32_t layer, int32_t m)
{
    size_t qd = (size_t)fw->qd, kvd = (size_t)fw->kvd, r0 = (size_t)fw->group[0];
    int direct = consecutive(fw->group, m);
    lkv_decode_batch_io io = {.n_sequences = m, .sequences = fw->seqs, .memory = LKV_MEMORY_HOST,
                              .q = fw->q + r0 * qd, .k = fw->k + r0 * kvd, .v = fw->v + r0 * kvd,
                              .out = fw->att + r0 * qd};
    if (!direct) {
        pack_rows(fw->pq, fw->q, fw->group, m, qd);
        pack_rows(fw->pk, fw->k, fw->group, m, kvd);
        pack_rows(fw->pv, fw->v, fw->group, m, kvd);
        io.q = fw->pq, io.k = fw->pk, io.v = fw->pv, io.out = fw->pout;
    }
    double t0 = lkv_clock_seconds();
    lkv_status st = lkv_cache_decode_batch(p->lanes[fw->group[0]].cache, layer, &io);
    fw->cache_s += lkv_clock_seconds() - t0;
    for (int32_t k = 0; st == LKV_OK && !direct && k < m; k++)
        memcpy(fw->att + (size_t)fw->group[k] * qd, fw->pout + (size_t)k * qd, qd * sizeof(float));
    return st;
}

/* Room for `n` floats of repeated prompt rows; kept for the next prefill. */
static lkv_status reserve_prompt(lkv_forward *fw, size_t n)
{
    if (n <= fw->prompt_cap)
        return LKV_OK;
    float *p = realloc(fw->prompt, n * sizeof(float));
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "forward pass: out of memory for a prompt of %zu "
                        "floats shared by several lanes of one cache", n);
    fw->prompt = p;
    fw->prompt_cap = n;
    return LKV_OK;
}

/* The prompt into the cache's m lanes: every sequence takes the same rows,
 * so a cache with several lanes gets them once per sequence, packed. Lane 0's
 * cache also returns the causal output, lane 0's being its first sequence's. */
static lkv_status prefill_cache(lkv_forward *fw, const lkv_pass *p, int32_t layer, int32_t m)
{
    size_t rows = (size_t)p->rows, qn = rows * (size_t)fw->qd, kvn = rows * (size_t)fw->kvd;
    int with_out = fw->group[0] == 0;
    for (int32_t k = 0; k < m; k++) {
        fw->n_tok[k] = p->rows;
        fw->first[k] = p->lanes[fw->group[k]].position;
    }
    lkv_prefill_batch_io io = {.n_sequences = m, .sequences = fw->seqs, .n_tokens = fw->n_tok,
                               .first_position = fw->first, .memory = LKV_MEMORY_HOST,
                               .q = fw->q, .k = fw->k, .v = fw->v,
                               .out = with_out ? fw->att : NULL};
    float *out = NULL;
    if (m > 1) {
        size_t mm = (size_t)m;
        lkv_status st = reserve_prompt(fw, mm * (qn + 2 * kvn + (with_out ? qn : 0)));
        if (st != LKV_OK)
            return st;
        float *q = fw->prompt, *k = q + mm * qn, *v = k + mm * kvn;
        out = with_out ? v + mm * kvn : NULL;
        for (size_t s = 0; s < mm; s++) {
            memcpy(q + s * qn, fw->q, qn * sizeof(float));
            memcpy(k + s * kvn, fw->k, kvn * sizeof(float));
            memcpy(v + s * kvn, fw->v, kvn * sizeof(float));
        }
        io.q = q, io.k = k, io.v = v, io.out = out;
    }
    lkv_status st = lkv_cache_prefill_batch(p->lanes[fw->group[0]].cache, layer, &io);
    if (st == LKV_OK && out)
        memcpy(fw->att, out, qn * sizeof(float));
    return st;
}

/* Attention of every lane, one batch call per cache; a prompt's causal
 * output comes from lane 0. */
static lkv_status attend(lkv_forward *fw, const lkv_pass *p, int32_t layer)
{
    memset(fw->taken, 0, (size_t)p->n_lanes);
    for (int32_t i = 0; i < p->n_lanes; i++) {
        if (fw->taken[i])
            continue;
        int32_t m = gather_cache(fw, p, i);
        lkv_status st = p->prefill ? prefill_cache(fw, p, layer, m) : decode_cache(fw, p, layer, m);
        if (st != LKV_OK)
            return m > 1 ? lkv_fail_context(st, "lane %d and %d more of its cache, layer %d", i,
                                            m - 1, layer)
                         : lkv_fail_context(st, "lane %d, layer %d", i, layer);
    }
    return LKV_OK;
}

static void residual(lkv_forward *fw, int32_t r0, int32_t rows)
{
    size_t dim = (size_t)fw->m->cfg.dim;
    for (int32_t r = r0; r < r0 + rows; r++)
        lkv_add(fw->x + (size_t)r * dim, fw->tmp + (size_t)r * dim, (int32_t)dim);
}

/* SwiGLU FFN of rows [r0, r0 + rows), rows <= chunk. */
static void ffn_rows(lkv_forward *fw, const lkv_model_layer *L, int32_t r0, int32_t rows)
{
    int32_t dim = fw->m->cfg.dim, ffn = fw->m->cfg.ffn_dim;
    size_t d = (size_t)dim, f = (size_t)ffn;
    float *xn = fw->xn + (size_t)r0 * d;
    rms_rows(fw, xn, fw->x + (size_t)r0 * d, L->ffn_norm, rows);
    size_t stride;
    const float *gate, *up;
    if (L->w_up == L->w_gate + f * d) {
        lkv_matmul(fw->pool, L->w_gate, 2 * ffn, dim, xn, rows, fw->hb);
        stride = 2 * f;
        gate = fw->hb;
        up = fw->hb + f;
    } else {
        lkv_matmul(fw->pool, L->w_gate, ffn, dim, xn, rows, fw->hb);
        lkv_matmul(fw->pool, L->w_up, ffn, dim, xn, rows, fw->hb + (size_t)rows * f);
        stride = f;
        gate = fw->hb;
        up = fw->hb + (size_t)rows * f;
    }
    for (int32_t r = 0; r < rows; r++)
        lkv_swiglu(fw->hb2 + (size_t)r * f, gate + (size_t)r * stride, up + (size_t)r * stride,
                   ffn);
    lkv_matmul(fw->pool, L->w_down, dim, ffn, fw->hb2, rows, fw->tmp + (size_t)r0 * d);
    residual(fw, r0, rows);
}

static lkv_status run_layer(lkv_forward *fw, const lkv_pass *p, int32_t layer)
{
    const lkv_model_layer *L = &fw->m->layers[layer];
    int32_t dim = fw->m->cfg.dim;
    rms_rows(fw, fw->xn, fw->x, L->attn_norm, p->rows);
    project_qkv(fw, L, p->rows);
    lkv_status st = attend(fw, p, layer);
    if (st != LKV_OK)
        return st;
    int32_t att_rows = p->prefill ? p->rows : p->n_lanes;
    lkv_matmul(fw->pool, L->wo, dim, fw->qd, fw->att, att_rows, fw->tmp);
    residual(fw, 0, att_rows);
    for (int32_t r0 = 0; r0 < p->rows; r0 += fw->chunk) {
        int32_t n = p->rows - r0 < fw->chunk ? p->rows - r0 : fw->chunk;
        ffn_rows(fw, L, r0, n);
    }
    return LKV_OK;
}

static void logits(lkv_forward *fw, int32_t r0, int32_t rows, float *out)
{
    size_t dim = (size_t)fw->m->cfg.dim;
    rms_rows(fw, fw->xn, fw->x + (size_t)r0 * dim, fw->m->out_norm, rows);
    lkv_matmul(fw->pool, fw->m->classifier, fw->m->cfg.vocab, fw->m->cfg.dim, fw->xn, rows, out);
}

static void angles(lkv_forward *fw, int32_t r, int32_t position)
{
    lkv_rope_angles(fw->inv_freq, fw->half, position, fw->cos_t + (size_t)r * (size_t)fw->half,
                    fw->sin_t + (size_t)r * (size_t)fw->half);
}

static lkv_status run_layers(lkv_forward *fw, const lkv_pass *p)
{
    for (int32_t l = 0; l < fw->m->cfg.layers; l++) {
        lkv_status st = run_layer(fw, p, l);
        if (st != LKV_OK)
            return st;
    }
    return LKV_OK;
}

lkv_status lkv_forward_prefill(lkv_forward *fw, lkv_lane *lanes, int32_t n_lanes,
                               const int32_t *tokens, int32_t n_tokens, float *out_logits)
{
    lkv_clear_error();
    if (!fw)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_forward_prefill: fw is NULL");
    if (n_tokens < 1 || n_tokens > fw->max_prompt)
        return lkv_fail(LKV_INVALID_ARGUMENT, "prompt of %d tokens is not in 1..%d (max_prompt)",
                        n_tokens, fw->max_prompt);
    lkv_status st = check_tokens(fw, tokens, n_tokens);
    if (st == LKV_OK)
        st = check_lanes(fw, lanes, n_lanes, n_tokens, 1);
    if (st != LKV_OK)
        return st;
    embed(fw, tokens, n_tokens);
    for (int32_t t = 0; t < n_tokens; t++)
        angles(fw, t, lanes[0].position + t);
    lkv_pass p = {lanes, n_lanes, n_tokens, 1};
    if ((st = run_layers(fw, &p)) != LKV_OK)
        return st;
    if (out_logits)
        logits(fw, n_tokens - 1, 1, out_logits);
    for (int32_t i = 0; i < n_lanes; i++)
        lanes[i].position += n_tokens;
    return LKV_OK;
}

lkv_status lkv_forward_step(lkv_forward *fw, lkv_lane *lanes, int32_t n_lanes,
                            const int32_t *tokens, float *out_logits)
{
    lkv_clear_error();
    if (!fw)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_forward_step: fw is NULL");
    if (!lanes || n_lanes < 1 || n_lanes > fw->max_lanes)
        return check_lanes(fw, lanes, n_lanes, 1, 0);
    lkv_status st = check_tokens(fw, tokens, n_lanes);
    if (st == LKV_OK)
        st = check_lanes(fw, lanes, n_lanes, 1, 0);
    if (st != LKV_OK)
        return st;
    embed(fw, tokens, n_lanes);
    for (int32_t i = 0; i < n_lanes; i++)
        angles(fw, i, lanes[i].position);
    lkv_pass p = {lanes, n_lanes, n_lanes, 0};
    if ((st = run_layers(fw, &p)) != LKV_OK)
        return st;
    if (out_logits)
        logits(fw, 0, n_lanes, out_logits);
    for (int32_t i = 0; i < n_lanes; i++)
        lanes[i].position += 1;
    return LKV_OK;
}

double lkv_forward_cache_seconds(const lkv_forward *fw)
{
    return fw ? fw->cache_s : 0.0;
}
