/* attend cases: out = softmax(scale q.K) V per query head, and the
 * per-slot probabilities combined over each cache head's query heads.
 *
 * Inputs are shaped to make the classic kernel bugs loud, not subtle:
 *  - the last valid slot holds a key aligned with the group's first query
 *    head (logit +8 above the crowd), so dropping it (an off-by-one at the end)
 *    moves that head's output by 1% (128K slots) to 45% (1K slots);
 *  - every slot past a row's n holds a "poison" key (logit +40) with values of
 *    64, so reading one slot too many swamps the output;
 *  - groups in one dispatch have different lengths and are listed out of
 *    buffer order, with one group of the buffer not listed at all;
 *  - "empty" shapes list a last group with no valid slot (out 0, no
 *    probability written); "masked" shapes give some query heads of the last
 *    group only -inf logits (q[0] = -inf against keys whose element 0 is
 *    positive), where the oracle's exp(-inf - -inf) makes their out NaN and
 *    their probabilities NaN: the mean of a row with such a head is NaN, its
 *    max the other heads' (fmax skips NaN), -inf when every head is masked.
 *
 * Thresholds. The oracle works in double with two passes; a correct kernel
 * accumulates in f32 with an online softmax. Emulating that (one sequential
 * pass, the worst order) on these inputs gives an output NMSE of 1e-13 at 1K
 * slots, 2e-12 at 4K and 6e-11 at 128K, and probabilities within 1e-5
 * relative. Hence:
 *  - out: NMSE <= 1e-8, over 100x above a correct f32 kernel at 128K, while a
 *    sign flip measures 4 and a dropped or extra slot 1e-3 or more;
 *  - probs: |d| <= 1e-9 + 5e-4 |p| element-wise: 50x the f32 error; the
 *    absolute floor is far below a slot's fair share (1/131072 = 7.6e-6) and
 *    only absorbs denormals a GPU may flush. A missing spike changes every
 *    probability of its row by >= 0.7%, and its own by 100%.
 * The same thresholds hold for every storage type: a backend widens f16 and
 * bf16 K/V to f32 exactly, and the oracle reads the same stored bits, so the
 * storage rounding is common to both sides and only the f32 arithmetic
 * differs.
 *
 * Observe modes ("observe=lazy", "accumulate", "assign": a backend whose
 * attend_observes is 1 applies the observe where it computes the
 * probabilities, and keeps none). The oracle attends with probs and then
 * observes; the tested backend does both in its attend, with probs NULL,
 * or, where attend_observes is 0, runs its two ops as core then does.
 * Each group observes at its own step. The state is compared with the
 * probabilities' tolerance: state_f (accumulate, assign: old + p or p)
 * with the probs thresholds; lazy's integer state exactly, except at slots
 * whose oracle probability is within the probs tolerance of alpha, where
 * either decision is right. alpha is 1/n of the first group, so about
 * half of its slots count and a backend that observes nothing, everything
 * or the wrong step differs at thousands of slots. That the fused state is
 * the bits of the same backend's attend and observe is the emulator's unit
 * test (tests/gpu_emu/test_gpu_emu.c); here it is checked against the
 * oracle. Quick grids run them in f32 on the shapes marked `observe`.
 *
 * Storage types. The full grid runs every shape and mode in f32, f16 and
 * bf16. The quick grid runs f32 and f16 everywhere and bf16 only where its
 * shape says: bf16 loads differ from f16 ones only in how an element widens,
 * so three small shapes in every mode (16-byte vectors and the scalar tail,
 * odd head_dim, GQA, -inf logits) and the long 4:1 shape in one mode reach
 * each load path. They add 8% to the quick grid's results and 4% to its time
 * on lavapipe; the long shape in all four modes would add 10% by itself. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"
#include "dtype.h"

#define ATTEND_OUT_NMSE 1e-8
#define ATTEND_PROBS_ATOL 1e-9
#define ATTEND_PROBS_RTOL 5e-4
#define ATTEND_Q_SCALE 1.5      /* logit spread: q.k / sqrt(d) ~ N(0, 1.5^2) */
#define ATTEND_SPIKE_LOGIT 8.0  /* the last valid slot */
#define ATTEND_POISON_LOGIT 40.0 /* every slot past n */
#define ATTEND_POISON_VALUE 64.0f
#define ATTEND_MAX_GROUPS 8
/* a group of the buffer left unlisted, while the K/V stay this small */
#define ATTEND_SPARE_GROUP_BYTES (64u << 20)

typedef enum attend_variant {
    ATTEND_PLAIN = 0,
    ATTEND_EMPTY,  /* the last listed group has no valid slot */
    ATTEND_MASKED, /* the last group's last query head of each cache head, and
                    * every query head of its last cache head, see only -inf */
} attend_variant;

/* The modes every shape runs in: indices of modes[], and bits of a shape's
 * bf16 modes. */
enum {
    MODE_PROBS_NONE,
    MODE_PROBS_MAX,
    MODE_PROBS_MEAN,
    MODE_OUT_NONE,
    MODE_OBSERVE_LAZY,
    MODE_OBSERVE_ACCUMULATE,
    MODE_OBSERVE_ASSIGN,
    MODE_COUNT
};

typedef struct attend_shape {
    int32_t d, n, hq, hkv, groups;
    attend_variant variant; /* EMPTY and MASKED need groups >= 2 */
    conf_bf16_modes bf16;   /* bit MODE_x: bf16 runs in that mode too */
    int observe;            /* 1: the quick grid runs the observe modes (f32) */
} attend_shape;

static const attend_shape quick_grid[] = {
    /* 1:1, a single slot (its probability is exactly 1) */
    {64, 1, 4, 4, 2, ATTEND_PLAIN, CONF_BF16_NONE, 1},
    /* 4:1 as in Llama-3-8B, one past a power of two */
    {128, 4097, 32, 8, 1, ATTEND_PLAIN, CONF_BF16_MODE(MODE_PROBS_MAX), 0},
    /* 8:1, three groups of different lengths */
    {64, 1000, 8, 1, 3, ATTEND_PLAIN, CONF_BF16_NONE, 1},
    /* 8:1, four groups */
    {128, 257, 16, 2, 4, ATTEND_PLAIN, CONF_BF16_NONE, 0},
    /* odd head_dim: no vector loads, odd rows */
    {33, 500, 4, 2, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    /* f32 rows of whole 16-byte units, 2-byte not */
    {100, 300, 6, 3, 1, ATTEND_PLAIN, CONF_BF16_ALL, 0},
    /* 32:1 (MQA): 4 query-head blocks per row */
    {256, 300, 32, 1, 2, ATTEND_PLAIN, CONF_BF16_NONE, 1},
    /* 3:1 as in SmolLM2: a block of 4 query heads with 3 of them used */
    {64, 700, 9, 3, 2, ATTEND_PLAIN, CONF_BF16_NONE, 1},
    /* the largest head_dim: more chunks than lanes */
    {1024, 300, 4, 2, 2, ATTEND_PLAIN, CONF_BF16_NONE, 0},
    /* a listed group without a valid slot */
    {128, 257, 16, 2, 4, ATTEND_EMPTY, CONF_BF16_NONE, 1},
    /* query heads whose every logit is -inf */
    {64, 300, 8, 2, 2, ATTEND_MASKED, CONF_BF16_ALL, 1},
};

static const attend_shape full_grid[] = {
    {64, 1, 4, 4, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {128, 4097, 32, 8, 1, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {64, 1000, 8, 1, 3, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {128, 257, 16, 2, 4, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {33, 500, 4, 2, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {100, 300, 6, 3, 1, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {256, 300, 32, 1, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {1024, 300, 4, 2, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},
    {128, 257, 16, 2, 4, ATTEND_EMPTY, CONF_BF16_ALL, 1},
    {64, 300, 8, 2, 2, ATTEND_MASKED, CONF_BF16_ALL, 1},
    {64, 700, 9, 3, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},     /* 3:1 as in SmolLM2 */
    {64, 4097, 32, 32, 1, ATTEND_PLAIN, CONF_BF16_ALL, 1},  /* 1:1 at full width */
    {128, 16385, 8, 2, 2, ATTEND_PLAIN, CONF_BF16_ALL, 1},  /* 4:1 over 16K slots, two groups */
    {64, 131072, 4, 1, 1, ATTEND_PLAIN, CONF_BF16_ALL, 1},  /* 4:1 over 128K slots */
    {128, 131072, 8, 1, 1, ATTEND_PLAIN, CONF_BF16_ALL, 1}, /* 8:1 over 128K slots */
};

static const char *const variant_names[] = {"", ",empty", ",masked"};

typedef struct attend_mode {
    const char *name;
    int out, probs;
    lkv_group_reduce reduce;
    int observe; /* 1: the observe of `kind` rides on the attend */
    lkv_observe_kind kind;
} attend_mode;

static const attend_mode modes[MODE_COUNT] = {
    [MODE_PROBS_NONE] = {"probs=none", 1, 0, LKV_REDUCE_MAX, 0, 0},
    [MODE_PROBS_MAX] = {"probs=max", 1, 1, LKV_REDUCE_MAX, 0, 0},
    [MODE_PROBS_MEAN] = {"probs=mean", 1, 1, LKV_REDUCE_MEAN, 0, 0},
    [MODE_OUT_NONE] = {"out=none,probs=mean", 0, 1, LKV_REDUCE_MEAN, 0, 0},
    [MODE_OBSERVE_LAZY] = {"observe=lazy,max", 1, 1, LKV_REDUCE_MAX, 1, LKV_OBSERVE_RECURRENCE},
    [MODE_OBSERVE_ACCUMULATE] = {"observe=accumulate,mean", 1, 1, LKV_REDUCE_MEAN, 1,
                                 LKV_OBSERVE_ACCUMULATE},
    [MODE_OBSERVE_ASSIGN] = {"out=none,observe=assign,max", 0, 1, LKV_REDUCE_MAX, 1,
                             LKV_OBSERVE_ASSIGN},
};

/* the most rows a case lists (groups x cache heads of the widest shape) */
#define ATTEND_MAX_ROWS (ATTEND_MAX_GROUPS * 32)

typedef struct attend_case {
    const conf_family *family;
    attend_shape s;
    lkv_dtype dtype;
    const attend_mode *mode;
    int32_t capacity;
    int32_t group_row0[ATTEND_MAX_GROUPS], group_n[ATTEND_MAX_GROUPS];
    int32_t group_t[ATTEND_MAX_GROUPS]; /* observe modes: each group's step */
    float alpha;
    int cache, q, out, probs; /* image indices; -1 when not passed */
} attend_case;

static void put(void *slot, int32_t i, lkv_dtype dtype, float x)
{
    lkv_dtype_store(dtype, slot, (size_t)i, x);
}

/* A key whose logit against q is `logit`, and a value row. */
static void plant(conf_case *c, const attend_case *a, int32_t row, int32_t slot, const float *q,
                  double logit, float value)
{
    int32_t d = a->s.d;
    double qq = 0.0;
    for (int32_t i = 0; i < d; i++)
        qq += (double)q[i] * q[i];
    double f = logit * sqrt((double)d) / (qq > 0.0 ? qq : 1.0);
    void *k = conf_slot(c, a->cache + CONF_K, row, slot);
    void *v = conf_slot(c, a->cache + CONF_V, row, slot);
    for (int32_t i = 0; i < d; i++) {
        put(k, i, a->dtype, (float)(f * q[i]));
        put(v, i, a->dtype, value);
    }
}

static void fill_row(conf_case *c, const attend_case *a, conf_rng *rng, int32_t row, int32_t n,
                     const float *q_first)
{
    for (int32_t slot = 0; slot < n; slot++) {
        void *k = conf_slot(c, a->cache + CONF_K, row, slot);
        void *v = conf_slot(c, a->cache + CONF_V, row, slot);
        for (int32_t i = 0; i < a->s.d; i++) {
            put(k, i, a->dtype, (float)conf_rng_normal(rng));
            put(v, i, a->dtype, (float)conf_rng_normal(rng));
        }
    }
    if (n > 0)
        plant(c, a, row, n - 1, q_first, ATTEND_SPIKE_LOGIT, (float)conf_rng_normal(rng) * 4.0f);
    for (int32_t slot = n; slot < a->capacity; slot++)
        plant(c, a, row, slot, q_first, ATTEND_POISON_LOGIT, ATTEND_POISON_VALUE);
}

static void lay_out(attend_case *a, conf_rng *rng, int32_t *out_groups_in_buffer)
{
    const attend_shape *s = &a->s;
    size_t kv_bytes = (size_t)(s->groups + 1) * (size_t)s->hkv * (size_t)s->n * (size_t)s->d *
                      2 * lkv_dtype_size(a->dtype);
    int32_t total = s->groups + (kv_bytes <= ATTEND_SPARE_GROUP_BYTES);
    int32_t order[ATTEND_MAX_GROUPS + 1];
    for (int32_t g = 0; g < total; g++)
        order[g] = g;
    conf_rng_shuffle(rng, order, total);
    for (int32_t g = 0; g < s->groups; g++) {
        a->group_row0[g] = order[g] * s->hkv;
        a->group_n[g] = g == 0 ? s->n : 1 + conf_rng_below(rng, s->n);
    }
    if (s->variant == ATTEND_EMPTY)
        a->group_n[s->groups - 1] = 0;
    a->capacity = s->n + 1 + conf_rng_below(rng, 3);
    *out_groups_in_buffer = total;
}

/* The MASKED variant (see the top): after the inputs are drawn, q[0] =
 * -inf for the masked heads of the last group and element 0 of every valid
 * key of its rows positive, so every logit of those heads is -inf. */
static void mask(conf_case *c, const attend_case *a, float *q)
{
    const attend_shape *s = &a->s;
    int32_t g = s->groups - 1, per = s->hq / s->hkv;
    for (int32_t h = 0; h < s->hkv; h++) {
        int32_t row = a->group_row0[g] + h;
        for (int32_t j = h == s->hkv - 1 ? 0 : per - 1; j < per; j++)
            q[((size_t)g * (size_t)s->hq + (size_t)(h * per + j)) * (size_t)s->d] = -INFINITY;
        for (int32_t slot = 0; slot < a->group_n[g]; slot++)
            put(conf_slot(c, a->cache + CONF_K, row, slot), 0, a->dtype, 1.0f);
    }
}

/* Observe modes: each group's step, alpha, the state the observe starts
 * from (last before the step; mri and state_f anywhere, never subnormal),
 * and the state the op may write. */
static void prepare_observe(conf_case *c, attend_case *a, conf_rng *rng)
{
    a->alpha = 1.0f / (float)a->s.n;
    for (int32_t g = 0; g < a->s.groups; g++) {
        int32_t t = 1 + conf_rng_below(rng, 200000);
        a->group_t[g] = t;
        for (int32_t h = 0; h < a->s.hkv; h++) {
            int32_t row = a->group_row0[g] + h, n = a->group_n[g];
            int32_t *last = conf_slot(c, a->cache + CONF_STATE_A, row, 0);
            int32_t *mri = conf_slot(c, a->cache + CONF_STATE_B, row, 0);
            float *f = conf_slot(c, a->cache + CONF_STATE_F, row, 0);
            for (int32_t i = 0; i < n; i++) {
                last[i] = conf_rng_below(rng, t);
                mri[i] = conf_rng_below(rng, 3000);
                f[i] = (float)pow(10.0, -1.0 - 6.0 * conf_rng_uniform(rng));
            }
            int lazy = a->mode->kind == LKV_OBSERVE_RECURRENCE;
            conf_allow(c, a->cache + (lazy ? CONF_STATE_A : CONF_STATE_F), row, n);
            if (lazy)
                conf_allow(c, a->cache + CONF_STATE_B, row, n);
        }
    }
}

static int build(conf_case *c, void *params, conf_rng *rng)
{
    attend_case *a = params;
    const attend_shape *s = &a->s;
    int32_t total;
    lay_out(a, rng, &total);
    int32_t rows = total * s->hkv, per = s->hq / s->hkv;
    a->cache = conf_add_cache(c, rows, a->capacity, s->d, a->dtype);
    a->q = conf_add_image(c, "q", CONF_ELEM_F32, s->groups, s->hq, (size_t)s->d * 4);
    a->out = a->mode->out ? conf_add_image(c, "out", CONF_ELEM_F32, s->groups, s->hq,
                                           (size_t)s->d * 4)
                          : -1;
    a->probs = a->mode->probs ? conf_add_image(c, "probs", CONF_ELEM_F32, rows, a->capacity, 4)
                              : -1;
    if (c->failed_alloc)
        return 0;
    float *q = conf_host(c, a->q);
    for (size_t i = 0; i < (size_t)s->groups * (size_t)s->hq * (size_t)s->d; i++)
        q[i] = (float)(ATTEND_Q_SCALE * conf_rng_normal(rng));
    /* out starts far from any output, so an out value a backend leaves
     * unwritten (an empty group's 0, say) differs from the oracle's */
    if (a->out >= 0) {
        float *o = conf_host(c, a->out);
        for (size_t i = 0; i < (size_t)s->groups * (size_t)s->hq * (size_t)s->d; i++)
            o[i] = 1e6f;
    }
    for (int32_t g = 0; g < s->groups; g++) {
        for (int32_t h = 0; h < s->hkv; h++) {
            int32_t row = a->group_row0[g] + h;
            size_t head = (size_t)g * (size_t)s->hq + (size_t)(h * per);
            const float *q_first = q + head * (size_t)s->d;
            fill_row(c, a, rng, row, a->group_n[g], q_first);
            conf_allow(c, a->probs, row, a->group_n[g]);
        }
        conf_allow(c, a->out, g, s->hq);
    }
    if (s->variant == ATTEND_MASKED)
        mask(c, a, q);
    if (a->mode->observe)
        prepare_observe(c, a, rng);
    /* attend reads these and must write none of them (K/V only where small) */
    for (int i = CONF_POS; i < CONF_CACHE_IMAGES; i++)
        conf_watch(c, a->cache + i);
    conf_watch(c, a->q);
    if (c->img[a->cache + CONF_K].bytes <= (16u << 20)) {
        conf_watch(c, a->cache + CONF_K);
        conf_watch(c, a->cache + CONF_V);
    }
    return 1;
}

/* The observe op after attend, as core runs it on a backend that does not
 * fuse them: every row of every group at the group's step. */
static lkv_status observe_after(const conf_case *c, int side, const attend_case *a,
                                const lkv_cache_buffers *cache, const lkv_buffer *probs)
{
    int32_t rows[ATTEND_MAX_ROWS], row_n[ATTEND_MAX_ROWS], row_t[ATTEND_MAX_ROWS], m = 0;
    for (int32_t g = 0; g < a->s.groups; g++)
        for (int32_t h = 0; h < a->s.hkv; h++, m++) {
            rows[m] = a->group_row0[g] + h;
            row_n[m] = a->group_n[g];
            row_t[m] = a->group_t[g];
        }
    lkv_observe_args args = {
        .cache = cache, .n_rows = m, .rows = rows, .row_n = row_n, .probs = probs,
        .kind = a->mode->kind, .t = a->group_t[0], .row_t = row_t, .alpha = a->alpha,
    };
    const lkv_runtime *rt = c->rt[side];
    return rt->ops->observe(rt->dev, &args);
}

static lkv_status invoke(const conf_case *c, int side, const void *params)
{
    const attend_case *a = params;
    lkv_cache_buffers cache = conf_cache_view(c, side, a->cache, a->capacity, a->s.d, a->dtype);
    lkv_attend_args args = {
        .cache = &cache,
        .n_groups = a->s.groups,
        .group_row0 = a->group_row0,
        .group_n = a->group_n,
        .cache_heads = a->s.hkv,
        .q_heads = a->s.hq,
        .scale = (float)(1.0 / sqrt((double)a->s.d)),
        .reduce = a->mode->reduce,
        .q = conf_dev(c, side, a->q),
        .out = conf_dev(c, side, a->out),
        .probs = conf_dev(c, side, a->probs),
    };
    const lkv_runtime *rt = c->rt[side];
    if (!a->mode->observe)
        return rt->ops->attend(rt->dev, &args);
    lkv_attend_observe o = {.kind = a->mode->kind, .alpha = a->alpha, .group_t = a->group_t};
    if (rt->ops->attend_observes) {
        args.probs = NULL; /* fused: the probabilities need not be kept */
        args.observe = &o;
        return rt->ops->attend(rt->dev, &args);
    }
    lkv_status st = rt->ops->attend(rt->dev, &args);
    return st == LKV_OK ? observe_after(c, side, a, &cache, args.probs) : st;
}

static int32_t i32_at(const conf_image *im, int side, int32_t row, int32_t i)
{
    int32_t x;
    memcpy(&x, im->got[side] + ((size_t)row * (size_t)im->capacity + (size_t)i) * 4, 4);
    return x;
}

/* lazy's last and mri exactly, but where the oracle's probability is
 * within the probs tolerance of alpha (either side of it is right). */
static void check_recurrence(const conf_case *c, const attend_case *a, conf_verdict *v)
{
    const conf_image *pr = &c->img[a->probs];
    const conf_image *last = &c->img[a->cache + CONF_STATE_A];
    const conf_image *mri = &c->img[a->cache + CONF_STATE_B];
    int64_t differ = 0, near = 0, compared = 0;
    char first[160] = "";
    for (int32_t g = 0; g < a->s.groups; g++)
        for (int32_t h = 0; h < a->s.hkv; h++) {
            int32_t row = a->group_row0[g] + h;
            for (int32_t i = 0; i < a->group_n[g]; i++) {
                float p;
                memcpy(&p, pr->got[CONF_ORACLE] + ((size_t)row * (size_t)pr->capacity + i) * 4, 4);
                double tol = ATTEND_PROBS_ATOL + ATTEND_PROBS_RTOL * fmax(fabs(p), a->alpha);
                if (fabs((double)p - (double)a->alpha) <= tol) {
                    near++;
                    continue;
                }
                compared++;
                int32_t l0 = i32_at(last, CONF_ORACLE, row, i), l1 = i32_at(last, CONF_TESTED, row, i);
                int32_t m0 = i32_at(mri, CONF_ORACLE, row, i), m1 = i32_at(mri, CONF_TESTED, row, i);
                if (l0 == l1 && m0 == m1)
                    continue;
                if (differ++ == 0)
                    snprintf(first, sizeof first, "; first at row %d slot %d: last %d mri %d, "
                             "oracle %d %d (p %.9g)", row, i, l1, m1, l0, m0, (double)p);
            }
        }
    conf_verdict_check(v, differ != 0, "state mismatches", (double)differ, 0.0,
                       "%lld of %lld slots differ in last/mri%s", (long long)differ,
                       (long long)compared, first);
    conf_verdict_note(v, "alpha %.9g, %lld slots within tolerance of it not compared",
                      (double)a->alpha, (long long)near);
}

static void check(const conf_case *c, const void *params, conf_verdict *v)
{
    const attend_case *a = params;
    if (a->out >= 0)
        conf_check_nmse(c, a->out, ATTEND_OUT_NMSE, v);
    if (a->mode->observe && a->mode->kind == LKV_OBSERVE_RECURRENCE)
        check_recurrence(c, a, v);
    else if (a->mode->observe)
        conf_check_close(c, a->cache + CONF_STATE_F, ATTEND_PROBS_ATOL, ATTEND_PROBS_RTOL, v);
    else if (a->probs >= 0)
        conf_check_close(c, a->probs, ATTEND_PROBS_ATOL, ATTEND_PROBS_RTOL, v);
    conf_check_guards(c, v);
}

static const conf_family family = {sizeof(attend_case), build, invoke, check};

/* Whether the grid runs `shape` in storage `dtype` and mode m: the
 * shape's bf16 modes; observe modes in f32 on the marked shapes of the
 * quick grid, on every shape of the full one. */
static int runs(const conf_run *r, const attend_shape *shape, lkv_dtype dtype, size_t m)
{
    if (modes[m].observe && r->opt->quick && (!shape->observe || dtype != LKV_DTYPE_F32))
        return 0;
    return conf_runs_dtype(shape->bf16, dtype, m);
}

void conf_run_attend(conf_run *r)
{
    const attend_shape *grid = r->opt->quick ? quick_grid : full_grid;
    size_t shapes = r->opt->quick ? sizeof quick_grid / sizeof quick_grid[0]
                                  : sizeof full_grid / sizeof full_grid[0];
    int total = 0, index = 0;
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++)
            for (size_t m = 0; m < MODE_COUNT; m++)
                total += runs(r, &grid[i], conf_dtypes[dt], m);
    const lkv_backend_ops *ops = r->rt[CONF_TESTED]->ops;
    for (size_t i = 0; i < shapes; i++)
        for (size_t dt = 0; dt < conf_dtype_count; dt++)
            for (size_t m = 0; m < MODE_COUNT; m++) {
                if (!runs(r, &grid[i], conf_dtypes[dt], m))
                    continue;
                attend_case a = {.family = &family, .s = grid[i], .dtype = conf_dtypes[dt],
                                 .mode = &modes[m]};
                char name[192];
                snprintf(name, sizeof name, "attend(d=%d,n=%d,hq=%d,hkv=%d,groups=%d%s,%s,%s)",
                         a.s.d, a.s.n, a.s.hq, a.s.hkv, a.s.groups, variant_names[a.s.variant],
                         a.mode->name, conf_dtype_name(a.dtype));
                conf_progress(r, "attend", index++, total);
                int runs_ops = ops->attend && (!a.mode->observe || ops->observe ||
                                               ops->attend_observes);
                conf_group_run(r, name, "attend", conf_dtype_name(a.dtype), runs_ops,
                               conf_case_seed, &a);
            }
}
