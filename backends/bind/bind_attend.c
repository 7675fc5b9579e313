/* attend: four dispatches per chunk of cache heads (see the kernels,
 * backends/vulkan/shaders/attend_*.comp and backends/opencl/kernels/attend_*.cl, for the arithmetic and how it differs from the CPU oracle):
 *   attend_logits   logits of every slot for every query head
 *   attend_split    flash-decoding partials over splits of the cache
 *   attend_combine  out and the log-sum-exp per query head
 *   attend_probs    per-slot probabilities, combined per cache head
 * A chunk is as many cache heads of a group as one binding window holds
 * (all of them unless the cache is very long). */
#include "dtype.h"
#include "error.h"
#include "bind_internal.h"
#include "plan/attend_plan.h"

/* query heads one attend_split workgroup serves (QBLOCK of the shaders) */
#define LKV_BIND_ATT_QBLOCK 8

/* attend's pipelines per K/V storage type, indexed by lkv_dtype: the vector
 * variants load 16 bytes at a time where rows and the window allow. */
typedef struct attend_pipes {
    lkv_bind_pipe logits, logits_vec, split, split_vec;
} attend_pipes;

static const attend_pipes pipes_of_dtype[] = {
    [LKV_DTYPE_F32] = {LKV_BIND_PIPE_attend_logits_f32, LKV_BIND_PIPE_attend_logits_f32_vec,
                       LKV_BIND_PIPE_attend_split_f32, LKV_BIND_PIPE_attend_split_f32_vec},
    [LKV_DTYPE_F16] = {LKV_BIND_PIPE_attend_logits_f16, LKV_BIND_PIPE_attend_logits_f16_vec,
                       LKV_BIND_PIPE_attend_split_f16, LKV_BIND_PIPE_attend_split_f16_vec},
    [LKV_DTYPE_BF16] = {LKV_BIND_PIPE_attend_logits_bf16, LKV_BIND_PIPE_attend_logits_bf16_vec,
                        LKV_BIND_PIPE_attend_split_bf16, LKV_BIND_PIPE_attend_split_bf16_vec},
};
_Static_assert(sizeof pipes_of_dtype / sizeof pipes_of_dtype[0] == LKV_DTYPE_COUNT,
               "one row per lkv_dtype");

typedef struct attend_plan {
    uint32_t n, per, dim, cap, split_len, n_splits, qblocks, dblocks, elem;
    const attend_pipes *pipes; /* of the cache's dtype */
    int64_t heads_fit;         /* cache heads per chunk */
} attend_plan;

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static lkv_status plan_group(lkv_device *d, const lkv_attend_args *a, int32_t n, attend_plan *p)
{
    const lkv_cache_buffers *c = a->cache;
    p->n = (uint32_t)n;
    p->per = (uint32_t)(a->q_heads / a->cache_heads);
    p->dim = (uint32_t)c->head_dim;
    p->cap = (uint32_t)c->capacity;
    p->elem = (uint32_t)lkv_dtype_size(c->dtype);
    p->pipes = &pipes_of_dtype[c->dtype]; /* check_args checked the dtype */
    /* Splits (backends/plan/attend_plan.h): a whole count per group. */
    lkv_attend_split_in in = {
        .slots = p->n,
        .longest = n,
        .units = lkv_attend_units(a->cache_heads, a->q_heads, LKV_BIND_ATT_QBLOCK),
        .budget = lkv_bind_lim(d)->max_groups,
        .align = lkv_bind_lim(d)->wg,
        .rounding = LKV_ATTEND_WHOLE,
    };
    p->split_len = (uint32_t)lkv_attend_split_len(&in);
    p->n_splits = (uint32_t)lkv_attend_splits(p->n, p->split_len);
    p->qblocks = (p->per + LKV_BIND_ATT_QBLOCK - 1) / LKV_BIND_ATT_QBLOCK;
    p->dblocks = (p->dim + lkv_bind_lim(d)->wg - 1) / lkv_bind_lim(d)->wg;
    uint64_t kv_row = (uint64_t)p->cap * p->dim * p->elem;
    uint64_t logit_row = (uint64_t)p->per * (p->n ? p->n : 1) * 4;
    uint64_t part_row = (uint64_t)p->per * (p->n_splits ? p->n_splits : 1) * (p->dim + 2) * 4;
    p->heads_fit = min64(lkv_bind_rows_fit(d, kv_row), lkv_bind_rows_fit(d, (uint64_t)p->cap * 4));
    p->heads_fit = min64(p->heads_fit, min64(lkv_bind_rows_fit(d, logit_row), lkv_bind_rows_fit(d, part_row)));
    p->heads_fit = min64(p->heads_fit, a->cache_heads);
    if (p->heads_fit < 1)
        return lkv_fail(LKV_UNSUPPORTED, "%s attend: one cache head (%llu bytes of K) exceeds this "
                        "device's %llu-byte binding range; lower capacity or head_dim",
                        lkv_bind_name(d), (unsigned long long)kv_row, (unsigned long long)lkv_bind_lim(d)->max_range);
    size_t heads = (size_t)p->heads_fit;
    lkv_status st = lkv_bind_reserve(d, &lkv_bind_of(d)->logits, heads * logit_row);
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->partials, heads * part_row);
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, &lkv_bind_of(d)->lse, heads * p->per * 4);
    return st;
}

/* The 16-byte-load variant needs every K row and q vector to start on a
 * 16-byte boundary of the window. */
static lkv_bind_pipe logits_pipe(const attend_plan *p, uint32_t skew)
{
    uint32_t vec = 16 / p->elem;
    int aligned = p->dim % vec == 0 && skew % vec == 0;
    return aligned ? p->pipes->logits_vec : p->pipes->logits;
}

static lkv_status chunk(lkv_device *d, const lkv_attend_args *a, const attend_plan *p, int32_t g,
                        uint32_t ch_first, uint32_t nch)
{
    const lkv_cache_buffers *c = a->cache;
    int64_t lo = a->group_row0[g] + (int64_t)ch_first, hi = lo + nch - 1;
    uint64_t kv_row = (uint64_t)p->cap * p->dim * p->elem;
    lkv_bind_window k = lkv_bind_window_of(d, c->k, lo, hi, kv_row, p->elem);
    lkv_bind_window v = lkv_bind_window_of(d, c->v, lo, hi, kv_row, p->elem);
    lkv_bind_buf logits = {lkv_bind_of(d)->logits, 0, (uint64_t)nch * p->per * (p->n ? p->n : 1) * 4};
    lkv_bind_buf parts = lkv_bind_whole(d, lkv_bind_of(d)->partials), lse = lkv_bind_whole(d, lkv_bind_of(d)->lse);
    uint32_t q_base = (uint32_t)g * (uint32_t)a->q_heads * p->dim;

    struct { uint32_t n, cap, dim, per, ch_first, kv_skew, q_base; float scale; } lp =
        {p->n, p->cap, p->dim, p->per, ch_first, k.skew, q_base, a->scale};
    lkv_bind_buf b1[3] = {k.bind, lkv_bind_whole(d, a->q), logits};
    lkv_status st = lkv_bind_dispatch(d, logits_pipe(p, k.skew), b1, &lp,
                                      lkv_bind_groups(d, p->n, (int64_t)nch * p->qblocks), nch, p->qblocks);
    struct { uint32_t n, cap, dim, per, kv_skew, split_len, n_splits, dblocks; } sp =
        {p->n, p->cap, p->dim, p->per, v.skew, p->split_len, p->n_splits, p->dblocks};
    lkv_bind_buf b2[3] = {v.bind, logits, parts};
    int vec = p->dim % 4 == 0 && p->dim <= 4 * lkv_bind_lim(d)->wg && v.skew % 4 == 0;
    lkv_bind_pipe split = vec ? p->pipes->split_vec : p->pipes->split;
    if (st == LKV_OK && p->n > 0)
        st = lkv_bind_dispatch(d, split, b2, &sp, p->n_splits, nch, p->qblocks * (vec ? 1 : p->dblocks));
    struct { uint32_t n_splits, dim, qh_first, out_base, has_out; } cp =
        {p->n_splits, p->dim, ch_first * p->per, q_base, a->out != NULL};
    /* Without an output the binding is a stand-in the shader never writes. */
    lkv_bind_buf b3[3] = {parts, a->out ? lkv_bind_whole(d, a->out) : lse, lse};
    if (st == LKV_OK)
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_attend_combine, b3, &cp, nch * p->per, 1, 1);
    if (st != LKV_OK || !a->probs || p->n == 0)
        return st;
    lkv_bind_window pr = lkv_bind_window_of(d, a->probs, lo, hi, (uint64_t)p->cap * 4, 4);
    struct { uint32_t n, cap, per, probs_skew, reduce_max; } pp =
        {p->n, p->cap, p->per, pr.skew, a->reduce == LKV_REDUCE_MAX};
    lkv_bind_buf b4[3] = {logits, lse, pr.bind};
    return lkv_bind_dispatch(d, LKV_BIND_PIPE_attend_probs, b4, &pp, lkv_bind_groups(d, p->n, nch), nch, 1);
}

/* The cache's dtype has pipelines here. q and out are bound whole: they
 * hold a few vectors per group, but a caller could pass more groups than one
 * binding spans. */
static lkv_status check_args(lkv_device *d, const lkv_attend_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, lkv_bind_name(d), "attend");
    if (st != LKV_OK)
        return st;
    const lkv_buffer *io[2] = {a->q, a->out};
    for (int i = 0; i < 2; i++)
        if (io[i] && lkv_bind_size(d, io[i]) > lkv_bind_lim(d)->max_range)
            return lkv_fail(LKV_UNSUPPORTED, "%s attend: a %s buffer of %llu bytes exceeds this "
                            "device's %llu-byte storage-buffer range; attend fewer groups at once",
                            lkv_bind_name(d), i ? "out" : "q", (unsigned long long)lkv_bind_size(d, io[i]),
                            (unsigned long long)lkv_bind_lim(d)->max_range);
    return LKV_OK;
}

lkv_status lkv_bind_attend(lkv_device *d, const lkv_attend_args *a)
{
    lkv_status st0 = check_args(d, a);
    if (st0 != LKV_OK)
        return st0;
    for (int32_t g = 0; g < a->n_groups; g++) {
        attend_plan p;
        lkv_status st = plan_group(d, a, a->group_n[g], &p);
        for (uint32_t ch = 0; st == LKV_OK && ch < (uint32_t)a->cache_heads; ch += (uint32_t)p.heads_fit) {
            uint32_t nch = (uint32_t)min64(p.heads_fit, a->cache_heads - (int64_t)ch);
            st = chunk(d, a, &p, g, ch, nch);
        }
        if (st != LKV_OK)
            return lkv_fail_context(st, "%s attend (group %d of %d slots)", lkv_bind_name(d), g, a->group_n[g]);
    }
    return LKV_OK;
}
