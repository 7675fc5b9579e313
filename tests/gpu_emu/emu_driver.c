/* The `gpu-emu` backend: the shared CUDA/HIP host code (backends/gpu/) over a
 * driver whose device memory is host memory and whose launches run the CPU
 * SIMT emulator synchronously. A device address is the host pointer, so
 * AddressSanitizer sees a kernel's out-of-bounds access; the driver itself
 * checks what a real driver would only corrupt silently: every copy lies in
 * one live allocation, device-to-device copies do not overlap, and every
 * pointer a kernel receives is null or inside a live allocation (or a live
 * view of memory the caller lent through wrap). New device
 * memory holds 0xff bytes (NaN, -1), as cuMemAlloc's holds garbage.
 *
 * Every call completes before it returns, so an event has passed once
 * recorded; lkv_emu_lag_events makes events pass only at the next host wait
 * (a read, a sync or an event wait) instead, as on a device that is behind,
 * so the tests reach the staging ring's wait. A staged source changed
 * before its event passed (the host refilling a region a copy may still be
 * reading) is then reported by the next call that can. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_driver.h"
#include "error.h"

typedef struct emu_alloc {
    uintptr_t base;
    size_t size;
} emu_alloc;

/* A copy from staging memory whose event has not passed: its source must
 * stay as it was until then. */
typedef struct emu_staged {
    const unsigned char *src;
    size_t bytes;
    uint64_t hash;
    uint64_t seq; /* the event record that follows it: it has passed with that one */
} emu_staged;

#define EMU_MAX_STAGED 64

/* Memory the caller lent through wrap (the engine's arrays): valid for
 * copies and kernels while a view of it lives. Views may overlap. */
typedef struct emu_lent {
    uintptr_t base;
    size_t size;
} emu_lent;

typedef struct emu_event {
    uint64_t seq; /* the record's number (api->seq); 0: never recorded */
} emu_event;

typedef struct emu_api {
    int warp;
    /* events pass only at a host wait (lkv_emu_lag_events): records are
     * numbered, and those up to `passed` have passed */
    int lag;
    uint64_t seq, passed;
    emu_staged staged[EMU_MAX_STAGED];
    int n_staged;
    /* external: the stream an open_external borrowed (recorded, never used) */
    void *stream;
    emu_alloc *allocs; /* live allocations, ascending by base */
    size_t n, cap;
    emu_lent *lent; /* live views of lent memory, any order */
    size_t n_lent, cap_lent;
    /* mem_free cannot fail, so a free of an unknown address is reported by
     * the next call that can */
    char bad_free[128];
} emu_api;

/* ---- the allocation table ---- */

/* Index of the first allocation starting above `addr`. */
static size_t first_above(const emu_api *a, uintptr_t addr)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int inside(uintptr_t base, size_t size, uintptr_t addr, size_t bytes)
{
    return addr >= base && addr - base <= size && bytes <= size - (addr - base);
}

/* Whether [addr, addr + bytes) lies in one live allocation or one live
 * view of lent memory. An empty range may sit at the end of either. */
static int holder(const emu_api *a, uintptr_t addr, size_t bytes)
{
    size_t i = first_above(a, addr);
    if (i > 0 && inside(a->allocs[i - 1].base, a->allocs[i - 1].size, addr, bytes))
        return 1;
    for (size_t l = 0; l < a->n_lent; l++)
        if (inside(a->lent[l].base, a->lent[l].size, addr, bytes))
            return 1;
    return 0;
}

static lkv_status reported_free(emu_api *a)
{
    if (!a->bad_free[0])
        return LKV_OK;
    lkv_status st = lkv_fail(LKV_INTERNAL, "gpu-emu: %s", a->bad_free);
    a->bad_free[0] = '\0';
    return st;
}

static lkv_status check_range(emu_api *a, lkv_gpu_ptr ptr, size_t bytes, const char *what)
{
    lkv_status st = reported_free(a);
    if (st == LKV_OK && !holder(a, (uintptr_t)ptr, bytes))
        st = lkv_fail(LKV_INTERNAL, "gpu-emu: %s of %zu bytes at 0x%llx lies outside every live "
                      "allocation", what, bytes, (unsigned long long)ptr);
    return st;
}

/* ---- the driver ---- */

static lkv_status emu_enter(void *api)
{
    (void)api;
    return LKV_OK;
}

static void emu_leave(void *api)
{
    (void)api;
}

static lkv_status emu_mem_alloc(void *api, size_t bytes, lkv_gpu_ptr *out_ptr)
{
    emu_api *a = api;
    if (bytes == 0)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: mem_alloc of 0 bytes (cuMemAlloc refuses it)");
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        emu_alloc *grown = realloc(a->allocs, cap * sizeof *grown);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory to track %zu allocations",
                            cap);
        a->allocs = grown;
        a->cap = cap;
    }
    unsigned char *p = malloc(bytes);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for %zu bytes of device "
                        "memory", bytes);
    memset(p, 0xff, bytes);
    size_t i = first_above(a, (uintptr_t)p);
    memmove(&a->allocs[i + 1], &a->allocs[i], (a->n - i) * sizeof a->allocs[0]);
    a->allocs[i] = (emu_alloc){(uintptr_t)p, bytes};
    a->n++;
    *out_ptr = (lkv_gpu_ptr)(uintptr_t)p;
    return LKV_OK;
}

static void emu_mem_free(void *api, lkv_gpu_ptr ptr)
{
    emu_api *a = api;
    if (ptr == 0)
        return;
    size_t i = first_above(a, (uintptr_t)ptr);
    if (i == 0 || a->allocs[i - 1].base != (uintptr_t)ptr) {
        if (!a->bad_free[0])
            snprintf(a->bad_free, sizeof a->bad_free,
                     "mem_free of 0x%llx, which is not the start of a live allocation",
                     (unsigned long long)ptr);
        return;
    }
    free((void *)(uintptr_t)ptr);
    memmove(&a->allocs[i - 1], &a->allocs[i], (a->n - i) * sizeof a->allocs[0]);
    a->n--;
}

static lkv_status emu_mem_zero(void *api, lkv_gpu_ptr ptr, size_t bytes)
{
    lkv_status st = check_range(api, ptr, bytes, "mem_zero");
    if (st == LKV_OK && bytes)
        memset((void *)(uintptr_t)ptr, 0, bytes);
    return st;
}

/* FNV-1a: enough to see a staged source change. */
static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* A host wait for the work up to record `upto` (UINT64_MAX: all of it):
 * the copies before it have finished, so each of their staged sources must
 * still be what was queued. */
static void host_waited(emu_api *a, uint64_t upto)
{
    int kept = 0;
    for (int i = 0; i < a->n_staged; i++) {
        const emu_staged *c = &a->staged[i];
        if (c->seq > upto) {
            a->staged[kept++] = *c;
            continue;
        }
        if (hash_bytes(c->src, c->bytes) != c->hash && !a->bad_free[0])
            snprintf(a->bad_free, sizeof a->bad_free, "the host changed %zu staged bytes at %p "
                     "before the copy from them had passed its event", c->bytes,
                     (const void *)c->src);
    }
    a->n_staged = kept;
    uint64_t now = upto > a->seq ? a->seq : upto;
    a->passed = now > a->passed ? now : a->passed;
}

static lkv_status emu_host_alloc(void *api, size_t bytes, void **out_host)
{
    (void)api;
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for %zu bytes of staging",
                        bytes);
    *out_host = p;
    return LKV_OK;
}

static void emu_host_free(void *api, void *host)
{
    (void)api;
    free(host);
}

static lkv_status emu_htod_async(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    emu_api *a = api;
    lkv_status st = check_range(api, dst, bytes, "htod destination");
    if (st == LKV_OK && bytes)
        memcpy((void *)(uintptr_t)dst, src, bytes);
    if (st == LKV_OK && a->lag && bytes) {
        if (a->n_staged == EMU_MAX_STAGED)
            host_waited(a, UINT64_MAX); /* more copies in flight than tracked: as if caught up */
        a->staged[a->n_staged++] = (emu_staged){src, bytes, hash_bytes(src, bytes), a->seq + 1};
    }
    return st;
}

static lkv_status emu_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_status st = check_range(api, src, bytes, "dtoh source");
    if (st == LKV_OK && bytes)
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
    host_waited(api, UINT64_MAX);
    return st;
}

static lkv_status emu_dtod(void *api, lkv_gpu_ptr dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_status st = check_range(api, dst, bytes, "dtod destination");
    if (st == LKV_OK)
        st = check_range(api, src, bytes, "dtod source");
    /* cuMemcpyDtoD and hipMemcpyDtoD leave overlapping copies undefined */
    if (st == LKV_OK && bytes && dst < src + bytes && src < dst + bytes)
        st = lkv_fail(LKV_INTERNAL, "gpu-emu: dtod of %zu bytes from 0x%llx to 0x%llx: the "
                      "ranges overlap", bytes, (unsigned long long)src, (unsigned long long)dst);
    if (st == LKV_OK && bytes)
        memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return st;
}

static lkv_status run_kernel(emu_api *a, const lkv_emu_kernel *k, const uint32_t grid[3],
                             uint32_t block, void **args)
{
    lkv_status st = reported_free(a);
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < k->n_params; i++) {
        if (!(k->pointer_params >> i & 1))
            continue;
        lkv_gpu_ptr p;
        memcpy(&p, args[i], sizeof p);
        if (p != 0 && !holder(a, (uintptr_t)p, 0))
            return lkv_fail(LKV_INTERNAL, "gpu-emu: kernel %s, parameter %d: address 0x%llx is "
                            "in no live allocation", k->name, i, (unsigned long long)p);
    }
    char why[512];
    if (lkv_emu_run(k, (void *const *)args, grid, block, a->warp, why, sizeof why) != 0)
        return lkv_fail(LKV_DEVICE_ERROR, "gpu-emu: kernel %s: %s", k->name, why);
    return LKV_OK;
}

/* The emulator has no registers to count: it answers 2 for every kernel,
 * the kernel report's figure for the split kernels the conformance shapes
 * take (sm_90, up to 4 query heads a block), so the planner's occupancy
 * path runs here as on a GPU. */
static lkv_status emu_occupancy(void *api, lkv_gpu_kernel_id kernel, uint32_t block,
                                int *out_blocks)
{
    (void)api;
    (void)kernel;
    (void)block;
    *out_blocks = 2;
    return LKV_OK;
}

static lkv_status emu_launch(void *api, const lkv_gpu_launch *l)
{
    if ((int)l->kernel < 0 || (int)l->kernel >= lkv_emu_kernel_count)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: kernel id %d is not in the table (%d kernels)",
                        (int)l->kernel, lkv_emu_kernel_count);
    return run_kernel(api, &lkv_emu_kernels[l->kernel], l->grid, l->block, l->args);
}

static lkv_status emu_sync(void *api)
{
    host_waited(api, UINT64_MAX);
    return reported_free(api);
}

static lkv_status emu_event_create(void *api, void **out_event)
{
    (void)api;
    emu_event *e = calloc(1, sizeof *e);
    if (!e)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for an event");
    *out_event = e;
    return LKV_OK;
}

static void emu_event_destroy(void *api, void *event)
{
    (void)api;
    free(event);
}

static lkv_status emu_event_record(void *api, void *event)
{
    emu_api *a = api;
    emu_event *e = event;
    e->seq = ++a->seq;
    return reported_free(a);
}

/* Passed: always, unless events lag; then once the host waited for it or
 * for a later one. */
static lkv_status emu_event_done(void *api, void *event, int *out_done)
{
    const emu_api *a = api;
    const emu_event *e = event;
    *out_done = !a->lag || e->seq <= a->passed;
    return LKV_OK;
}

static lkv_status emu_event_wait(void *api, void *event)
{
    host_waited(api, ((const emu_event *)event)->seq);
    return reported_free(api);
}

/* Lent memory is the caller's: it is only remembered, never touched. */
static lkv_status emu_borrow(void *api, lkv_gpu_ptr ptr, size_t bytes, int on)
{
    emu_api *a = api;
    if (!on) {
        for (size_t l = 0; l < a->n_lent; l++)
            if (a->lent[l].base == (uintptr_t)ptr && a->lent[l].size == bytes) {
                a->lent[l] = a->lent[--a->n_lent];
                return LKV_OK;
            }
        return lkv_fail(LKV_INTERNAL, "gpu-emu: a view of 0x%llx (%zu bytes) that was never lent",
                        (unsigned long long)ptr, bytes);
    }
    if (a->n_lent == a->cap_lent) {
        size_t cap = a->cap_lent ? a->cap_lent * 2 : 16;
        emu_lent *grown = realloc(a->lent, cap * sizeof *grown);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory to track %zu views", cap);
        a->lent = grown;
        a->cap_lent = cap;
    }
    a->lent[a->n_lent++] = (emu_lent){(uintptr_t)ptr, bytes};
    return LKV_OK;
}

static void emu_close(void *api)
{
    emu_api *a = api;
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free((void *)a->allocs[i].base);
    free(a->allocs);
    free(a->lent);
    free(a);
}

const lkv_gpu_driver lkv_emu_driver = {
    .name = "gpu-emu",
    .enter = emu_enter,
    .leave = emu_leave,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .mem_zero = emu_mem_zero,
    .host_alloc = emu_host_alloc,
    .host_free = emu_host_free,
    .htod_async = emu_htod_async,
    .dtoh = emu_dtoh,
    .dtod = emu_dtod,
    .launch = emu_launch,
    .occupancy = emu_occupancy,
    .event_create = emu_event_create,
    .event_destroy = emu_event_destroy,
    .event_record = emu_event_record,
    .event_done = emu_event_done,
    .event_wait = emu_event_wait,
    .sync = emu_sync,
    .borrow = emu_borrow,
    .close = emu_close,
};

lkv_status lkv_emu_api_create(int warp, void **out_api)
{
    if (warp != 32 && warp != 64)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: warp %d; the emulator runs 32 or 64", warp);
    emu_api *a = calloc(1, sizeof *a);
    if (!a)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for the driver state");
    a->warp = warp;
    *out_api = a;
    return LKV_OK;
}

void lkv_emu_lag_events(void *api, int on)
{
    emu_api *a = api;
    host_waited(a, UINT64_MAX);
    a->lag = on;
}

void *lkv_emu_stream(void *api)
{
    return ((emu_api *)api)->stream;
}

lkv_status lkv_emu_launch_custom(void *api, const lkv_emu_kernel *kernel, const uint32_t grid[3],
                                 uint32_t block, void **args)
{
    return run_kernel(api, kernel, grid, block, args);
}

/* ---- the backend ---- */

/* The table and the list come from the same X-macro; a mismatch means the
 * emulator was built from another gpu_kernels.h than the library. */
static lkv_status check_table(void)
{
    if (lkv_emu_kernel_count != LKV_GPU_KERNEL_COUNT)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: %d kernels bound but gpu_kernels.h lists %d",
                        lkv_emu_kernel_count, (int)LKV_GPU_KERNEL_COUNT);
    for (int i = 0; i < lkv_emu_kernel_count; i++)
        if (strcmp(lkv_emu_kernels[i].name, lkv_gpu_kernel_names[i]) != 0)
            return lkv_fail(LKV_INTERNAL, "gpu-emu: kernel %d is %s in the emulator but %s in "
                            "the library", i, lkv_emu_kernels[i].name, lkv_gpu_kernel_names[i]);
    return LKV_OK;
}

/* The device LKV_EMU_WARP and LKV_EMU_MULTIPROCESSORS ask for; -1 with the
 * reason naming the bad value. */
static int settings_from_env(int *out_warp, int *out_mps, char *why, size_t why_len)
{
    if (lkv_emu_warp_from_env(out_warp, why, why_len) != 0)
        return -1;
    return lkv_emu_multiprocessors_from_env(out_mps, why, why_len);
}

static lkv_status emu_probe(lkv_device_report *out, int cap, int *out_count)
{
    *out_count = 1;
    if (cap < 1)
        return LKV_OK;
    lkv_device_report *rep = &out[0];
    memset(rep, 0, sizeof *rep);
    snprintf(rep->backend, sizeof rep->backend, "gpu-emu");
    rep->emulated = 1;
    int warp, mps;
    char why[160];
    if (settings_from_env(&warp, &mps, why, sizeof why) != 0) {
        rep->device = -1;
        snprintf(rep->reason, sizeof rep->reason, "%s", why);
        return LKV_OK;
    }
    rep->device = 0;
    rep->available = 1;
    snprintf(rep->name, sizeof rep->name, "CPU SIMT emulator (warp %d, %d multiprocessors)",
             warp, mps);
    snprintf(rep->reason, sizeof rep->reason,
             "runs backends/gpu/kernels/*.cu on the CPU, one block at a time (test builds only)");
    snprintf(rep->driver, sizeof rep->driver, "lazykv gpu-emu");
    return LKV_OK;
}

/* The device, on a stream that is the caller's (open_external) or none. */
static lkv_status open_on(int device, void *stream, lkv_device **out_dev)
{
    if (device != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: device %d does not exist; the emulator "
                        "has device 0 only", device);
    int warp, mps;
    char why[160];
    if (settings_from_env(&warp, &mps, why, sizeof why) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: %s", why);
    lkv_status st = check_table();
    void *api = NULL;
    if (st == LKV_OK)
        st = lkv_emu_api_create(warp, &api);
    if (st != LKV_OK)
        return st;
    ((emu_api *)api)->stream = stream;
    /* LKV_EMU_LAG_EVENTS=1: events lag from the start (lkv_emu_lag_events) */
    const char *lag = getenv("LKV_EMU_LAG_EVENTS");
    ((emu_api *)api)->lag = lag && !strcmp(lag, "1");
    lkv_gpu_limits lim = {.warp = warp, .multiprocessors = mps, .max_grid_y = 65535,
                          .max_grid_z = 65535};
    return lkv_gpu_device_create(&lkv_emu_driver, api, &lim, out_dev);
}

static lkv_status emu_open(int device, lkv_device **out_dev)
{
    return open_on(device, NULL, out_dev);
}

/* The emulator has no context; any stream pointer is recorded (and never
 * touched), so tests can follow a borrowed stream through the shared code. */
static lkv_status emu_open_external(const lkv_external_device *ext, lkv_device **out_dev)
{
    if (!ext->backend || strcmp(ext->backend, "gpu-emu") != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: external device of backend '%s'",
                        ext->backend ? ext->backend : "(null)");
    if (ext->context || ext->instance || ext->physical_device || ext->logical_device ||
        ext->queue_family)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: external device: only device and "
                        "stream may be set (context, instance, devices and queue family are "
                        "for other backends)");
    return open_on(ext->device, ext->stream, out_dev);
}

const lkv_backend_ops lkv_backend_gpu_emu = {
    .name = "gpu-emu",
    .probe = emu_probe,
    .open = emu_open,
    .open_external = emu_open_external,
    LKV_GPU_OPS_COMMON,
    .row_steps = 1,
};
