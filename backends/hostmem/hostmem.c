/* The host-memory device (hostmem.h): one device, buffers in host memory,
 * ops that complete before they return. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "hostmem.h"
#include "pool.h"

static void model_name(char *buf, size_t len)
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

void lkv_hostmem_probe(const char *backend, const char *what, lkv_device_report *out, int cap,
                       int *out_count)
{
    *out_count = 1;
    if (cap < 1)
        return;
    memset(&out[0], 0, sizeof out[0]);
    snprintf(out[0].backend, sizeof out[0].backend, "%s", backend);
    out[0].device = 0;
    out[0].available = 1;
    model_name(out[0].name, sizeof out[0].name);
    int threads = 1;
    if (lkv_pool_cpu_threads(&threads) == LKV_OK) {
        snprintf(out[0].reason, sizeof out[0].reason, "%s, %d thread(s)", what, threads);
    } else {
        out[0].available = 0;
        snprintf(out[0].reason, sizeof out[0].reason, "%s", lkv_last_error());
        lkv_clear_error();
    }
    snprintf(out[0].driver, sizeof out[0].driver, "lazykv %s %d.%d.%d", backend,
             LKV_VERSION_MAJOR, LKV_VERSION_MINOR, LKV_VERSION_PATCH);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        out[0].memory_bytes = (uint64_t)pages * (uint64_t)page;
}

lkv_status lkv_hostmem_open(const char *backend, int device, lkv_device **out_dev)
{
    if (device != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s has one device (0), not %d", backend, device);
    int threads = 1;
    lkv_status st = lkv_pool_cpu_threads(&threads);
    if (st != LKV_OK)
        return st;
    lkv_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the %s backend", backend);
    dev->threads = threads;
    *out_dev = dev;
    return LKV_OK;
}

void lkv_hostmem_close(lkv_device *dev) { free(dev); }

lkv_status lkv_hostmem_alloc(lkv_device *dev, size_t bytes, lkv_buffer **out_buf)
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

void lkv_hostmem_free(lkv_device *dev, lkv_buffer *buf)
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
        return lkv_fail(LKV_INTERNAL,
                        "host memory %s of %zu bytes at offset %zu overruns a %zu-byte buffer",
                        what, bytes, offset, b->size);
    return LKV_OK;
}

lkv_status lkv_hostmem_write(lkv_device *dev, lkv_buffer *dst, size_t offset, const void *src,
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

lkv_status lkv_hostmem_read(lkv_device *dev, const lkv_buffer *src, size_t offset, void *dst,
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

lkv_status lkv_hostmem_copy(lkv_device *dev, lkv_buffer *dst, size_t dst_offset,
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

lkv_status lkv_hostmem_sync(lkv_device *dev)
{
    dev->counters.syncs++; /* counted as a GPU backend's wait would be */
    return LKV_OK;         /* every op completes before it returns */
}

lkv_status lkv_hostmem_wrap(lkv_device *dev, uint64_t handle, uint64_t offset, size_t bytes,
                           lkv_buffer **out_buf)
{
    (void)dev;
    if (!handle || offset % 4 || handle > UINTPTR_MAX - offset)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "host device array: handle 0x%llx offset %llu is not a usable address "
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

void lkv_hostmem_counters(const lkv_device *dev, lkv_counters *out) { *out = dev->counters; }
