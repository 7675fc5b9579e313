/* The live engine-owned caches and their call serials (plan_registry.h). */
#include "plan_registry.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"

typedef struct live_cache {
    uint64_t id; /* 0: a free entry */
    uint64_t serial;
} live_cache;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static live_cache *registry;
static int32_t registry_len, registry_live;
static uint64_t registry_next_id = 1;

lkv_status lkv_plan_registry_add(uint64_t *out_id, int32_t *out_slot)
{
    pthread_mutex_lock(&registry_mu);
    int32_t slot = 0;
    while (slot < registry_len && registry[slot].id)
        slot++;
    if (slot == registry_len) {
        int32_t len = registry_len ? registry_len * 2 : 16;
        live_cache *grown = realloc(registry, sizeof *grown * (size_t)len);
        if (!grown) {
            pthread_mutex_unlock(&registry_mu);
            return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory registering a cache");
        }
        for (int32_t i = registry_len; i < len; i++)
            grown[i] = (live_cache){0, 0};
        registry = grown;
        registry_len = len;
    }
    registry[slot] = (live_cache){registry_next_id++, 0};
    registry_live++;
    *out_id = registry[slot].id;
    *out_slot = slot;
    pthread_mutex_unlock(&registry_mu);
    return LKV_OK;
}

void lkv_plan_registry_remove(int32_t slot)
{
    pthread_mutex_lock(&registry_mu);
    registry[slot] = (live_cache){0, 0};
    if (--registry_live == 0) { /* nothing left for a leak check to find */
        free(registry);
        registry = NULL;
        registry_len = 0;
    }
    pthread_mutex_unlock(&registry_mu);
}

uint64_t lkv_plan_registry_advance(int32_t slot)
{
    pthread_mutex_lock(&registry_mu);
    uint64_t serial = ++registry[slot].serial;
    pthread_mutex_unlock(&registry_mu);
    return serial;
}

/* 1 and the serial of the live cache `id`; 0 when it is not alive. */
static int live_serial(uint64_t id, uint64_t *out_serial)
{
    int live = 0;
    pthread_mutex_lock(&registry_mu);
    for (int32_t i = 0; i < registry_len && !live; i++)
        if (registry[i].id == id) {
            *out_serial = registry[i].serial;
            live = 1;
        }
    pthread_mutex_unlock(&registry_mu);
    return live;
}

lkv_status lkv_plan_check_identity(const lkv_eviction_plan *plan, int32_t layers, int32_t heads,
                                   int32_t head_dim, const char *what, const char *call)
{
    if (!plan->cache)
        return LKV_OK;
    uint64_t now = 0;
    if (!live_serial(plan->cache, &now))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the plan is of cache %llu, destroyed since: a plan is valid until "
                        "its cache's next call",
                        call, (unsigned long long)plan->cache);
    if (now != plan->call)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the plan is of call %llu of cache %llu, which has made call %llu "
                        "since: a plan is stale after its cache's next call",
                        call, (unsigned long long)plan->call, (unsigned long long)plan->cache,
                        (unsigned long long)now);
    if (head_dim < 0 && (layers != plan->layers || heads != plan->heads))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the %s has %d layers, %d heads; the plan's cache (%llu) has %d "
                        "layers, %d heads: a plan applies to its own cache's K/V",
                        call, what, layers, heads, (unsigned long long)plan->cache,
                        plan->layers, plan->heads);
    if (head_dim >= 0 &&
        (layers != plan->layers || heads != plan->heads || head_dim != plan->head_dim))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s: the %s has %d layers, %d heads, head_dim %d; the plan's cache "
                        "(%llu) has %d layers, %d heads, head_dim %d: a plan applies to its own "
                        "cache's K/V",
                        call, what, layers, heads, head_dim, (unsigned long long)plan->cache,
                        plan->layers, plan->heads, plan->head_dim);
    return LKV_OK;
}
