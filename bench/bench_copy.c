/* The copy roofline. The source is written first: an untouched zero-filled
 * host allocation reads back from one shared zero page, and a copy from it
 * would report a bandwidth no real data gets. */
#include "bench_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timer.h"
#include "error.h"

#define FILL_CHUNK ((size_t)1 << 20)

typedef struct copy_rig {
    lkv_runtime *rt;
    lkv_buffer *src, *dst;
    size_t bytes;
} copy_rig;

static lkv_status fill(copy_rig *g)
{
    unsigned char *chunk = malloc(FILL_CHUNK);
    if (!chunk)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for the copy pattern");
    for (size_t i = 0; i < FILL_CHUNK; i++)
        chunk[i] = (unsigned char)(i * 131u + 7u);
    lkv_status st = LKV_OK;
    for (size_t off = 0; off < g->bytes && st == LKV_OK; off += FILL_CHUNK) {
        size_t n = g->bytes - off < FILL_CHUNK ? g->bytes - off : FILL_CHUNK;
        st = g->rt->ops->write(g->rt->dev, g->src, off, chunk, n);
    }
    free(chunk);
    return st;
}

static lkv_status issue_copy(void *ctx)
{
    copy_rig *g = ctx;
    return g->rt->ops->copy(g->rt->dev, g->dst, 0, g->src, 0, g->bytes);
}

void lkv_bench_copy_run(lkv_runtime *rt, const lkv_bench_settings *s, lkv_bench_device *dev)
{
    copy_rig g = {.rt = rt, .bytes = s->copy_bytes};
    lkv_status st = rt->ops->alloc(rt->dev, g.bytes, &g.src);
    if (st == LKV_OK)
        st = rt->ops->alloc(rt->dev, g.bytes, &g.dst);
    if (st == LKV_OK)
        st = fill(&g);
    if (st == LKV_OK) {
        lkv_bench_time(rt, s, issue_copy, &g, &dev->copy);
    } else {
        memset(&dev->copy, 0, sizeof dev->copy);
        dev->copy.status = st;
        snprintf(dev->copy.error, sizeof dev->copy.error, "%s", lkv_last_error());
    }
    dev->copy_bytes_per_s = dev->copy.status == LKV_OK && dev->copy.median_s > 0.0
                                ? 2.0 * (double)g.bytes / dev->copy.median_s
                                : 0.0;
    if (g.src)
        rt->ops->free(rt->dev, g.src);
    if (g.dst)
        rt->ops->free(rt->dev, g.dst);
}
