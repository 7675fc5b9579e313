/* lkv_plan_apply_device: an eviction plan applied to K/V in the runtime's
 * device memory. A row's moves kept[j] -> j run one after the other on the
 * host (lkv_plan_apply), but a device runs them at once, where a move's
 * destination may be a later move's source: the backend's gather reads
 * every source before it writes (through its kept scratch). The plan is
 * checked, its word lists built and the layers' views made before the
 * first gather. */
#include <stdlib.h>

#include "error.h"
#include "kv_layout.h"
#include "runtime.h"

#define CALL "lkv_plan_apply_device"

/* One layer's moves: byte offsets in its buffers, and how far they reach. */
typedef struct layer_moves {
    int32_t n;
    uint32_t *src_word, *dst_word;
    uint64_t extent;
    lkv_buffer *k, *v; /* views of the engine's layer */
} layer_moves;

static void count_moves(const lkv_eviction_plan *plan, layer_moves *m)
{
    for (int32_t i = 0; i < plan->n_rows; i++) {
        const lkv_plan_row *r = &plan->rows[i];
        m[r->layer].n += r->n_kept - r->first_move;
    }
}

/* The word offsets of every move of every layer, and each layer's reach. */
static lkv_status list_moves(const lkv_eviction_plan *plan, const lkv_kv_layout *kv, size_t span,
                             layer_moves *m)
{
    for (int32_t l = 0; l < kv->layers; l++) {
        if (!m[l].n)
            continue;
        m[l].src_word = malloc(sizeof(uint32_t) * (size_t)m[l].n);
        m[l].dst_word = malloc(sizeof(uint32_t) * (size_t)m[l].n);
        if (!m[l].src_word || !m[l].dst_word)
            return lkv_fail(LKV_OUT_OF_MEMORY, CALL ": out of host memory for %d moves", m[l].n);
        m[l].n = 0;
    }
    for (int32_t i = 0; i < plan->n_rows; i++) {
        const lkv_plan_row *r = &plan->rows[i];
        layer_moves *lm = &m[r->layer];
        size_t head = (size_t)r->head * kv->head_stride;
        for (int32_t j = r->first_move; j < r->n_kept; j++) {
            uint64_t src = lkv_kv_layout_slot(kv, r->sequence, r->kept[j], NULL, 0) + head;
            uint64_t dst = lkv_kv_layout_slot(kv, r->sequence, j, NULL, 0) + head;
            uint64_t reach = (src > dst ? src : dst) + span;
            if (reach > ((uint64_t)1 << 34))
                return lkv_fail(LKV_INVALID_ARGUMENT,
                                CALL ": row %d reaches byte %llu of layer %d, beyond the 16 GiB "
                                "one call moves in a buffer",
                                i, (unsigned long long)reach, r->layer);
            lm->src_word[lm->n] = (uint32_t)(src / 4);
            lm->dst_word[lm->n++] = (uint32_t)(dst / 4);
            lm->extent = reach > lm->extent ? reach : lm->extent;
        }
    }
    return LKV_OK;
}

static lkv_status view_layers(lkv_runtime *rt, const lkv_device_array *k,
                              const lkv_device_array *v, int32_t layers, layer_moves *m)
{
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < layers && st == LKV_OK; l++) {
        if (!m[l].n)
            continue;
        st = rt->ops->wrap(rt->dev, k[l].handle, k[l].offset, (size_t)m[l].extent, &m[l].k);
        if (st == LKV_OK)
            st = rt->ops->wrap(rt->dev, v[l].handle, v[l].offset, (size_t)m[l].extent, &m[l].v);
    }
    return st;
}

static lkv_status run(lkv_runtime *rt, const lkv_kv_layout *kv, size_t span, layer_moves *m)
{
    int32_t words = (int32_t)(span / 4);
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < kv->layers && st == LKV_OK; l++) {
        if (!m[l].n)
            continue;
        if ((uint64_t)m[l].n * span > ((uint64_t)1 << 34))
            return lkv_fail(LKV_UNSUPPORTED, CALL ": %d moves of %zu bytes in layer %d exceed "
                            "the 16 GiB one gather holds", m[l].n, span, l);
        lkv_gather_args k = {m[l].n, words, m[l].src_word, m[l].dst_word, m[l].k};
        lkv_gather_args v = {m[l].n, words, m[l].src_word, m[l].dst_word, m[l].v};
        st = rt->ops->gather(rt->dev, &k);
        if (st == LKV_OK)
            st = rt->ops->gather(rt->dev, &v);
    }
    return st;
}

static void release(lkv_runtime *rt, layer_moves *m, int32_t layers)
{
    for (int32_t l = 0; l < layers; l++) {
        free(m[l].src_word);
        free(m[l].dst_word);
        if (m[l].k)
            rt->ops->free(rt->dev, m[l].k);
        if (m[l].v)
            rt->ops->free(rt->dev, m[l].v);
    }
    free(m);
}

lkv_status lkv_plan_apply_device(lkv_runtime *rt, const lkv_eviction_plan *plan,
                                 const lkv_kv_layout *kv, const lkv_device_array *k_layers,
                                 const lkv_device_array *v_layers, int32_t *out_freed,
                                 int32_t freed_cap, int32_t *out_n_freed)
{
    lkv_clear_error();
    if (!rt || !k_layers || !v_layers)
        return lkv_fail(LKV_INVALID_ARGUMENT, CALL ": %s is NULL",
                        !rt ? "rt" : !k_layers ? "k_layers" : "v_layers");
    if (!rt->ops->gather || !rt->ops->wrap)
        return lkv_fail(LKV_UNSUPPORTED, CALL ": backend %s does not move device K/V",
                        rt->ops->name);
    int32_t n_freed = 0;
    lkv_status st = lkv_plan_check(plan, kv, 0, out_freed, freed_cap, &n_freed, CALL);
    size_t span = st == LKV_OK ? (size_t)kv->head_dim * lkv_dtype_size(kv->dtype) : 0;
    if (st == LKV_OK)
        st = lkv_kv_layout_check_words(kv, CALL);
    if (st != LKV_OK)
        return st;
    layer_moves *m = calloc((size_t)kv->layers, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, CALL ": out of host memory");
    count_moves(plan, m);
    st = list_moves(plan, kv, span, m);
    if (st == LKV_OK)
        st = view_layers(rt, k_layers, v_layers, kv->layers, m);
    if (st == LKV_OK)
        st = run(rt, kv, span, m);
    release(rt, m, kv->layers);
    if (st == LKV_OK && out_n_freed)
        *out_n_freed = n_freed;
    return st;
}
