/* The result arrays: one timing per (device, shape, length, op), one decode
 * comparison per (device, length), one batch comparison per (device, batch
 * size). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"

static void mark_not_run(lkv_bench_timing *t)
{
    memset(t, 0, sizeof *t);
    t->status = LKV_UNSUPPORTED;
    strcpy(t->error, "not run");
}

lkv_status lkv_bench_results_init(lkv_bench_results *r, const lkv_bench_settings *s,
                                  int n_devices)
{
    memset(r, 0, sizeof *r);
    r->settings = *s;
    r->n_devices = n_devices;
    size_t n_ops = (size_t)n_devices * (size_t)s->n_shapes * (size_t)s->n_lengths *
                   LKV_BENCH_OP_COUNT;
    size_t n_decode = (size_t)n_devices * (size_t)s->n_lengths;
    size_t n_batch = (size_t)n_devices * (size_t)s->n_batches;
    r->ops = calloc(n_ops ? n_ops : 1, sizeof *r->ops);
    r->decode = calloc(n_decode ? n_decode : 1, sizeof *r->decode);
    r->batch = calloc(n_batch ? n_batch : 1, sizeof *r->batch);
    r->engine = calloc(n_batch ? n_batch : 1, sizeof *r->engine);
    if (!r->ops || !r->decode || !r->batch || !r->engine) {
        lkv_bench_results_free(r);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %zu bench results", n_ops);
    }
    for (size_t i = 0; i < n_ops; i++)
        mark_not_run(&r->ops[i]);
    for (size_t i = 0; i < n_decode; i++) {
        r->decode[i].status = LKV_UNSUPPORTED;
        strcpy(r->decode[i].error, "not run");
    }
    for (size_t i = 0; i < n_batch; i++) {
        r->batch[i].status = LKV_UNSUPPORTED;
        strcpy(r->batch[i].error, "not run");
        r->engine[i].status = LKV_UNSUPPORTED;
        strcpy(r->engine[i].error, "not run");
    }
    for (int d = 0; d < LKV_BENCH_MAX_DEVICES; d++)
        mark_not_run(&r->devices[d].copy);
    return LKV_OK;
}

void lkv_bench_results_free(lkv_bench_results *r)
{
    free(r->ops);
    free(r->decode);
    free(r->batch);
    free(r->engine);
    r->engine = NULL;
    r->ops = NULL;
    r->decode = NULL;
    r->batch = NULL;
}

lkv_bench_timing *lkv_bench_op_at(const lkv_bench_results *r, int device, int shape, int length,
                                  lkv_bench_op op)
{
    const lkv_bench_settings *s = &r->settings;
    size_t i = (((size_t)device * (size_t)s->n_shapes + (size_t)shape) * (size_t)s->n_lengths +
                (size_t)length) * LKV_BENCH_OP_COUNT + (size_t)op;
    return &r->ops[i];
}

lkv_bench_decode *lkv_bench_decode_at(const lkv_bench_results *r, int device, int length)
{
    return &r->decode[(size_t)device * (size_t)r->settings.n_lengths + (size_t)length];
}

lkv_bench_batch *lkv_bench_batch_at(const lkv_bench_results *r, int device, int batch)
{
    return &r->batch[(size_t)device * (size_t)r->settings.n_batches + (size_t)batch];
}

lkv_bench_engine *lkv_bench_engine_at(const lkv_bench_results *r, int device, int batch)
{
    return &r->engine[(size_t)device * (size_t)r->settings.n_batches + (size_t)batch];
}

int lkv_bench_cpu_index(const lkv_bench_results *r)
{
    for (int d = 0; d < r->n_devices; d++)
        if (strcmp(r->devices[d].backend, "cpu") == 0)
            return d;
    return -1;
}

static int failed(lkv_status st) { return st != LKV_OK && st != LKV_UNSUPPORTED; }

int lkv_bench_any_failure(const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    size_t n_ops = (size_t)r->n_devices * (size_t)s->n_shapes * (size_t)s->n_lengths *
                   LKV_BENCH_OP_COUNT;
    for (size_t i = 0; i < n_ops; i++)
        if (failed(r->ops[i].status))
            return 1;
    for (int i = 0; i < r->n_devices * s->n_lengths; i++)
        if (failed(r->decode[i].status))
            return 1;
    for (int i = 0; i < r->n_devices * s->n_batches; i++)
        if (failed(r->batch[i].status) || failed(r->engine[i].status))
            return 1;
    for (int d = 0; d < r->n_devices; d++)
        if (failed(r->devices[d].copy.status))
            return 1;
    return 0;
}
