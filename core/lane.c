/* The eviction lane (lane.h). The cache's device handle, and rkv's work
 * buffer, are swapped for the lane's while the scheduler runs, so the
 * scheduler, the granularity union and the page trim issue to the lane
 * unchanged. */
#include "lane.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"

/* A lane mark shared by the layers one eviction covered (a prompt's or a
 * token-granularity eviction covers them all), freed with its last. */
typedef struct lane_point {
    lkv_mark *mark;
    int32_t refs;
} lane_point;

struct lkv_lane {
    lkv_device *dev;
    lkv_buffer *work;     /* rkv only: redundancy's work space (NULL otherwise) */
    lane_point **marks;   /* [layers] the lane's mark after the layer's last eviction */
    int32_t newest;       /* a layer marked last: its mark covers every other */
};

static void drop_mark(const lkv_cache *c, int32_t layer)
{
    lane_point **p = &c->lane->marks[layer];
    if (*p && --(*p)->refs == 0) {
        c->ops->mark_free(c->lane->dev, (*p)->mark);
        free(*p);
    }
    *p = NULL;
}

/* LAZYKV_LANES=0: never (the helper thread); 1: wherever the backend can
 * open one (the tests run lanes on lavapipe and PoCL so); unset: where the
 * lane runs beside the main queue. On a CPU device the two queues share
 * the cores and the lane only adds the marks' cost. */
static int wanted(lkv_cache *c)
{
    const char *env = getenv("LAZYKV_LANES");
    if (env && !strcmp(env, "0"))
        return 0;
    if (env && !strcmp(env, "1"))
        return 1;
    return !c->ops->lanes_concurrent || c->ops->lanes_concurrent(c->dev);
}

lkv_status lkv_lane_open(lkv_cache *c)
{
    const lkv_backend_ops *ops = c->ops;
    if (c->cfg.eviction != LKV_EVICTION_BACKGROUND || c->cfg.kv_owner != LKV_KV_OWNED ||
        !ops->lane_open || !ops->mark || !ops->wait_mark || !ops->mark_free || !wanted(c))
        return LKV_OK;
    lkv_lane *l = calloc(1, sizeof *l);
    lane_point **marks = calloc((size_t)c->cfg.layers, sizeof *marks);
    if (!l || !marks) {
        free(l);
        free(marks);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the eviction lane");
    }
    l->marks = marks;
    if (ops->lane_open(c->dev, &l->dev) != LKV_OK) {
        /* A device without a second queue: the helper thread evicts. */
        lkv_clear_error();
        free(l->marks);
        free(l);
        return LKV_OK;
    }
    c->lane = l;
    if (c->cfg.policy.kind != LKV_POLICY_RKV)
        return LKV_OK;
    size_t slots = (size_t)c->cfg.sequences * (size_t)c->cfg.layers * (size_t)c->heads *
                   (size_t)c->cfg.capacity;
    return ops->alloc(c->dev, slots * 4, &l->work);
}

void lkv_lane_close(lkv_cache *c)
{
    lkv_lane *l = c->lane;
    if (!l)
        return;
    for (int32_t layer = 0; layer < c->cfg.layers; layer++)
        drop_mark(c, layer);
    /* The main queue's waits on the lane's marks run before the lane goes
     * (backend.h: what waited on a lane's marks finishes before its close). */
    (void)c->ops->sync(c->dev);
    c->ops->close(l->dev); /* waits for the lane's work */
    if (l->work)
        c->ops->free(c->dev, l->work);
    free(l->marks);
    free(l);
    c->lane = NULL;
}

int lkv_lane_per_layer(const lkv_cache *c)
{
    return c->cfg.granularity != LKV_GRANULARITY_TOKEN;
}

static void swap_to_lane(lkv_cache *c)
{
    lkv_device *d = c->dev;
    c->dev = c->lane->dev;
    c->lane->dev = d;
    if (c->lane->work) {
        lkv_buffer *b = c->probs;
        c->probs = c->lane->work;
        c->lane->work = b;
    }
}

/* Everything issued to `from` so far before what `to` is issued next. */
static lkv_status order(const lkv_cache *c, lkv_device *from, lkv_device *to)
{
    lkv_mark *m = NULL;
    lkv_status st = c->ops->mark(from, &m);
    if (st != LKV_OK)
        return st;
    st = c->ops->wait_mark(to, m);
    c->ops->mark_free(from, m);
    return st;
}

/* One mark for the span's layers; the lane runs in order, so it covers
 * their earlier ones, which go. */
static lkv_status mark_layers(lkv_cache *c, lkv_layer_span span)
{
    lane_point *p = malloc(sizeof *p);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a lane mark");
    lkv_status st = c->ops->mark(c->lane->dev, &p->mark);
    if (st != LKV_OK) {
        free(p);
        return st;
    }
    p->refs = span.end - span.first;
    for (int32_t layer = span.first; layer < span.end; layer++) {
        drop_mark(c, layer);
        c->lane->marks[layer] = p;
    }
    c->lane->newest = span.first;
    return LKV_OK;
}

lkv_status lkv_lane_schedule(lkv_cache *c, const int32_t *seqs, const int32_t *steps, int32_t n,
                             lkv_layer_span span, lkv_due due)
{
    if (!lkv_schedule_due(c, seqs, steps, n, span, due))
        return LKV_OK;
    double t0 = lkv_clock_seconds();
    lkv_status st = order(c, c->dev, c->lane->dev);
    if (st != LKV_OK)
        return st;
    swap_to_lane(c);
    st = lkv_schedule_here(c, seqs, steps, n, span, due);
    swap_to_lane(c); /* and back */
    lkv_status marked = mark_layers(c, span);
    c->stats.eviction_seconds += lkv_clock_seconds() - t0;
    return st != LKV_OK ? st : marked;
}

lkv_status lkv_lane_join_layer(const lkv_cache *c, int32_t layer)
{
    lane_point *p = c->lane ? c->lane->marks[layer] : NULL;
    if (!p)
        return LKV_OK;
    lkv_status st = c->ops->wait_mark(c->dev, p->mark);
    if (st == LKV_OK) /* else kept: a later call waits again */
        drop_mark(c, layer);
    return st;
}

lkv_status lkv_lane_join(const lkv_cache *c)
{
    if (!c->lane || !c->lane->marks[c->lane->newest])
        return LKV_OK;
    lkv_status st = lkv_lane_join_layer(c, c->lane->newest);
    for (int32_t layer = 0; layer < c->cfg.layers && st == LKV_OK; layer++)
        drop_mark(c, layer);
    return st;
}
