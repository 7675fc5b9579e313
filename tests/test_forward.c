/* The forward pass (model/forward.c) on stories260K against a naive float64
 * Llama written here (its own RoPE, softmax over every past key, no lazykv),
 * and the batched matmul against a double dot product. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "matmul.h"
#include "model.h"
#include "test_util.h"

#define STORIES "models/stories260K/stories260K.bin"

/* ---- fixtures ------------------------------------------------------------ */

static lkv_model *load_stories(void)
{
    const char *path = tu_shared_path(STORIES);
    FILE *f = fopen(path, "rb");
    if (!f)
        cr_skip_test("%s is absent (set LKV_SHARED_DIR)", path);
    fclose(f);
    lkv_model *m = NULL;
    TU_OK(lkv_model_load(path, &m));
    return m;
}

typedef struct rig {
    lkv_runtime *rt;
    lkv_model *m;
    lkv_pool *pool;
    lkv_forward *fw;
} rig;

static rig rig_open(int threads, int32_t max_lanes, int32_t max_prompt)
{
    rig r = {0};
    r.m = load_stories();
    TU_OK(lkv_runtime_open("cpu", &r.rt));
    TU_OK(lkv_pool_create(threads, &r.pool));
    TU_OK(lkv_forward_create(r.m, r.pool, max_lanes, max_prompt, &r.fw));
    return r;
}

static void rig_close(rig *r)
{
    lkv_forward_free(r->fw);
    lkv_pool_free(r->pool);
    lkv_model_free(r->m);
    lkv_runtime_close(r->rt);
}

/* The model's cache shape, policy "full", f32, grouped. */
static lkv_cache_config full_config(const rig *r, int32_t sequences, int32_t capacity)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    lkv_model_cache_shape(r->m, &cfg);
    cfg.sequences = sequences;
    cfg.capacity = capacity;
    return cfg;
}

static lkv_cache *cache_of(const rig *r, const lkv_cache_config *cfg)
{
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(r->rt, cfg, &c));
    return c;
}

static lkv_cache *full_cache(const rig *r, int32_t sequences, int32_t capacity)
{
    lkv_cache_config cfg = full_config(r, sequences, capacity);
    return cache_of(r, &cfg);
}

/* Logits for n rows. */
static float *logits_buf(const rig *r, int32_t n)
{
    float *p = malloc((size_t)n * (size_t)r->m->cfg.vocab * sizeof(float));
    cr_assert_not_null(p);
    return p;
}

/* Every one of the cache's first `sequences` sequences holds nothing. */
static void expect_empty(const lkv_cache *c, int32_t sequences)
{
    for (int32_t i = 0; i < sequences; i++) {
        int32_t len = -1, step = -1;
        TU_OK(lkv_cache_sequence_info(c, i, &len, &step));
        cr_assert(len == 0 && step == 0, "sequence %d holds %d tokens (step %d)", i, len, step);
    }
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* ---- the float64 reference ------------------------------------------------ */

typedef struct ref {
    const lkv_model *m;
    int32_t cap;
    double *k, *v; /* [layers][cap][kvd] post-RoPE keys, values */
    double *x, *xn, *q, *att, *h1, *h3, *tmp;
} ref;

static ref ref_open(const lkv_model *m, int32_t cap)
{
    const lkv_model_config *c = &m->cfg;
    size_t kvd = (size_t)c->kv_heads * c->head_dim;
    ref r = {m, cap, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    r.k = calloc((size_t)c->layers * cap * kvd, sizeof(double));
    r.v = calloc((size_t)c->layers * cap * kvd, sizeof(double));
    r.x = calloc((size_t)c->dim, sizeof(double));
    r.xn = calloc((size_t)c->dim, sizeof(double));
    r.q = calloc((size_t)c->dim, sizeof(double));
    r.att = calloc((size_t)c->dim, sizeof(double));
    r.tmp = calloc((size_t)c->dim, sizeof(double));
    r.h1 = calloc((size_t)c->ffn_dim, sizeof(double));
    r.h3 = calloc((size_t)c->ffn_dim, sizeof(double));
    return r;
}

static void ref_close(ref *r)
{
    double *all[] = {r->k, r->v, r->x, r->xn, r->q, r->att, r->tmp, r->h1, r->h3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static void ref_matvec(const float *w, int rows, int cols, const double *x, double *y)
{
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < cols; c++)
            s += (double)w[(size_t)r * cols + c] * x[c];
        y[r] = s;
    }
}

static void ref_rmsnorm(const double *x, const float *w, int n, double eps, double *out)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double s = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        out[i] = x[i] * s * w[i];
}

/* Rotation of the pairs (2i, 2i+1) by pos * theta^(-2i/hd). */
static void ref_rope(double *v, int heads, int hd, int pos, double theta)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < hd / 2; i++) {
            double a = pos * pow(theta, -2.0 * i / hd);
            double x0 = v[h * hd + 2 * i], x1 = v[h * hd + 2 * i + 1];
            v[h * hd + 2 * i] = x0 * cos(a) - x1 * sin(a);
            v[h * hd + 2 * i + 1] = x0 * sin(a) + x1 * cos(a);
        }
}

static void ref_attention(ref *r, int layer, int pos)
{
    const lkv_model_config *c = &r->m->cfg;
    int hd = c->head_dim, kvd = c->kv_heads * hd, group = c->q_heads / c->kv_heads;
    const double *K = r->k + (size_t)layer * r->cap * kvd;
    const double *V = r->v + (size_t)layer * r->cap * kvd;
    double *p = malloc((size_t)(pos + 1) * sizeof(double));
    for (int h = 0; h < c->q_heads; h++) {
        int kh = h / group;
        double mx = -INFINITY, sum = 0;
        for (int t = 0; t <= pos; t++) {
            double s = 0;
            for (int d = 0; d < hd; d++)
                s += r->q[h * hd + d] * K[(size_t)t * kvd + kh * hd + d];
            p[t] = s / sqrt((double)hd);
            mx = p[t] > mx ? p[t] : mx;
        }
        for (int t = 0; t <= pos; t++)
            sum += (p[t] = exp(p[t] - mx));
        for (int d = 0; d < hd; d++) {
            double o = 0;
            for (int t = 0; t <= pos; t++)
                o += p[t] / sum * V[(size_t)t * kvd + kh * hd + d];
            r->att[h * hd + d] = o;
        }
    }
    free(p);
}

static void ref_ffn(ref *r, const lkv_model_layer *L)
{
    const lkv_model_config *c = &r->m->cfg;
    ref_rmsnorm(r->x, L->ffn_norm, c->dim, c->norm_eps, r->xn);
    ref_matvec(L->w_gate, c->ffn_dim, c->dim, r->xn, r->h1);
    ref_matvec(L->w_up, c->ffn_dim, c->dim, r->xn, r->h3);
    for (int i = 0; i < c->ffn_dim; i++)
        r->h1[i] = r->h1[i] / (1.0 + exp(-r->h1[i])) * r->h3[i];
    ref_matvec(L->w_down, c->dim, c->ffn_dim, r->h1, r->tmp);
    for (int i = 0; i < c->dim; i++)
        r->x[i] += r->tmp[i];
}

static void ref_step(ref *r, int32_t token, int pos, double *logits)
{
    const lkv_model *m = r->m;
    const lkv_model_config *c = &m->cfg;
    int hd = c->head_dim, kvd = c->kv_heads * hd;
    for (int i = 0; i < c->dim; i++)
        r->x[i] = m->embed[(size_t)token * c->dim + i];
    for (int l = 0; l < c->layers; l++) {
        const lkv_model_layer *L = &m->layers[l];
        double *K = r->k + ((size_t)l * r->cap + pos) * kvd;
        double *V = r->v + ((size_t)l * r->cap + pos) * kvd;
        ref_rmsnorm(r->x, L->attn_norm, c->dim, c->norm_eps, r->xn);
        ref_matvec(L->wq, c->q_heads * hd, c->dim, r->xn, r->q);
        ref_matvec(L->wk, kvd, c->dim, r->xn, K);
        ref_matvec(L->wv, kvd, c->dim, r->xn, V);
        ref_rope(r->q, c->q_heads, hd, pos, c->rope_theta);
        ref_rope(K, c->kv_heads, hd, pos, c->rope_theta);
        ref_attention(r, l, pos);
        ref_matvec(L->wo, c->dim, c->q_heads * hd, r->att, r->tmp);
        for (int i = 0; i < c->dim; i++)
            r->x[i] += r->tmp[i];
        ref_ffn(r, L);
    }
    ref_rmsnorm(r->x, m->out_norm, c->dim, c->norm_eps, r->xn);
    ref_matvec(m->classifier, c->vocab, c->dim, r->xn, logits);
}

/* ---- the forward pass against the reference ------------------------------ */

Test(forward, greedy_decode_matches_a_float64_llama)
{
    rig r = rig_open(2, 1, 16);
    int32_t vocab = r.m->cfg.vocab;
    float *lg = malloc((size_t)vocab * sizeof(float));
    double *rl = malloc((size_t)vocab * sizeof(double));
    const int32_t seeds[] = {1, 42, 300};
    double worst = 0;
    for (int s = 0; s < 3; s++) {
        lkv_cache *c = full_cache(&r, 1, 128);
        ref rf = ref_open(r.m, 128);
        lkv_lane lane = {c, 0, 0};
        int32_t tok = seeds[s];
        for (int t = 0; t < 60; t++) {
            TU_OK(lkv_forward_step(r.fw, &lane, 1, &tok, lg));
            ref_step(&rf, tok, t, rl);
            int32_t want = 0;
            for (int32_t i = 0; i < vocab; i++) {
                double d = fabs(lg[i] - rl[i]);
                worst = d > worst ? d : worst;
                if (rl[i] > rl[want])
                    want = i;
            }
            int32_t got = argmax(lg, vocab);
            cr_assert_eq(got, want, "seed %d step %d: greedy token %d, the float64 Llama's %d",
                         seeds[s], t, got, want);
            tok = got;
        }
        cr_assert_eq(lane.position, 60);
        ref_close(&rf);
        lkv_cache_destroy(c);
    }
    fprintf(stderr, "forward vs float64 Llama: max |logit diff| %.3g over 180 steps\n", worst);
    cr_assert_lt(worst, 1e-3, "max |logit diff| %g", worst);
    free(lg);
    free(rl);
    rig_close(&r);
}

/* A greedy continuation of `seed`, the prompts of the tests below. */
static void greedy_tokens(rig *r, int32_t seed, int32_t n, int32_t *out)
{
    lkv_cache *c = full_cache(r, 1, 256);
    lkv_lane lane = {c, 0, 0};
    float *lg = malloc((size_t)r->m->cfg.vocab * sizeof(float));
    out[0] = seed;
    for (int32_t t = 0; t + 1 < n; t++) {
        TU_OK(lkv_forward_step(r->fw, &lane, 1, &out[t], lg));
        out[t + 1] = argmax(lg, r->m->cfg.vocab);
    }
    free(lg);
    lkv_cache_destroy(c);
}

static double max_diff(const float *a, const float *b, int32_t n)
{
    double w = 0;
    for (int32_t i = 0; i < n; i++)
        w = fmax(w, fabs((double)a[i] - (double)b[i]));
    return w;
}

Test(forward, prefill_then_steps_equals_stepping_every_token)
{
    rig r = rig_open(2, 1, 128);
    int32_t vocab = r.m->cfg.vocab, toks[110];
    greedy_tokens(&r, 7, 110, toks); /* a prompt of 100: the FFN runs in chunks */
    lkv_cache *a = full_cache(&r, 1, 160), *b = full_cache(&r, 1, 160);
    lkv_lane la = {a, 0, 0}, lb = {b, 0, 0};
    float *ga = malloc((size_t)vocab * sizeof(float)), *gb = malloc((size_t)vocab * sizeof(float));
    TU_OK(lkv_forward_prefill(r.fw, &la, 1, toks, 100, ga));
    cr_assert_eq(la.position, 100);
    for (int32_t t = 0; t < 100; t++)
        TU_OK(lkv_forward_step(r.fw, &lb, 1, &toks[t], gb));
    double worst = max_diff(ga, gb, vocab);
    for (int32_t t = 100; t < 110; t++) {
        TU_OK(lkv_forward_step(r.fw, &la, 1, &toks[t], ga));
        TU_OK(lkv_forward_step(r.fw, &lb, 1, &toks[t], gb));
        worst = fmax(worst, max_diff(ga, gb, vocab));
    }
    fprintf(stderr, "prefill + steps vs steps only: max |logit diff| %.3g\n", worst);
    cr_assert_lt(worst, 1e-4, "max |logit diff| %g", worst);
    free(ga);
    free(gb);
    lkv_cache_destroy(a);
    lkv_cache_destroy(b);
    rig_close(&r);
}

/* 20 steps of three lanes (two sequences of one cache, one of another). */
static void three_lanes(rig *r, int together, float *out /* [20][3][vocab] */)
{
    int32_t vocab = r->m->cfg.vocab, streams[3][20];
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < 20; t++)
            streams[i][t] = (int32_t)((i * 131 + t * 37 + 5) % vocab);
    lkv_cache *shared = full_cache(r, 2, 64), *own = full_cache(r, 1, 64);
    lkv_lane lanes[3] = {{shared, 1, 0}, {own, 0, 0}, {shared, 0, 0}};
    for (int t = 0; t < 20; t++) {
        float *row = out + (size_t)t * 3 * vocab;
        if (together) {
            int32_t toks[3] = {streams[0][t], streams[1][t], streams[2][t]};
            TU_OK(lkv_forward_step(r->fw, lanes, 3, toks, row));
        } else {
            for (int i = 0; i < 3; i++)
                TU_OK(lkv_forward_step(r->fw, &lanes[i], 1, &streams[i][t],
                                       row + (size_t)i * vocab));
        }
    }
    lkv_cache_destroy(shared);
    lkv_cache_destroy(own);
}

Test(forward, lanes_stepping_together_equal_each_alone_bit_for_bit)
{
    rig r = rig_open(2, 3, 8);
    size_t n = (size_t)20 * 3 * r.m->cfg.vocab;
    float *together = malloc(n * sizeof(float)), *alone = malloc(n * sizeof(float));
    three_lanes(&r, 1, together);
    three_lanes(&r, 0, alone);
    cr_assert_eq(memcmp(together, alone, n * sizeof(float)), 0,
                 "3 lanes stepped together differ from each stepped alone (max %g)",
                 max_diff(together, alone, (int32_t)n));
    free(together);
    free(alone);
    rig_close(&r);
}

/* A 48-token prompt on two lanes, then 10 steps of both: wide enough that
 * the prompt's matmuls split over the threads. */
static void prompt_and_steps(int threads, float *out /* [11][2][vocab] */)
{
    rig r = rig_open(threads, 2, 48);
    int32_t vocab = r.m->cfg.vocab, toks[48];
    for (int i = 0; i < 48; i++)
        toks[i] = (int32_t)((i * 53 + 11) % vocab);
    lkv_cache *c = full_cache(&r, 2, 64);
    lkv_lane lanes[2] = {{c, 0, 0}, {c, 1, 0}};
    TU_OK(lkv_forward_prefill(r.fw, lanes, 2, toks, 48, out));
    for (int t = 0; t < 10; t++) {
        int32_t next[2] = {toks[t], toks[47 - t]};
        TU_OK(lkv_forward_step(r.fw, lanes, 2, next, out + (size_t)(1 + 2 * t) * vocab));
    }
    lkv_cache_destroy(c);
    rig_close(&r);
}

Test(forward, one_thread_and_two_threads_agree_bit_for_bit)
{
    lkv_model *m = load_stories();
    size_t n = (size_t)21 * m->cfg.vocab;
    lkv_model_free(m);
    float *one = malloc(n * sizeof(float)), *two = malloc(n * sizeof(float));
    prompt_and_steps(1, one);
    prompt_and_steps(2, two);
    cr_assert_eq(memcmp(one, two, n * sizeof(float)), 0, "1 vs 2 threads differ (max %g)",
                 max_diff(one, two, (int32_t)n));
    free(one);
    free(two);
}

Test(forward, prefill_lanes_share_the_prompt)
{
    rig r = rig_open(2, 2, 32);
    int32_t vocab = r.m->cfg.vocab, toks[32];
    greedy_tokens(&r, 99, 32, toks);
    lkv_cache *c = full_cache(&r, 2, 64), *solo = full_cache(&r, 1, 64);
    lkv_lane lanes[2] = {{c, 1, 0}, {c, 0, 0}}, one = {solo, 0, 0};
    float *a = malloc((size_t)vocab * sizeof(float)), *b = malloc((size_t)vocab * sizeof(float));
    TU_OK(lkv_forward_prefill(r.fw, lanes, 2, toks, 32, a));
    TU_OK(lkv_forward_prefill(r.fw, &one, 1, toks, 32, b));
    cr_assert_eq(memcmp(a, b, (size_t)vocab * sizeof(float)), 0);
    int32_t len0 = 0, len1 = 0;
    TU_OK(lkv_cache_sequence_info(c, 0, &len0, NULL));
    TU_OK(lkv_cache_sequence_info(c, 1, &len1, NULL));
    cr_assert(len0 == 32 && len1 == 32, "prompt cached in both lanes: %d, %d", len0, len1);
    float *two = malloc(2 * (size_t)vocab * sizeof(float));
    int32_t next[2] = {toks[5], toks[5]};
    TU_OK(lkv_forward_step(r.fw, lanes, 2, next, two));
    cr_assert_eq(memcmp(two, two + vocab, (size_t)vocab * sizeof(float)), 0,
                 "both lanes hold the same prompt, so the same token gives the same logits");
    free(a);
    free(b);
    free(two);
    lkv_cache_destroy(c);
    lkv_cache_destroy(solo);
    rig_close(&r);
}

static float *copy_of(const float *src, size_t n, float **keep, int *n_keep)
{
    float *p = malloc(n * sizeof(float));
    memcpy(p, src, n * sizeof(float));
    keep[(*n_keep)++] = p;
    return p;
}

/* The loaders put wq wk wv (and gate, up) side by side and the pass runs
 * each group as one matmul; weights placed apart take three (two) matmuls,
 * with the same result. */
Test(forward, projections_placed_apart_give_the_same_logits)
{
    rig r = rig_open(2, 2, 16);
    const lkv_model_config *c = &r.m->cfg;
    size_t d = (size_t)c->dim, qd = d, kvd = (size_t)c->kv_heads * c->head_dim;
    size_t f = (size_t)c->ffn_dim;
    lkv_model apart = *r.m;
    lkv_model_layer *layers = malloc((size_t)c->layers * sizeof *layers);
    float *keep[64];
    int n_keep = 0;
    for (int32_t l = 0; l < c->layers; l++) {
        layers[l] = r.m->layers[l];
        layers[l].wq = copy_of(r.m->layers[l].wq, qd * d, keep, &n_keep);
        layers[l].wk = copy_of(r.m->layers[l].wk, kvd * d, keep, &n_keep);
        layers[l].wv = copy_of(r.m->layers[l].wv, kvd * d, keep, &n_keep);
        layers[l].w_gate = copy_of(r.m->layers[l].w_gate, f * d, keep, &n_keep);
        layers[l].w_up = copy_of(r.m->layers[l].w_up, f * d, keep, &n_keep);
    }
    apart.layers = layers;
    lkv_forward *fw2 = NULL;
    TU_OK(lkv_forward_create(&apart, r.pool, 2, 16, &fw2));
    int32_t vocab = c->vocab, toks[16];
    for (int i = 0; i < 16; i++)
        toks[i] = (int32_t)((i * 29 + 3) % vocab);
    lkv_forward *fws[2] = {r.fw, fw2};
    float *out[2];
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(3 * (size_t)vocab * sizeof(float));
        lkv_cache *cache = full_cache(&r, 2, 32);
        lkv_lane lanes[2] = {{cache, 0, 0}, {cache, 1, 0}};
        TU_OK(lkv_forward_prefill(fws[k], lanes, 2, toks, 16, out[k]));
        TU_OK(lkv_forward_step(fws[k], lanes, 2, toks, out[k] + vocab));
        lkv_cache_destroy(cache);
    }
    cr_assert_eq(memcmp(out[0], out[1], 3 * (size_t)vocab * sizeof(float)), 0,
                 "fused and separate projections differ (max %g)",
                 max_diff(out[0], out[1], 3 * vocab));
    for (int k = 0; k < 2; k++)
        free(out[k]);
    for (int i = 0; i < n_keep; i++)
        free(keep[i]);
    free(layers);
    lkv_forward_free(fw2);
    rig_close(&r);
}

/* ---- refusals --------------------------------------------------------------- */

Test(forward, bad_token_is_refused_and_changes_nothing)
{
    rig r = rig_open(1, 2, 8);
    int32_t vocab = r.m->cfg.vocab;
    lkv_cache *c = full_cache(&r, 2, 64), *ref_c = full_cache(&r, 1, 64);
    lkv_lane lanes[2] = {{c, 0, 0}, {c, 1, 0}}, rl = {ref_c, 0, 0};
    float *lg = logits_buf(&r, 2), *want = logits_buf(&r, 1);
    int32_t ok[2] = {3, 4};
    for (int t = 0; t < 3; t++) {
        TU_OK(lkv_forward_step(r.fw, lanes, 2, ok, lg));
        TU_OK(lkv_forward_step(r.fw, &rl, 1, &ok[0], want));
    }
    int32_t bad[2] = {5, vocab};
    cr_assert_eq(lkv_forward_step(r.fw, lanes, 2, bad, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "512") && strstr(lkv_last_error(), "token 1"),
              "message names the token: %s", lkv_last_error());
    int32_t neg = -1;
    cr_assert_eq(lkv_forward_step(r.fw, lanes, 1, &neg, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "-1"), "%s", lkv_last_error());
    int32_t prompt[3] = {1, 2, 9999};
    lkv_cache *fresh = full_cache(&r, 1, 64);
    lkv_lane fl = {fresh, 0, 0};
    cr_assert_eq(lkv_forward_prefill(r.fw, &fl, 1, prompt, 3, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "9999"), "%s", lkv_last_error());
    expect_empty(fresh, 1);
    cr_assert_eq(fl.position, 0);
    cr_assert(lanes[0].position == 3 && lanes[1].position == 3, "positions unchanged");
    for (int i = 0; i < 2; i++) {
        int32_t len = -1, step = -1;
        TU_OK(lkv_cache_sequence_info(c, i, &len, &step));
        cr_assert(len == 3 && step == 3, "lane %d: %d tokens at step %d after the refusal", i, len,
                  step);
    }
    TU_OK(lkv_forward_step(r.fw, lanes, 2, ok, lg));
    TU_OK(lkv_forward_step(r.fw, &rl, 1, &ok[0], want));
    cr_assert_eq(memcmp(lg, want, (size_t)vocab * sizeof(float)), 0,
                 "the next step is as if the refused one never came");
    free(lg);
    free(want);
    lkv_cache_destroy(fresh);
    lkv_cache_destroy(c);
    lkv_cache_destroy(ref_c);
    rig_close(&r);
}

Test(forward, cache_of_another_shape_is_refused)
{
    rig r = rig_open(1, 1, 8);
    float *lg = logits_buf(&r, 1);
    struct {
        int32_t layers, q_heads, kv_heads, head_dim;
        const char *named;
    } bad[] = {{4, 8, 4, 8, "layers 4"}, {5, 8, 2, 8, "kv_heads 2"},
               {5, 8, 4, 16, "head_dim 16"}, {5, 4, 4, 8, "q_heads 4"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_cache_config cfg;
        lkv_cache_config_init(&cfg);
        cfg.layers = bad[i].layers;
        cfg.q_heads = bad[i].q_heads;
        cfg.kv_heads = bad[i].kv_heads;
        cfg.head_dim = bad[i].head_dim;
        cfg.capacity = 64;
        lkv_cache *c = cache_of(&r, &cfg);
        lkv_lane lane = {c, 0, 0};
        int32_t tok = 1;
        cr_assert_eq(lkv_forward_step(r.fw, &lane, 1, &tok, lg), LKV_INVALID_ARGUMENT);
        cr_assert(strstr(lkv_last_error(), bad[i].named), "'%s' should name %s", lkv_last_error(),
                  bad[i].named);
        cr_assert_eq(lkv_forward_prefill(r.fw, &lane, 1, &tok, 1, lg), LKV_INVALID_ARGUMENT);
        cr_assert_eq(lane.position, 0);
        lkv_cache_destroy(c);
    }
    free(lg);
    rig_close(&r);
}

Test(forward, lane_and_prompt_counts_out_of_range_are_refused)
{
    rig r = rig_open(1, 2, 4);
    float *lg = logits_buf(&r, 3);
    lkv_cache *c = full_cache(&r, 3, 64);
    lkv_lane lanes[3] = {{c, 0, 0}, {c, 1, 0}, {c, 2, 0}};
    int32_t toks[5] = {1, 2, 3, 4, 5};
    cr_assert_eq(lkv_forward_step(r.fw, lanes, 3, toks, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "n_lanes 3"), "%s", lkv_last_error());
    cr_assert_eq(lkv_forward_prefill(r.fw, lanes, 1, toks, 0, lg), LKV_INVALID_ARGUMENT);
    cr_assert_eq(lkv_forward_prefill(r.fw, lanes, 1, toks, 5, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "5 tokens"), "%s", lkv_last_error());
    lkv_lane twice[2] = {{c, 1, 0}, {c, 1, 0}};
    cr_assert_eq(lkv_forward_step(r.fw, twice, 2, toks, lg), LKV_INVALID_ARGUMENT);
    lkv_lane apart[2] = {{c, 0, 0}, {c, 1, 3}};
    cr_assert_eq(lkv_forward_prefill(r.fw, apart, 2, toks, 2, lg), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "position 3"), "%s", lkv_last_error());
    expect_empty(c, 3);
    free(lg);
    lkv_cache_destroy(c);
    rig_close(&r);
}

/* A prompt is attended once, through lane 0's cache: a lane whose cache
 * stores K/V at another precision or with another scale would silently take
 * lane 0's numerics, so the prefill refuses it and leaves every lane as it
 * was. */
Test(forward, prefill_refuses_lanes_whose_caches_store_kv_differently)
{
    rig r = rig_open(1, 2, 4);
    float *lg = logits_buf(&r, 2);
    lkv_cache_config base = full_config(&r, 1, 64);
    lkv_cache_config f16 = base, scaled = base;
    f16.dtype = LKV_DTYPE_F16;
    /* One float step above 1/sqrt(head_dim): the model accepts it (within
     * 1e-6), but it is not lane 0's scale. */
    scaled.scale = nextafterf((float)(1.0 / sqrt((double)base.head_dim)), 1.0f);
    struct {
        const lkv_cache_config *cfg;
        const char *named[2];
    } cases[] = {{&f16, {"lane 1's cache stores K/V as f16", "lane 0's as f32"}},
                 {&scaled, {"lane 1's cache", "scale"}}};
    int32_t toks[2] = {1, 2};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lkv_cache *first = cache_of(&r, &base), *other = cache_of(&r, cases[i].cfg);
        lkv_lane lanes[2] = {{first, 0, 0}, {other, 0, 0}};
        cr_assert_eq(lkv_forward_prefill(r.fw, lanes, 2, toks, 2, lg), LKV_INVALID_ARGUMENT,
                     "case %zu", i);
        for (int k = 0; k < 2; k++)
            cr_assert(strstr(lkv_last_error(), cases[i].named[k]), "'%s' should say '%s'",
                      lkv_last_error(), cases[i].named[k]);
        cr_assert(lanes[0].position == 0 && lanes[1].position == 0);
        expect_empty(first, 1);
        expect_empty(other, 1);
        /* Steps attend per lane, so the same lanes may step together. */
        TU_OK(lkv_forward_step(r.fw, lanes, 2, toks, lg));
        lkv_cache_destroy(first);
        lkv_cache_destroy(other);
    }
    free(lg);
    rig_close(&r);
}

/* A grouped cache keeps one copy of each kv head's K/V and an expanded one a
 * copy per q head: the same values, attended in the same order, so an
 * expanded lane may share a prefill whose attention ran through a grouped
 * lane 0 and continue exactly as it would have alone. */
Test(forward, grouped_and_expanded_lanes_share_a_prefill_bit_for_bit)
{
    rig r = rig_open(2, 2, 32);
    int32_t vocab = r.m->cfg.vocab, toks[32];
    greedy_tokens(&r, 11, 32, toks);
    lkv_cache_config grouped = full_config(&r, 1, 64), expanded = grouped;
    expanded.gqa = LKV_GQA_EXPANDED;
    lkv_cache *g = cache_of(&r, &grouped), *e = cache_of(&r, &expanded),
              *solo = cache_of(&r, &expanded);
    lkv_lane lanes[2] = {{g, 0, 0}, {e, 0, 0}}, one = {solo, 0, 0};
    float *shared = logits_buf(&r, 2), *alone = logits_buf(&r, 1);
    TU_OK(lkv_forward_prefill(r.fw, lanes, 2, toks, 32, shared));
    TU_OK(lkv_forward_prefill(r.fw, &one, 1, toks, 32, alone));
    cr_assert_eq(memcmp(shared, alone, (size_t)vocab * sizeof(float)), 0,
                 "prompt logits differ (max %g)", max_diff(shared, alone, vocab));
    for (int t = 0; t < 4; t++) {
        int32_t next[2] = {toks[t], toks[t]};
        TU_OK(lkv_forward_step(r.fw, lanes, 2, next, shared));
        TU_OK(lkv_forward_step(r.fw, &one, 1, &next[1], alone));
        cr_assert_eq(memcmp(shared + vocab, alone, (size_t)vocab * sizeof(float)), 0,
                     "step %d: the expanded lane differs from its run alone (max %g)", t,
                     max_diff(shared + vocab, alone, vocab));
    }
    free(shared);
    free(alone);
    lkv_cache_destroy(g);
    lkv_cache_destroy(e);
    lkv_cache_destroy(solo);
    rig_close(&r);
}

Test(forward, full_cache_is_refused_before_any_lane_steps)
{
    rig r = rig_open(1, 2, 4);
    float *lg = logits_buf(&r, 2);
    lkv_cache *big = full_cache(&r, 1, 64), *small = full_cache(&r, 1, 3);
    lkv_lane lanes[2] = {{big, 0, 0}, {small, 0, 0}};
    int32_t toks[2] = {1, 2};
    for (int t = 0; t < 3; t++)
        TU_OK(lkv_forward_step(r.fw, lanes, 2, toks, lg));
    cr_assert_eq(lkv_forward_step(r.fw, lanes, 2, toks, lg), LKV_OUT_OF_MEMORY);
    cr_assert(strstr(lkv_last_error(), "lane 1"), "%s", lkv_last_error());
    int32_t len = 0;
    TU_OK(lkv_cache_sequence_info(big, 0, &len, NULL));
    cr_assert_eq(len, 3, "lane 0 did not take the refused token");
    cr_assert(lanes[0].position == 3 && lanes[1].position == 3);
    free(lg);
    lkv_cache_destroy(big);
    lkv_cache_destroy(small);
    rig_close(&r);
}

/* ---- the matmul ---------------------------------------------------------------- */

static void check_matmul(lkv_pool *pool, int32_t rows, int32_t cols, int32_t lanes,
                         uint64_t *seed)
{
    float *w = tu_alloc_normal((size_t)rows * cols, seed, 1.0);
    float *x = tu_alloc_normal((size_t)lanes * cols, seed, 1.0);
    float *y = malloc((size_t)lanes * rows * sizeof(float));
    float *y1 = malloc((size_t)rows * sizeof(float));
    lkv_matmul(pool, w, rows, cols, x, lanes, y);
    for (int32_t l = 0; l < lanes; l++) {
        lkv_matmul(pool, w, rows, cols, x + (size_t)l * cols, 1, y1);
        for (int32_t r = 0; r < rows; r++) {
            double s = 0, mag = 0;
            for (int32_t c = 0; c < cols; c++) {
                double p = (double)w[(size_t)r * cols + c] * x[(size_t)l * cols + c];
                s += p;
                mag += fabs(p);
            }
            float got = y[(size_t)l * rows + r];
            double bound = (double)(cols / 8 + 12) * 1.2e-7 * mag + 1e-30;
            cr_assert(fabs(got - s) <= bound,
                      "%dx%d, %d lanes: y[%d][%d] = %.9g, double %.9g", rows, cols, lanes, l, r,
                      (double)got, s);
            cr_assert(y1[r] == got, "%dx%d: lane %d alone %.9g, in a batch of %d %.9g", rows,
                      cols, l, (double)y1[r], lanes, (double)got);
        }
    }
    free(w);
    free(x);
    free(y);
    free(y1);
}

Test(matmul, matches_double_on_shapes_off_the_blocking)
{
    lkv_pool *pool = NULL;
    TU_OK(lkv_pool_create(3, &pool));
    uint64_t seed = 11;
    const int32_t rows[] = {1, 3, 5, 7, 13, 67};
    const int32_t cols[] = {1, 5, 8, 9, 15, 17, 63, 130};
    const int32_t lanes[] = {1, 2, 3, 5, 7, 9};
    for (size_t a = 0; a < 6; a++)
        for (size_t b = 0; b < 8; b++)
            for (size_t c = 0; c < 6; c++)
                check_matmul(pool, rows[a], cols[b], lanes[c], &seed);
    check_matmul(pool, 301, 517, 6, &seed); /* big enough to use the threads */
    lkv_pool_free(pool);
}

Test(matmul, result_does_not_depend_on_the_thread_count)
{
    uint64_t seed = 5;
    int32_t rows = 1029, cols = 333, lanes = 7;
    float *w = tu_alloc_normal((size_t)rows * cols, &seed, 1.0);
    float *x = tu_alloc_normal((size_t)lanes * cols, &seed, 1.0);
    float *ref_y = malloc((size_t)lanes * rows * sizeof(float));
    float *y = malloc((size_t)lanes * rows * sizeof(float));
    for (int threads = 1; threads <= 4; threads++) {
        lkv_pool *pool = NULL;
        TU_OK(lkv_pool_create(threads, &pool));
        cr_assert_eq(lkv_pool_threads(pool), threads);
        lkv_matmul(pool, w, rows, cols, x, lanes, threads == 1 ? ref_y : y);
        if (threads > 1)
            cr_assert_eq(memcmp(ref_y, y, (size_t)lanes * rows * sizeof(float)), 0,
                         "%d threads differ from 1", threads);
        lkv_pool_free(pool);
    }
    free(w);
    free(x);
    free(ref_y);
    free(y);
}

/* ---- the pool ---------------------------------------------------------------- */

static void mark(void *ctx, int64_t begin, int64_t end)
{
    int *hits = ctx;
    for (int64_t i = begin; i < end; i++)
        hits[i]++;
}

Test(pool, every_index_runs_once_per_job)
{
    lkv_pool *pool = NULL;
    TU_OK(lkv_pool_create(4, &pool));
    int hits[103];
    for (int64_t n = 0; n <= 103; n += 17) {
        memset(hits, 0, sizeof hits);
        for (int rep = 0; rep < 50; rep++)
            lkv_pool_run(pool, n, mark, hits);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(hits[i], 50, "n %lld: index %lld ran %d times", (long long)n,
                         (long long)i, hits[i]);
    }
    lkv_pool_free(pool);
}

/* A job's hand-over both ways: to workers still spinning after the last job
 * and to workers asleep (a pause well past the pool's spin), and a caller
 * that waits for a slow share past its own spin, then sleeps for it. */
typedef struct paced_job {
    int hits[64];
    int slow; /* the shares after the first sleep this long, in us */
} paced_job;

static void pause_us(int us)
{
    struct timespec t = {0, (long)us * 1000};
    nanosleep(&t, NULL);
}

static void paced_mark(void *ctx, int64_t begin, int64_t end)
{
    paced_job *j = ctx;
    if (begin > 0 && j->slow)
        pause_us(j->slow);
    for (int64_t i = begin; i < end; i++)
        j->hits[i]++;
}

Test(pool, jobs_reach_spinning_and_sleeping_workers)
{
    lkv_pool *pool = NULL;
    TU_OK(lkv_pool_create(3, &pool));
    paced_job job;
    memset(&job, 0, sizeof job);
    enum { REPS = 40 };
    for (int rep = 0; rep < REPS; rep++) {
        if (rep % 4 == 1)
            pause_us(3000); /* the workers fall asleep */
        job.slow = rep % 4 == 2 ? 3000 : 0;
        lkv_pool_run(pool, 64, paced_mark, &job);
    }
    for (int i = 0; i < 64; i++)
        cr_assert_eq(job.hits[i], REPS, "index %d ran %d times", i, job.hits[i]);
    lkv_pool_free(pool);
}

Test(pool, bad_thread_count_in_the_environment_is_refused)
{
    const char *bad[] = {"zero", "0", "-2", "3x", "100000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("LAZYKV_MODEL_THREADS", bad[i], 1);
        lkv_pool *pool = NULL;
        cr_assert_eq(lkv_pool_create(0, &pool), LKV_INVALID_ARGUMENT, "'%s' accepted", bad[i]);
        cr_assert(strstr(lkv_last_error(), "LAZYKV_MODEL_THREADS") &&
                      strstr(lkv_last_error(), bad[i]),
                  "%s", lkv_last_error());
        cr_assert_null(pool);
    }
    setenv("LAZYKV_MODEL_THREADS", "3", 1);
    lkv_pool *pool = NULL;
    TU_OK(lkv_pool_create(0, &pool));
    cr_assert_eq(lkv_pool_threads(pool), 3);
    lkv_pool_free(pool);
    TU_OK(lkv_pool_create(2, &pool)); /* an explicit count wins over the variable */
    cr_assert_eq(lkv_pool_threads(pool), 2);
    lkv_pool_free(pool);
    unsetenv("LAZYKV_MODEL_THREADS");
}
