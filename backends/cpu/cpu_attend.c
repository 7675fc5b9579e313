/* attend, fast: flash-decoding over the pool, one dispatch per call. Each
 * cache row (group x cache head) is cut into chunks of slots; every (row,
 * chunk) is one work item, spread over the pool, which runs the chunk
 * kernel (cpu_chunk.h), reading K and V once for all the query heads of the
 * row's cache head; the item that finishes a row's last chunk then combines
 * the row's chunks (the online softmax's rescale by exp(m_chunk - m_row))
 * into the output and, when asked, the reduced probabilities. A row's chunks
 * are cut from its own slot count alone, so a row's every bit is the same
 * whatever else the call holds (a batch is exactly its sequences' single
 * calls, include/lazykv.h) and whatever the pool's size.
 *
 * Differs from the oracle (backends/ref/ref_attend.c), within conformance's
 * attend tolerances: f32 throughout instead of double; products summed in
 * vector lanes, then across lanes, then across chunks (the oracle sums in
 * slot and dimension order); one softmax per chunk rescaled at the combine
 * instead of a max-then-exp pass; a polynomial exp. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "dtype.h"
#include "error.h"

/* A row of n slots is cut into chunks of equal length (a multiple of 64),
 * as many as n / CHUNK_MIN up to CHUNKS_PER_ROW, more only to keep them
 * under CHUNK_MAX: a long row splits across threads (flash-decoding), a
 * batch spreads its rows. The cut depends on n alone, not on the other rows
 * of the call nor on the pool, so the sums, and every bit of the result,
 * depend neither on the batch (conformance's batch family, bit for bit) nor
 * on LAZYKV_CPU_THREADS (test_cpu_threads.c). */
#define CHUNK_MIN 256
#define CHUNK_MAX 4096
#define CHUNKS_PER_ROW 16
/* Below this many multiply-adds a wake-up of the pool costs more than it
 * saves. */
#define PARALLEL_WORK 2.0e5

typedef struct chunk_item {
    int32_t g, ch, first, n;
    int64_t row;  /* g * cache_heads + ch */
    size_t e_off; /* floats into the e scratch: [per][n] */
} chunk_item;

typedef struct attend_plan {
    const lkv_attend_args *a;
    lkv_cpu_chunk_fn chunk;
    int32_t per, dim;
    int64_t n_items, n_rows;
    chunk_item *items;   /* [n_items], rows' chunks consecutive */
    int64_t *row_first;  /* [n_rows + 1]: a row's items */
    atomic_int *left;    /* [n_rows]: chunks of the row not yet done */
    float *e;
    float *parts; /* [n_items][part_floats]: m[per], l[per], acc[per][dim] */
    float *w;     /* [n_items][per]: each chunk's factors at the combine */
} attend_plan;

/* One item's partials: its max and sum per head, then its accumulators. */
static size_t part_floats(const attend_plan *p)
{
    return (size_t)p->per * ((size_t)p->dim + 2);
}

/* The chunk length for a row of n slots: a function of n alone (an empty
 * row has no chunks; any positive length keeps the counts' division). */
static int32_t chunk_length(int32_t n)
{
    if (n < 1)
        return CHUNK_MIN;
    int64_t count = ((int64_t)n + CHUNK_MIN - 1) / CHUNK_MIN;
    count = count > CHUNKS_PER_ROW ? CHUNKS_PER_ROW : count < 1 ? 1 : count;
    int64_t least = ((int64_t)n + CHUNK_MAX - 1) / CHUNK_MAX;
    count = count < least ? least : count;
    int64_t len = ((int64_t)n + count - 1) / count;
    return (int32_t)((len + 63) / 64 * 64);
}

/* Counts the items and the scratch floats they need. */
static void plan_size(const attend_plan *p, int64_t *out_items, size_t *out_e, size_t *out_parts)
{
    const lkv_attend_args *a = p->a;
    int64_t items = 0;
    size_t e = 0;
    for (int32_t g = 0; g < a->n_groups; g++) {
        int64_t n = a->group_n[g], len = chunk_length(a->group_n[g]);
        items += (n + len - 1) / len * a->cache_heads;
        e += (size_t)n * (size_t)a->cache_heads * (size_t)p->per;
    }
    *out_items = items;
    *out_e = e;
    *out_parts = (size_t)items * (part_floats(p) + (size_t)p->per); /* + the factors w */
}

static void plan_items(attend_plan *p)
{
    const lkv_attend_args *a = p->a;
    int64_t it = 0, row = 0;
    size_t e = 0;
    for (int32_t g = 0; g < a->n_groups; g++) {
        int32_t len = chunk_length(a->group_n[g]);
        for (int32_t ch = 0; ch < a->cache_heads; ch++, row++) {
            p->row_first[row] = it;
            for (int32_t s = 0; s < a->group_n[g]; s += len, it++) {
                int32_t n = a->group_n[g] - s < len ? a->group_n[g] - s : len;
                p->items[it] = (chunk_item){g, ch, s, n, row, e};
                e += (size_t)n * (size_t)p->per;
            }
            atomic_init(&p->left[row], (int)(it - p->row_first[row]));
        }
    }
    p->row_first[row] = it;
}

static void combine_row(const attend_plan *p, int64_t r);

/* Items [begin, end): each chunk, then its row's combine where it was the
 * row's last chunk to finish (acq_rel: that share sees every chunk's
 * partials). Which share combines does not change a bit: the combine reads
 * the row's partials in chunk order. */
static void run_items(void *ctx, int64_t begin, int64_t end)
{
    const attend_plan *p = ctx;
    const lkv_attend_args *a = p->a;
    const lkv_cache_buffers *c = a->cache;
    size_t row_bytes = (size_t)p->dim * lkv_dtype_size(c->dtype);
    for (int64_t i = begin; i < end; i++) {
        const chunk_item *it = &p->items[i];
        int32_t row = a->group_row0[it->g] + it->ch;
        /* with a hole map, K/V from the row's start (the pool's when paged),
         * the map from the chunk's */
        const int32_t *at = c->phys ? lkv_hostmem_row_i32(c->phys, c->capacity, row) + it->first
                                    : NULL;
        size_t row0 = c->paged ? 0 : (size_t)row * (size_t)c->capacity;
        size_t slot0 = (row0 + (size_t)(at ? 0 : it->first)) * row_bytes;
        size_t q_off = ((size_t)it->g * (size_t)a->q_heads + (size_t)it->ch * (size_t)p->per) *
                       (size_t)p->dim;
        float *part = p->parts + (size_t)i * part_floats(p);
        lkv_cpu_chunk k = {
            .dtype = c->dtype, .k = c->k->data + slot0, .v = c->v->data + slot0, .at = at, .n = it->n,
            .dim = p->dim, .per = p->per, .q = (const float *)(const void *)a->q->data + q_off,
            .scale = a->scale, .e = p->e + it->e_off, .e_stride = (size_t)it->n, .m = part,
            .l = part + p->per, .acc = part + 2 * p->per,
        };
        p->chunk(&k);
        if (atomic_fetch_sub_explicit(&p->left[it->row], 1, memory_order_acq_rel) == 1)
            combine_row(p, it->row);
    }
}

/* Row r's output and probabilities from its chunks. w[c][j] becomes chunk
 * c's factor for head j: exp(m_c - m_row) / l_row. */
static void combine_row(const attend_plan *p, int64_t r)
{
    const lkv_attend_args *a = p->a;
    int64_t first = p->row_first[r], count = p->row_first[r + 1] - first;
    if (count == 0) { /* no slots: out is 0, as the oracle's empty sum */
        int32_t g = (int32_t)(r / a->cache_heads), ch = (int32_t)(r % a->cache_heads);
        if (a->out)
            memset((float *)(void *)a->out->data +
                       ((size_t)g * (size_t)a->q_heads + (size_t)ch * (size_t)p->per) *
                           (size_t)p->dim,
                   0, sizeof(float) * (size_t)p->per * (size_t)p->dim);
        return;
    }
    float *w = p->w + (size_t)first * (size_t)p->per;
    const chunk_item *items = p->items + first;
    int32_t per = p->per, dim = p->dim;
    size_t part = part_floats(p);
    const float *parts = p->parts + (size_t)first * part;
    for (int32_t j = 0; j < per; j++) {
        float m = -INFINITY, l = 0.0f;
        for (int64_t c = 0; c < count; c++)
            m = fmaxf(m, parts[(size_t)c * part + (size_t)j]);
        for (int64_t c = 0; c < count; c++) {
            w[c * per + j] = expf(parts[(size_t)c * part + (size_t)j] - m);
            l += w[c * per + j] * parts[(size_t)c * part + (size_t)per + (size_t)j];
        }
        for (int64_t c = 0; c < count; c++)
            w[c * per + j] /= l;
    }
    const chunk_item *it0 = &items[0];
    if (a->out) {
        float *out = (float *)(void *)a->out->data +
                     ((size_t)it0->g * (size_t)a->q_heads + (size_t)it0->ch * (size_t)per) *
                         (size_t)dim;
        for (int32_t j = 0; j < per; j++) {
            float *o = out + (size_t)j * (size_t)dim;
            memset(o, 0, sizeof(float) * (size_t)dim);
            for (int64_t c = 0; c < count; c++) {
                const float *acc = parts + (size_t)c * part + 2 * (size_t)per + (size_t)j * dim;
                float f = w[c * per + j];
                for (int32_t d = 0; d < dim; d++)
                    o[d] += f * acc[d];
            }
        }
    }
    if (!a->probs)
        return;
    int32_t row = a->group_row0[it0->g] + it0->ch;
    float *probs = lkv_hostmem_row_f32(a->probs, a->cache->capacity, row);
    for (int64_t c = 0; c < count; c++) {
        const chunk_item *it = &items[c];
        const float *e = p->e + it->e_off;
        float *pr = probs + it->first;
        const float *f = w + c * per;
        /* head by head over contiguous slots, so the loops vectorize; per
         * slot the heads still combine in head order */
        if (a->reduce == LKV_REDUCE_MAX) {
            /* from -inf, as the oracle; "x > best" skips a masked head's NaN
             * as the oracle's fmax does */
            for (int32_t i = 0; i < it->n; i++)
                pr[i] = -INFINITY;
            for (int32_t j = 0; j < per; j++) {
                const float *ej = e + (size_t)j * (size_t)it->n;
                for (int32_t i = 0; i < it->n; i++) {
                    float x = ej[i] * f[j];
                    pr[i] = x > pr[i] ? x : pr[i];
                }
            }
        } else {
            for (int32_t i = 0; i < it->n; i++)
                pr[i] = 0.0f;
            for (int32_t j = 0; j < per; j++) {
                const float *ej = e + (size_t)j * (size_t)it->n;
                for (int32_t i = 0; i < it->n; i++)
                    pr[i] += ej[i] * f[j];
            }
            for (int32_t i = 0; i < it->n; i++)
                pr[i] /= (float)per;
        }
    }
}

static lkv_status grow(lkv_cpu_state *s, size_t bytes)
{
    if (s->scratch_cap >= bytes)
        return LKV_OK;
    size_t want = bytes + bytes / 4;
    unsigned char *m = malloc(want);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cpu attend: no host memory for %zu bytes of scratch",
                        want);
    free(s->scratch);
    s->scratch = m;
    s->scratch_cap = want;
    return LKV_OK;
}

static lkv_status attend_locked(lkv_cpu_state *s, attend_plan *p)
{
    size_t e_floats = 0, item_floats = 0;
    plan_size(p, &p->n_items, &e_floats, &item_floats);
    p->n_rows = (int64_t)p->a->n_groups * p->a->cache_heads;
    size_t items_b = sizeof(chunk_item) * (size_t)p->n_items;
    size_t rows_b = sizeof(int64_t) * ((size_t)p->n_rows + 1);
    size_t left_b = (sizeof(atomic_int) * (size_t)p->n_rows + 15) / 16 * 16;
    size_t floats_b = sizeof(float) * (e_floats + item_floats);
    lkv_status st = grow(s, items_b + rows_b + left_b + floats_b);
    if (st != LKV_OK)
        return st;
    p->items = (chunk_item *)(void *)s->scratch;
    p->row_first = (int64_t *)(void *)(s->scratch + items_b);
    p->left = (atomic_int *)(void *)(s->scratch + items_b + rows_b);
    p->e = (float *)(void *)(s->scratch + items_b + rows_b + left_b);
    p->parts = p->e + e_floats;
    p->w = p->parts + (size_t)p->n_items * part_floats(p);
    plan_items(p);
    double work = 0.0;
    for (int32_t g = 0; g < p->a->n_groups; g++)
        work += 2.0 * p->a->group_n[g] * p->dim * p->a->q_heads;
    for (int64_t r = 0; r < p->n_rows; r++) /* rows of no slots: no item combines them */
        if (p->row_first[r + 1] == p->row_first[r])
            combine_row(p, r);
    lkv_pool *pool = work >= PARALLEL_WORK ? s->pool : NULL;
    lkv_pool_run(pool, p->n_items, run_items, p);
    return LKV_OK;
}

lkv_status lkv_cpu_attend(lkv_device *dev, const lkv_attend_args *a)
{
    lkv_status st = lkv_dtype_check(a->cache->dtype, "cpu", "attend");
    if (st != LKV_OK)
        return st;
    lkv_cpu_state *s = lkv_cpu_state_of(dev);
    attend_plan p = {.a = a, .chunk = s->chunk, .per = a->q_heads / a->cache_heads,
                     .dim = a->cache->head_dim};
    pthread_mutex_lock(&s->lock);
    st = attend_locked(s, &p);
    pthread_mutex_unlock(&s->lock);
    return st;
}
