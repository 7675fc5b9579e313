/* Running one case on both runtimes: the same bytes go to the oracle and to
 * the backend, the op runs on each, and whatever is to be compared comes
 * back to the host. */
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

static const char *side_name(int side)
{
    return side == CONF_ORACLE ? "oracle" : "backend";
}

/* SKIP for what a backend may legitimately decline (an op variant it does
 * not do, a buffer too big for the device), FAIL for everything else. */
static int refuse(conf_verdict *v, int side, lkv_status st, const char *step)
{
    int skip = side == CONF_TESTED && (st == LKV_UNSUPPORTED || st == LKV_OUT_OF_MEMORY);
    conf_verdict_set(v, skip ? LKV_CONF_SKIP : LKV_CONF_FAIL, "%s %s: %s: %s", side_name(side),
                     step, lkv_status_name(st), lkv_last_error());
    return 0;
}

static int upload(conf_case *c, int side, conf_verdict *v)
{
    const lkv_backend_ops *ops = c->rt[side]->ops;
    lkv_device *dev = c->rt[side]->dev;
    for (int i = 0; i < c->count; i++) {
        const conf_image *im = &c->img[i];
        size_t bytes = im->bytes + CONF_PAD_BYTES;
        lkv_status st = ops->alloc(dev, bytes, &c->dev[side][i]);
        if (st != LKV_OK) {
            c->dev[side][i] = NULL;
            return refuse(v, side, st, "alloc");
        }
        st = ops->write(dev, c->dev[side][i], 0, im->host, bytes);
        if (st != LKV_OK)
            return refuse(v, side, st, "write");
    }
    return 1;
}

static int download(conf_case *c, int side, conf_verdict *v)
{
    const lkv_backend_ops *ops = c->rt[side]->ops;
    lkv_device *dev = c->rt[side]->dev;
    for (int i = 0; i < c->count; i++) {
        conf_image *im = &c->img[i];
        if (!im->read_back)
            continue;
        size_t bytes = im->bytes + CONF_PAD_BYTES;
        im->got[side] = malloc(bytes);
        if (!im->got[side]) {
            conf_verdict_set(v, LKV_CONF_FAIL, "host out of memory reading back %s (%zu bytes)",
                             im->name, bytes);
            return 0;
        }
        lkv_status st = ops->read(dev, c->dev[side][i], 0, im->got[side], bytes);
        if (st != LKV_OK)
            return refuse(v, side, st, "read");
    }
    return 1;
}

static int run_side(conf_case *c, int side, conf_invoke_fn invoke, const void *params,
                    conf_verdict *v)
{
    if (!upload(c, side, v))
        return 0;
    lkv_status st = invoke(c, side, params);
    if (st != LKV_OK)
        return refuse(v, side, st, "op");
    st = c->rt[side]->ops->sync(c->rt[side]->dev);
    if (st != LKV_OK)
        return refuse(v, side, st, "sync");
    return download(c, side, v);
}

int conf_execute(conf_case *c, conf_invoke_fn invoke, const void *params, conf_verdict *v)
{
    if (c->failed_alloc) {
        conf_verdict_set(v, LKV_CONF_FAIL, "host out of memory building the inputs");
        return 0;
    }
    /* The backend first: its device memory is what is scarce, and a backend
     * that declines the case saves the oracle's work. */
    if (!run_side(c, CONF_TESTED, invoke, params, v))
        return 0;
    return run_side(c, CONF_ORACLE, invoke, params, v);
}

void conf_case_seed(conf_run *r, const void *proto, uint64_t seed)
{
    const conf_family *family = *(const conf_family *const *)proto;
    conf_verdict v;
    conf_verdict_init(&v);
    void *params = malloc(family->size);
    if (!params) {
        conf_verdict_set(&v, LKV_CONF_FAIL, "host out of memory");
        conf_group_result(r, seed, &v);
        return;
    }
    memcpy(params, proto, family->size);
    conf_rng rng;
    conf_rng_init(&rng, seed, r->name);
    conf_case c;
    conf_case_init(&c, r->rt[CONF_ORACLE], r->rt[CONF_TESTED]);
    if (!family->build(&c, params, &rng))
        conf_verdict_set(&v, LKV_CONF_FAIL, "host out of memory building the inputs");
    else if (conf_execute(&c, family->invoke, params, &v))
        family->check(&c, params, &v);
    conf_group_result(r, seed, &v);
    conf_case_free(&c);
    free(params);
}
