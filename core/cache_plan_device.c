/* lkv_cache_apply_plan_device: an engine-owned cache's own plan applied to
 * the engine's device K/V from the kept lists select left on the device
 * (backend op move_kept), so an evicting step never reads its plan back.
 * The host knows each row's counts, which fix the freed blocks and bound
 * every address a row can reach; both are checked before anything moves. */
#include <stdlib.h>

#include "cache.h"
#include "error.h"
#include "kv_layout.h"

#define CALL "lkv_cache_apply_plan_device"

/* One layer's rows as move_kept takes them, and how far they reach. */
typedef struct layer_rows {
    int32_t n;
    int32_t *kept_row, *n_kept, *tab_row;
    uint32_t *base, *at;
    uint64_t extent, held; /* bytes */
    lkv_buffer *k, *v;
} layer_rows;

static lkv_status alloc_rows(layer_rows *m, int32_t layers)
{
    for (int32_t l = 0; l < layers; l++) {
        size_t n = (size_t)(m[l].n ? m[l].n : 1);
        m[l].kept_row = malloc(sizeof(int32_t) * n);
        m[l].n_kept = malloc(sizeof(int32_t) * n);
        m[l].tab_row = malloc(sizeof(int32_t) * n);
        m[l].base = malloc(sizeof(uint32_t) * n);
        m[l].at = malloc(sizeof(uint32_t) * n);
        if (!m[l].kept_row || !m[l].n_kept || !m[l].tab_row || !m[l].base || !m[l].at)
            return lkv_fail(LKV_OUT_OF_MEMORY, CALL ": out of host memory for %d rows", m[l].n);
        m[l].n = 0;
    }
    return LKV_OK;
}

static lkv_status list_rows(const lkv_cache *c, const lkv_kv_layout *kv, size_t span,
                            layer_rows *m)
{
    const lkv_plan_store *p = &c->plan;
    for (int32_t i = 0; i < p->n_rows; i++)
        m[p->rows[i].layer].n++;
    lkv_status st = alloc_rows(m, kv->layers);
    for (int32_t i = 0; i < p->n_rows && st == LKV_OK; i++) {
        const lkv_plan_row *r = &p->rows[i];
        layer_rows *lm = &m[r->layer];
        uint64_t base = 0, reach = 0, held = lm->held + (uint64_t)r->n_kept * span;
        /* lkv_plan_check found a block for every slot below n_before */
        (void)lkv_kv_layout_row(kv, r->sequence, r->head, r->n_before, &base, &reach);
        if (reach > ((uint64_t)1 << 34) || held > ((uint64_t)1 << 34))
            return lkv_fail(LKV_UNSUPPORTED,
                            CALL ": row %d reaches byte %llu of layer %d (moving %llu bytes), "
                            "beyond the 16 GiB one call moves in a buffer",
                            i, (unsigned long long)reach, r->layer, (unsigned long long)held);
        int32_t k = lm->n++;
        lm->kept_row[k] = p->dev_row[i];
        lm->n_kept[k] = r->n_kept;
        lm->tab_row[k] = r->sequence;
        lm->base[k] = (uint32_t)(base / 4);
        lm->at[k] = (uint32_t)(lm->held / 4);
        lm->held = held;
        lm->extent = reach > lm->extent ? reach : lm->extent;
    }
    return st;
}

static lkv_status view_layers(lkv_cache *c, const lkv_device_array *k,
                              const lkv_device_array *v, int32_t layers, layer_rows *m)
{
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < layers && st == LKV_OK; l++) {
        if (!m[l].n)
            continue;
        st = c->ops->wrap(c->dev, k[l].handle, k[l].offset, (size_t)m[l].extent, &m[l].k);
        if (st == LKV_OK)
            st = c->ops->wrap(c->dev, v[l].handle, v[l].offset, (size_t)m[l].extent, &m[l].v);
    }
    return st;
}

static lkv_status run(lkv_cache *c, const lkv_kv_layout *kv, size_t span, layer_rows *m)
{
    lkv_status st = LKV_OK;
    for (int32_t l = 0; l < kv->layers && st == LKV_OK; l++) {
        if (!m[l].n)
            continue;
        lkv_move_kept_args a = {
            .n = m[l].n, .kept_row = m[l].kept_row, .n_kept = m[l].n_kept, .at = m[l].at,
            .held = m[l].held, .kept = c->kept, .kept_stride = c->cfg.capacity,
            .words = (int32_t)(span / 4),
            .slots = lkv_kv_layout_slots(kv, m[l].base, m[l].tab_row), .buf = m[l].k,
        };
        st = c->ops->move_kept(c->dev, &a);
        a.buf = m[l].v;
        if (st == LKV_OK)
            st = c->ops->move_kept(c->dev, &a);
    }
    return st;
}

static void release(lkv_cache *c, layer_rows *m, int32_t layers)
{
    for (int32_t l = 0; l < layers; l++) {
        free(m[l].kept_row), free(m[l].n_kept), free(m[l].tab_row);
        free(m[l].base), free(m[l].at);
        if (m[l].k)
            c->ops->free(c->dev, m[l].k);
        if (m[l].v)
            c->ops->free(c->dev, m[l].v);
    }
    free(m);
}

static lkv_status check_call(const lkv_cache *c, const lkv_kv_layout *kv,
                             const lkv_device_array *k, const lkv_device_array *v)
{
    if (!c || !kv || !k || !v)
        return lkv_fail(LKV_INVALID_ARGUMENT, CALL ": %s is NULL",
                        !c ? "cache" : !kv ? "kv" : !k ? "k_layers" : "v_layers");
    if (c->cfg.kv_owner != LKV_KV_ENGINE)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        CALL ": the cache owns its K/V (kv_owner LKV_KV_OWNED): it has no plan "
                        "for the engine to apply");
    if (!c->ops->move_kept || !c->ops->wrap)
        return lkv_fail(LKV_UNSUPPORTED, CALL ": backend %s does not move device K/V",
                        c->ops->name);
    return LKV_OK;
}

lkv_status lkv_cache_apply_plan_device(lkv_cache *c, const lkv_kv_layout *kv,
                                       const lkv_device_array *k_layers,
                                       const lkv_device_array *v_layers, int32_t *out_freed,
                                       int32_t freed_cap, int32_t *out_n_freed)
{
    lkv_clear_error();
    lkv_status st = check_call(c, kv, k_layers, v_layers);
    if (st == LKV_OK)
        st = lkv_cache_join(c);
    if (st != LKV_OK)
        return st;
    lkv_eviction_plan plan = lkv_plan_of(c); /* current: its identity checks the layout */
    int32_t n_freed = 0;
    st = lkv_plan_check(&plan, kv, LKV_PLAN_KEPT_ON_DEVICE, out_freed, freed_cap, &n_freed, CALL);
    if (st == LKV_OK)
        st = lkv_kv_layout_check_words(kv, CALL);
    if (st != LKV_OK)
        return st;
    layer_rows *m = calloc((size_t)kv->layers, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, CALL ": out of host memory");
    size_t span = (size_t)kv->head_dim * lkv_dtype_size(kv->dtype);
    st = list_rows(c, kv, span, m);
    if (st == LKV_OK)
        st = view_layers(c, k_layers, v_layers, kv->layers, m);
    if (st == LKV_OK)
        st = run(c, kv, span, m);
    release(c, m, kv->layers);
    if (st == LKV_OK && out_n_freed)
        *out_n_freed = n_freed;
    return st;
}
