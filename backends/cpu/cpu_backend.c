/* The CPU backend: device, buffers and the descriptor. Always available; the
 * numerical oracle every other backend is checked against. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_internal.h"
#include "error.h"

/* Threads for attention: LAZYKV_CPU_THREADS when set, else one per online
 * CPU. A bad value is refused, as every knob is, rather than quietly
 * replaced by the default. */
static lkv_status cpu_threads(int *out_threads)
{
    const char *env = getenv("LAZYKV_CPU_THREADS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long n = strtol(env, &end, 10);
        if (errno || *end || n < 1 || n > 1024)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "LAZYKV_CPU_THREADS '%s' is not an integer in 1..1024", env);
        *out_threads = (int)n;
        return LKV_OK;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *out_threads = n >= 1 ? (int)n : 1;
    return LKV_OK;
}

static void cpu_model_name(char *buf, size_t len)
{
    snprintf(buf, len, "host CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (colon) {
            colon++;
            while (*colon == ' ')
                colon++;
            snprintf(buf, len, "%.*s", (int)strcspn(colon, "\n"), colon);
        }
        break;
    }
    fclose(f);
}

static lkv_status cpu_probe(lkv_device_report *out, int cap, int *out_count)
{
    *out_count = 1;
    if (cap < 1)
        return LKV_OK;
    memset(&out[0], 0, sizeof out[0]);
    snprintf(out[0].backend, sizeof out[0].backend, "cpu");
    out[0].device = 0;
    out[0].available = 1;
    cpu_model_name(out[0].name, sizeof out[0].name);
    int threads = 1;
    if (cpu_threads(&threads) == LKV_OK) {
        snprintf(out[0].reason, sizeof out[0].reason, "plain C reference, %d thread(s)", threads);
    } else {
        out[0].available = 0;
        snprintf(out[0].reason, sizeof out[0].reason, "%s", lkv_last_error());
        lkv_clear_error();
    }
    snprintf(out[0].driver, sizeof out[0].driver, "lazykv cpu %d.%d.%d", LKV_VERSION_MAJOR,
             LKV_VERSION_MINOR, LKV_VERSION_PATCH);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        out[0].memory_bytes = (uint64_t)pages * (uint64_t)page;
    return LKV_OK;
}

static lkv_status cpu_open(int device, lkv_device **out_dev)
{
    if (device != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cpu has one device (0), not %d", device);
    int threads = 1;
    lkv_status st = cpu_threads(&threads);
    if (st != LKV_OK)
        return st;
    lkv_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the cpu backend");
    dev->threads = threads;
    *out_dev = dev;
    return LKV_OK;
}

static void cpu_close(lkv_device *dev) { free(dev); }

static lkv_status cpu_alloc(lkv_device *dev, size_t bytes, lkv_buffer **out_buf)
{
    (void)dev;
    lkv_buffer *b = calloc(1, sizeof *b);
    unsigned char *data = calloc(bytes ? bytes : 1, 1);
    if (!b || !data) {
        free(b);
        free(data);
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory", bytes);
    }
    b->size = bytes;
    b->data = data;
    *out_buf = b;
    return LKV_OK;
}

static void cpu_free(lkv_device *dev, lkv_buffer *buf)
{
    (void)dev;
    if (!buf)
        return;
    if (!buf->borrowed)
        free(buf->data);
    free(buf);
}

static lkv_status check_range(const lkv_buffer *b, size_t offset, size_t bytes, const char *what)
{
    if (offset > b->size || bytes > b->size - offset)
        return lkv_fail(LKV_INTERNAL, "cpu %s of %zu bytes at offset %zu overruns a %zu-byte buffer",
                        what, bytes, offset, b->size);
    return LKV_OK;
}

static lkv_status cpu_write(lkv_device *dev, lkv_buffer *dst, size_t offset, const void *src,
                            size_t bytes)
{
    lkv_status st = check_range(dst, offset, bytes, "write");
    if (st == LKV_OK && bytes)
        memcpy(dst->data + offset, src, bytes);
    if (st == LKV_OK) {
        dev->counters.h2d_copies++;
        dev->counters.h2d_bytes += (int64_t)bytes;
    }
    return st;
}

static lkv_status cpu_read(lkv_device *dev, const lkv_buffer *src, size_t offset, void *dst,
                           size_t bytes)
{
    lkv_status st = check_range(src, offset, bytes, "read");
    if (st == LKV_OK && bytes)
        memcpy(dst, src->data + offset, bytes);
    if (st == LKV_OK) { /* a read waits for the device on a GPU backend */
        dev->counters.d2h_copies++;
        dev->counters.d2h_bytes += (int64_t)bytes;
        dev->counters.syncs++;
    }
    return st;
}

static lkv_status cpu_copy(lkv_device *dev, lkv_buffer *dst, size_t dst_offset,
                           const lkv_buffer *src, size_t src_offset, size_t bytes)
{
    (void)dev;
    lkv_status st = check_range(dst, dst_offset, bytes, "copy");
    if (st == LKV_OK)
        st = check_range(src, src_offset, bytes, "copy");
    if (st == LKV_OK && bytes)
        memmove(dst->data + dst_offset, src->data + src_offset, bytes);
    return st;
}

static lkv_status cpu_sync(lkv_device *dev)
{
    dev->counters.syncs++; /* counted as a GPU backend's wait would be */
    return LKV_OK;         /* every op completes before it returns */
}

/* The cpu's device memory is host memory: a handle is an address. */
static lkv_status cpu_wrap(lkv_device *dev, uint64_t handle, uint64_t offset, size_t bytes,
                           lkv_buffer **out_buf)
{
    (void)dev;
    if (!handle || offset % 4 || handle > UINTPTR_MAX - offset)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "cpu device array: handle 0x%llx offset %llu is not a usable address "
                        "(non-zero, offset a multiple of 4)",
                        (unsigned long long)handle, (unsigned long long)offset);
    lkv_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory wrapping a device array");
    b->size = bytes;
    b->data = (unsigned char *)(uintptr_t)(handle + offset);
    b->borrowed = 1;
    *out_buf = b;
    return LKV_OK;
}

static void cpu_counters(const lkv_device *dev, lkv_counters *out) { *out = dev->counters; }

/* Every op is one pass, what a GPU backend would launch at least once. */
#define LKV_CPU_COUNTED(op, args_type)                                                  \
    static lkv_status cpu_##op(lkv_device *dev, const args_type *a)                   \
    {                                                                                 \
        dev->counters.launches++;                                                     \
        return lkv_cpu_##op(dev, a);                                                  \
    }
LKV_CPU_COUNTED(attend, lkv_attend_args)
LKV_CPU_COUNTED(observe, lkv_observe_args)
LKV_CPU_COUNTED(score, lkv_score_args)
LKV_CPU_COUNTED(select, lkv_select_args)
LKV_CPU_COUNTED(compact, lkv_compact_args)
LKV_CPU_COUNTED(store, lkv_store_args)
#undef LKV_CPU_COUNTED

const lkv_backend_ops lkv_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .write = cpu_write,
    .read = cpu_read,
    .copy = cpu_copy,
    .sync = cpu_sync,
    .wrap = cpu_wrap,
    .counters = cpu_counters,
    .attend = cpu_attend,
    .observe = cpu_observe,
    .score = cpu_score,
    .select = cpu_select,
    .compact = cpu_compact,
    .store = cpu_store,
    .row_steps = 1,
};
