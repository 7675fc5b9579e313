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
 * reading) is then reported by the next call that can.
 *
 * A lane (lane_open) is a second stream on the same memory. Its work, too,
 * completes at once; what a stream_wait changes is when events pass: a
 * stream that waited for another's event not yet passed (events lagging)
 * has its later work behind it, so a host wait for that work makes the
 * other stream's event pass as well, as it must on a device. */
#include <pthread.h>
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

typedef struct emu_api emu_api;

typedef struct emu_event {
    emu_api *stream; /* the stream of its last record; NULL: never recorded */
    uint64_t seq;    /* the record's number on that stream (emu_api.seq) */
} emu_event;

/* Work a stream queued after its record `after` waits for record `seq` of
 * stream `on`, which had not passed when the wait was queued. */
typedef struct emu_dep {
    emu_api *on;
    uint64_t after, seq;
} emu_dep;

#define EMU_MAX_DEPS 64

/* The device's memory, shared by its streams (the device's own and its
 * lanes'), so an allocation made through either is valid on both. The
 * streams may be driven from two threads, so the tables and every stream's
 * event bookkeeping (a wait reaches into the other stream's) are kept under
 * `mutex`; kernels and copies run outside it. The last stream to close
 * frees it. */
typedef struct emu_memory {
    pthread_mutex_t mutex;
    emu_api *streams; /* the open streams, through emu_api.next */
    emu_alloc *allocs; /* live allocations, ascending by base */
    size_t n, cap;
    emu_lent *lent; /* live views of lent memory, any order */
    size_t n_lent, cap_lent;
    int multiprocessors; /* what the device reports (4 unless open was told otherwise) */
} emu_memory;

/* One stream: the driver state of a device handle. */
struct emu_api {
    emu_memory *mem;
    emu_api *next;
    int warp;
    /* events pass only at a host wait (lkv_emu_lag_events): records are
     * numbered, and those up to `passed` have passed */
    int lag;
    uint64_t seq, passed;
    emu_staged staged[EMU_MAX_STAGED];
    int n_staged;
    emu_dep deps[EMU_MAX_DEPS];
    int n_deps;
    /* external: the stream an open_external borrowed (recorded, never used) */
    int external;
    void *stream;
    /* mem_free cannot fail, so a free of an unknown address is reported by
     * the next call that can */
    char bad_free[128];
};

static void lock(const emu_api *a)
{
    pthread_mutex_lock(&a->mem->mutex);
}

static void unlock(const emu_api *a)
{
    pthread_mutex_unlock(&a->mem->mutex);
}

/* ---- the allocation table (under the lock) ---- */

/* Index of the first allocation starting above `addr`. */
static size_t first_above(const emu_memory *m, uintptr_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->allocs[mid].base <= addr)
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
static int holder(const emu_memory *m, uintptr_t addr, size_t bytes)
{
    size_t i = first_above(m, addr);
    if (i > 0 && inside(m->allocs[i - 1].base, m->allocs[i - 1].size, addr, bytes))
        return 1;
    for (size_t l = 0; l < m->n_lent; l++)
        if (inside(m->lent[l].base, m->lent[l].size, addr, bytes))
            return 1;
    return 0;
}

/* Under the lock: another stream's wait may write `bad_free`. */
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
    lock(a);
    lkv_status st = reported_free(a);
    if (st == LKV_OK && !holder(a->mem, (uintptr_t)ptr, bytes))
        st = lkv_fail(LKV_INTERNAL, "gpu-emu: %s of %zu bytes at 0x%llx lies outside every live "
                      "allocation", what, bytes, (unsigned long long)ptr);
    unlock(a);
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

static lkv_status track(emu_memory *m, unsigned char *p, size_t bytes)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        emu_alloc *grown = realloc(m->allocs, cap * sizeof *grown);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory to track %zu allocations",
                            cap);
        m->allocs = grown;
        m->cap = cap;
    }
    size_t i = first_above(m, (uintptr_t)p);
    memmove(&m->allocs[i + 1], &m->allocs[i], (m->n - i) * sizeof m->allocs[0]);
    m->allocs[i] = (emu_alloc){(uintptr_t)p, bytes};
    m->n++;
    return LKV_OK;
}

static lkv_status emu_mem_alloc(void *api, size_t bytes, lkv_gpu_ptr *out_ptr)
{
    emu_api *a = api;
    if (bytes == 0)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: mem_alloc of 0 bytes (cuMemAlloc refuses it)");
    unsigned char *p = malloc(bytes);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for %zu bytes of device "
                        "memory", bytes);
    memset(p, 0xff, bytes);
    lock(a);
    lkv_status st = track(a->mem, p, bytes);
    unlock(a);
    if (st != LKV_OK) {
        free(p);
        return st;
    }
    *out_ptr = (lkv_gpu_ptr)(uintptr_t)p;
    return LKV_OK;
}

static void emu_mem_free(void *api, lkv_gpu_ptr ptr)
{
    emu_api *a = api;
    if (ptr == 0)
        return;
    lock(a);
    emu_memory *m = a->mem;
    size_t i = first_above(m, (uintptr_t)ptr);
    if (i == 0 || m->allocs[i - 1].base != (uintptr_t)ptr) {
        if (!a->bad_free[0])
            snprintf(a->bad_free, sizeof a->bad_free,
                     "mem_free of 0x%llx, which is not the start of a live allocation",
                     (unsigned long long)ptr);
    } else {
        free((void *)(uintptr_t)ptr);
        memmove(&m->allocs[i - 1], &m->allocs[i], (m->n - i) * sizeof m->allocs[0]);
        m->n--;
    }
    unlock(a);
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

/* The copies up to record `upto` have finished, so each of their staged
 * sources must still be what was queued. */
static void check_staged(emu_api *a, uint64_t upto)
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
}

/* A wait of a's queued after its record `upto` is not covered by a host wait
 * up to that record: the index of one that is, or -1. */
static int covered_dep(const emu_api *a, uint64_t upto)
{
    for (int i = 0; i < a->n_deps; i++)
        if (a->deps[i].after < upto)
            return i;
    return -1;
}

/* A host wait for the work up to record `upto` (UINT64_MAX: all of it),
 * under the lock. That work ran after every event of another stream it
 * waited for, so those have passed too. Each wait is dropped before its
 * stream is followed, so waits in a cycle end. */
static void host_waited(emu_api *a, uint64_t upto)
{
    check_staged(a, upto);
    uint64_t now = upto > a->seq ? a->seq : upto;
    a->passed = now > a->passed ? now : a->passed;
    for (int i = covered_dep(a, upto); i >= 0; i = covered_dep(a, upto)) {
        emu_dep d = a->deps[i];
        a->deps[i] = a->deps[--a->n_deps];
        host_waited(d.on, d.seq);
    }
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
    lock(a);
    if (st == LKV_OK && a->lag && bytes) {
        if (a->n_staged == EMU_MAX_STAGED)
            host_waited(a, UINT64_MAX); /* more copies in flight than tracked: as if caught up */
        a->staged[a->n_staged++] = (emu_staged){src, bytes, hash_bytes(src, bytes), a->seq + 1};
    }
    unlock(a);
    return st;
}

static lkv_status emu_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_status st = check_range(api, src, bytes, "dtoh source");
    if (st == LKV_OK && bytes)
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
    lock(api);
    host_waited(api, UINT64_MAX);
    unlock(api);
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

/* Every pointer parameter is null or in live memory (under the lock). */
static lkv_status check_params(emu_api *a, const lkv_emu_kernel *k, void **args)
{
    lkv_status st = reported_free(a);
    for (int i = 0; st == LKV_OK && i < k->n_params; i++) {
        if (!(k->pointer_params >> i & 1))
            continue;
        lkv_gpu_ptr p;
        memcpy(&p, args[i], sizeof p);
        if (p != 0 && !holder(a->mem, (uintptr_t)p, 0))
            st = lkv_fail(LKV_INTERNAL, "gpu-emu: kernel %s, parameter %d: address 0x%llx is "
                          "in no live allocation", k->name, i, (unsigned long long)p);
    }
    return st;
}

/* The emulator has no registers to count: it answers 2 for every kernel,
 * the kernel report's figure for the split kernels the conformance shapes
 * take (sm_90, up to 4 query heads a block), so the planner's occupancy
 * path runs here as on a GPU. */
#define EMU_RESIDENT_PER_MP 2

static lkv_status emu_occupancy(void *api, lkv_gpu_kernel_id kernel, uint32_t block,
                                int *out_blocks)
{
    (void)api;
    (void)kernel;
    (void)block;
    *out_blocks = EMU_RESIDENT_PER_MP;
    return LKV_OK;
}

/* A cooperative grid must fit on the device at once: at most multiprocessors
 * x the occupancy emu_occupancy reports, and at most the emulator's cap
 * (LKV_EMU_COOPERATIVE_MAX: each block parked at an lkv_grid_wait holds a
 * fiber set and a copy of shared memory). Beyond, UNSUPPORTED before
 * anything is looked at or run, as CUDA's COOPERATIVE_LAUNCH_TOO_LARGE. */
static lkv_status fits_at_once(const emu_api *a, const lkv_emu_kernel *k, const uint32_t grid[3])
{
    uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
    int mps = a->mem->multiprocessors;
    uint64_t device = (uint64_t)mps * EMU_RESIDENT_PER_MP;
    uint64_t limit = device < LKV_EMU_COOPERATIVE_MAX ? device : LKV_EMU_COOPERATIVE_MAX;
    if (blocks <= limit)
        return LKV_OK;
    return lkv_fail(LKV_UNSUPPORTED, "gpu-emu: cooperative launch of kernel %s: %llu blocks "
                    "(grid %u x %u x %u) do not fit on the device at once; the limit is %llu "
                    "(%d multiprocessors x %d resident blocks, and the emulator holds at most "
                    "%d) (CUDA: COOPERATIVE_LAUNCH_TOO_LARGE)", k->name,
                    (unsigned long long)blocks, (unsigned)grid[0], (unsigned)grid[1],
                    (unsigned)grid[2], (unsigned long long)limit, mps, EMU_RESIDENT_PER_MP,
                    LKV_EMU_COOPERATIVE_MAX);
}

static lkv_status run_kernel(emu_api *a, const lkv_emu_kernel *k, const uint32_t grid[3],
                             uint32_t block, void **args, int cooperative)
{
    lkv_status st = cooperative ? fits_at_once(a, k, grid) : LKV_OK;
    if (st != LKV_OK)
        return st;
    lock(a);
    st = check_params(a, k, args);
    unlock(a);
    if (st != LKV_OK)
        return st;
    char why[1024];
    int r = cooperative
                ? lkv_emu_run_cooperative(k, (void *const *)args, grid, block, a->warp, why,
                                          sizeof why)
                : lkv_emu_run(k, (void *const *)args, grid, block, a->warp, why, sizeof why);
    if (r != 0)
        return lkv_fail(LKV_DEVICE_ERROR, "gpu-emu: kernel %s: %s", k->name, why);
    return LKV_OK;
}

static lkv_status launch_any(void *api, const lkv_gpu_launch *l, int cooperative)
{
    if ((int)l->kernel < 0 || (int)l->kernel >= lkv_emu_kernel_count)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: kernel id %d is not in the table (%d kernels)",
                        (int)l->kernel, lkv_emu_kernel_count);
    return run_kernel(api, &lkv_emu_kernels[l->kernel], l->grid, l->block, l->args,
                      cooperative);
}

static lkv_status emu_launch(void *api, const lkv_gpu_launch *l)
{
    return launch_any(api, l, 0);
}

/* Every block resident at once (lkv_emu_run_cooperative), within
 * fits_at_once's limit. */
static lkv_status emu_launch_cooperative(void *api, const lkv_gpu_launch *l)
{
    return launch_any(api, l, 1);
}

static lkv_status emu_sync(void *api)
{
    lock(api);
    host_waited(api, UINT64_MAX);
    lkv_status st = reported_free(api);
    unlock(api);
    return st;
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

/* A wait already queued on the event holds: it keeps the record, not the
 * event. */
static void emu_event_destroy(void *api, void *event)
{
    (void)api;
    free(event);
}

static lkv_status emu_event_record(void *api, void *event)
{
    emu_api *a = api;
    emu_event *e = event;
    lock(a);
    e->stream = a;
    e->seq = ++a->seq;
    lkv_status st = reported_free(a);
    unlock(a);
    return st;
}

/* Whether the event's record has passed (under the lock): always, unless
 * its stream's events lag; then once the host waited for it or a later
 * one. A never-recorded event has, as cuEventQuery says. */
static int passed(const emu_event *e)
{
    const emu_api *s = e->stream;
    return !s || !s->lag || e->seq <= s->passed;
}

static lkv_status emu_event_done(void *api, void *event, int *out_done)
{
    lock(api);
    *out_done = passed(event);
    unlock(api);
    return LKV_OK;
}

static lkv_status emu_event_wait(void *api, void *event)
{
    emu_event *e = event;
    lock(api);
    if (e->stream)
        host_waited(e->stream, e->seq);
    lkv_status st = reported_free(api);
    unlock(api);
    return st;
}

/* Queued work that waits for `on`'s record `seq`; with the table full the
 * oldest wait is taken as passed, as if the device had caught up. */
static void add_dep(emu_api *a, emu_api *on, uint64_t seq)
{
    if (a->n_deps == EMU_MAX_DEPS) {
        emu_dep d = a->deps[0];
        a->deps[0] = a->deps[--a->n_deps];
        host_waited(d.on, d.seq);
    }
    a->deps[a->n_deps++] = (emu_dep){on, a->seq, seq};
}

/* Work already queued has run, and so had the other stream's up to the
 * event when it was recorded, so the data is there now; what the wait
 * decides is when this stream's later events may pass. Waiting for a
 * passed event, or one of this stream (stream order), changes nothing. */
static lkv_status emu_stream_wait(void *api, void *event)
{
    emu_api *a = api;
    const emu_event *e = event;
    lock(a);
    lkv_status st = reported_free(a);
    emu_api *on = e->stream;
    if (st == LKV_OK && on && on->mem != a->mem)
        st = lkv_fail(LKV_INTERNAL, "gpu-emu: stream_wait for an event of another device");
    else if (st == LKV_OK && on && on != a && !passed(e)) {
        if (a->lag)
            add_dep(a, on, e->seq);
        else /* this stream keeps up: what it waits for has passed */
            host_waited(on, e->seq);
    }
    unlock(a);
    return st;
}

/* Lent memory is the caller's: it is only remembered, never touched. */
static lkv_status lend(emu_memory *m, lkv_gpu_ptr ptr, size_t bytes, int on)
{
    if (!on) {
        for (size_t l = 0; l < m->n_lent; l++)
            if (m->lent[l].base == (uintptr_t)ptr && m->lent[l].size == bytes) {
                m->lent[l] = m->lent[--m->n_lent];
                return LKV_OK;
            }
        return lkv_fail(LKV_INTERNAL, "gpu-emu: a view of 0x%llx (%zu bytes) that was never lent",
                        (unsigned long long)ptr, bytes);
    }
    if (m->n_lent == m->cap_lent) {
        size_t cap = m->cap_lent ? m->cap_lent * 2 : 16;
        emu_lent *grown = realloc(m->lent, cap * sizeof *grown);
        if (!grown)
            return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory to track %zu views", cap);
        m->lent = grown;
        m->cap_lent = cap;
    }
    m->lent[m->n_lent++] = (emu_lent){(uintptr_t)ptr, bytes};
    return LKV_OK;
}

static lkv_status emu_borrow(void *api, lkv_gpu_ptr ptr, size_t bytes, int on)
{
    lock(api);
    lkv_status st = lend(((emu_api *)api)->mem, ptr, bytes, on);
    unlock(api);
    return st;
}

/* A stream on `m`, lagging as `lag` says; the memory holds it from here. */
static lkv_status new_stream(emu_memory *m, int warp, int lag, emu_api **out)
{
    emu_api *a = calloc(1, sizeof *a);
    if (!a)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for the driver state");
    a->mem = m;
    a->warp = warp;
    a->lag = lag;
    a->next = m->streams;
    m->streams = a;
    *out = a;
    return LKV_OK;
}

/* A stream of our own beside `api`'s on its memory, lagging as it does. A
 * device on an engine's stream gets none, as with CUDA and HIP, so the
 * tests walk that path too. */
static lkv_status emu_lane_open(void *api, void **out_api)
{
    emu_api *a = api;
    if (a->external)
        return lkv_fail(LKV_UNSUPPORTED, "gpu-emu: no lane on the engine's stream "
                        "(open_external): lazykv's work stays on the stream the engine orders");
    emu_api *l = NULL;
    lock(a);
    lkv_status st = new_stream(a->mem, a->warp, a->lag, &l);
    unlock(a);
    if (st == LKV_OK)
        *out_api = l;
    return st;
}

static void free_memory(emu_memory *m)
{
    for (size_t i = 0; i < m->n; i++)
        free((void *)m->allocs[i].base);
    free(m->allocs);
    free(m->lent);
    pthread_mutex_destroy(&m->mutex);
    free(m);
}

/* Closing waits for the stream, so what it waited for has passed, and any
 * other stream's wait for it is met. The staging regions are gone by now
 * (their copies were waited for), so they are not read again. */
static void detach(emu_api *a)
{
    emu_memory *m = a->mem;
    a->n_staged = 0;
    host_waited(a, UINT64_MAX);
    for (emu_api **p = &m->streams; *p;) {
        emu_api *s = *p;
        for (int i = 0; i < s->n_deps;)
            if (s->deps[i].on == a)
                s->deps[i] = s->deps[--s->n_deps];
            else
                i++;
        if (s == a)
            *p = s->next;
        else
            p = &s->next;
    }
}

static void emu_close(void *api)
{
    emu_api *a = api;
    if (!a)
        return;
    emu_memory *m = a->mem;
    pthread_mutex_lock(&m->mutex);
    detach(a);
    int last = m->streams == NULL;
    pthread_mutex_unlock(&m->mutex);
    if (last)
        free_memory(m);
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
    .launch_cooperative = emu_launch_cooperative,
    .occupancy = emu_occupancy,
    .event_create = emu_event_create,
    .event_destroy = emu_event_destroy,
    .event_record = emu_event_record,
    .event_done = emu_event_done,
    .event_wait = emu_event_wait,
    .sync = emu_sync,
    .borrow = emu_borrow,
    .lane_open = emu_lane_open,
    .stream_wait = emu_stream_wait,
    .close = emu_close,
};

lkv_status lkv_emu_api_create(int warp, void **out_api)
{
    if (warp != 32 && warp != 64)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gpu-emu: warp %d; the emulator runs 32 or 64", warp);
    emu_memory *m = calloc(1, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gpu-emu: no host memory for the driver state");
    m->multiprocessors = 4;
    if (pthread_mutex_init(&m->mutex, NULL) != 0) {
        free(m);
        return lkv_fail(LKV_INTERNAL, "gpu-emu: could not create the memory's lock");
    }
    emu_api *a = NULL;
    lkv_status st = new_stream(m, warp, 0, &a);
    if (st != LKV_OK) {
        free_memory(m);
        return st;
    }
    *out_api = a;
    return LKV_OK;
}

void lkv_emu_lag_events(void *api, int on)
{
    emu_api *a = api;
    lock(a);
    host_waited(a, UINT64_MAX);
    a->lag = on;
    unlock(a);
}

void *lkv_emu_stream(void *api)
{
    return ((emu_api *)api)->stream;
}

lkv_status lkv_emu_launch_custom(void *api, const lkv_emu_kernel *kernel, const uint32_t grid[3],
                                 uint32_t block, void **args)
{
    return run_kernel(api, kernel, grid, block, args, 0);
}

lkv_status lkv_emu_launch_custom_cooperative(void *api, const lkv_emu_kernel *kernel,
                                             const uint32_t grid[3], uint32_t block, void **args)
{
    return run_kernel(api, kernel, grid, block, args, 1);
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
static lkv_status open_on(int device, int external, void *stream, lkv_device **out_dev)
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
    ((emu_api *)api)->external = external;
    ((emu_api *)api)->mem->multiprocessors = mps;
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
    return open_on(device, 0, NULL, out_dev);
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
    return open_on(ext->device, 1, ext->stream, out_dev);
}

const lkv_backend_ops lkv_backend_gpu_emu = {
    .name = "gpu-emu",
    .probe = emu_probe,
    .open = emu_open,
    .open_external = emu_open_external,
    LKV_GPU_OPS_COMMON,
    .row_steps = 1,
};
