/* The `faulty` backend: another backend of the registry with one fault put
 * in on purpose, for the test that the conformance suite catches a wrong
 * kernel. Every op is the inner backend's (LAZYKV_FAULTY_INNER names it:
 * vulkan, opencl, cpu, ...; cpu by default), run on its device, except that
 * attend's output comes back with its sign flipped: the probabilities, and
 * with them observe, score, select and compact, stay right, so the suite's
 * failures must point at attend alone.
 *
 * It is test-only and one folder (tests/backends/faulty/): its backend.cmake
 * registers it for lazykv-faulty alone, and nothing outside the folder
 * names it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "registry.h"

static const char *inner_name(void)
{
    const char *want = getenv("LAZYKV_FAULTY_INNER");
    return want && *want ? want : "cpu";
}

/* NULL when the name is not a backend built in (or is this one). */
static const lkv_backend_ops *inner(void)
{
    const char *want = inner_name();
    if (!strcmp(want, "faulty"))
        return NULL;
    for (int i = 0; i < lkv_backend_registry_count; i++)
        if (!strcmp(lkv_backend_registry[i].name, want))
            return lkv_backend_registry[i].ops;
    return NULL;
}

static lkv_status faulty_probe(lkv_device_report *out_reports, int cap, int *out_count)
{
    const lkv_backend_ops *b = inner();
    if (!b)
        return lkv_fail(LKV_UNAVAILABLE, "faulty: LAZYKV_FAULTY_INNER='%s' is no backend built in",
                        inner_name());
    lkv_status st = b->probe(out_reports, cap, out_count);
    for (int i = 0; st == LKV_OK && i < *out_count && i < cap; i++)
        snprintf(out_reports[i].backend, sizeof out_reports[i].backend, "faulty");
    return st;
}

/* The device is the inner backend's own: every op below hands it on. */
static lkv_status faulty_open(int device, lkv_device **out_dev)
{
    const lkv_backend_ops *b = inner();
    if (!b)
        return lkv_fail(LKV_UNAVAILABLE, "faulty: LAZYKV_FAULTY_INNER='%s' is no backend built in",
                        inner_name());
    return b->open(device, out_dev);
}

static void faulty_close(lkv_device *dev)
{
    inner()->close(dev);
}

static lkv_status faulty_alloc(lkv_device *dev, size_t bytes, lkv_buffer **out_buf)
{
    return inner()->alloc(dev, bytes, out_buf);
}

static void faulty_free(lkv_device *dev, lkv_buffer *buf)
{
    inner()->free(dev, buf);
}

static lkv_status faulty_write(lkv_device *dev, lkv_buffer *dst, size_t offset, const void *src,
                               size_t bytes)
{
    return inner()->write(dev, dst, offset, src, bytes);
}

static lkv_status faulty_read(lkv_device *dev, const lkv_buffer *src, size_t offset, void *dst,
                              size_t bytes)
{
    return inner()->read(dev, src, offset, dst, bytes);
}

static lkv_status faulty_copy(lkv_device *dev, lkv_buffer *dst, size_t dst_offset,
                              const lkv_buffer *src, size_t src_offset, size_t bytes)
{
    return inner()->copy(dev, dst, dst_offset, src, src_offset, bytes);
}

static lkv_status faulty_sync(lkv_device *dev)
{
    return inner()->sync(dev);
}

/* The fault: attend as the inner backend computes it, then out = -out. */
static lkv_status flip_sign(lkv_device *dev, const lkv_attend_args *a)
{
    size_t n = (size_t)a->n_groups * (size_t)a->q_heads * (size_t)a->cache->head_dim;
    float *x = malloc(n * sizeof *x);
    if (!x)
        return lkv_fail(LKV_OUT_OF_MEMORY, "faulty: no room to flip %zu outputs", n);
    const lkv_backend_ops *b = inner();
    lkv_status st = b->sync(dev);
    if (st == LKV_OK)
        st = b->read(dev, a->out, 0, x, n * sizeof *x);
    for (size_t i = 0; st == LKV_OK && i < n; i++)
        x[i] = -x[i];
    if (st == LKV_OK)
        st = b->write(dev, a->out, 0, x, n * sizeof *x);
    free(x);
    return st;
}

static lkv_status faulty_attend(lkv_device *dev, const lkv_attend_args *a)
{
    const lkv_backend_ops *b = inner();
    if (!b->attend)
        return lkv_fail(LKV_UNSUPPORTED, "faulty: the inner backend has no attend");
    lkv_status st = b->attend(dev, a);
    if (st != LKV_OK || !a->out)
        return st;
    return flip_sign(dev, a);
}

static lkv_status faulty_observe(lkv_device *dev, const lkv_observe_args *a)
{
    return inner()->observe(dev, a);
}

static lkv_status faulty_score(lkv_device *dev, const lkv_score_args *a)
{
    return inner()->score(dev, a);
}

static lkv_status faulty_select(lkv_device *dev, const lkv_select_args *a)
{
    return inner()->select(dev, a);
}

static lkv_status faulty_compact(lkv_device *dev, const lkv_compact_args *a)
{
    return inner()->compact(dev, a);
}

const lkv_backend_ops lkv_backend_faulty = {
    .name = "faulty",
    .probe = faulty_probe,
    .open = faulty_open,
    .close = faulty_close,
    .alloc = faulty_alloc,
    .free = faulty_free,
    .write = faulty_write,
    .read = faulty_read,
    .copy = faulty_copy,
    .sync = faulty_sync,
    .attend = faulty_attend,
    .observe = faulty_observe,
    .score = faulty_score,
    .select = faulty_select,
    .compact = faulty_compact,
};
