/* The `gpu-emu` backend: the shared CUDA/HIP host code (backends/gpu/) over a
 * driver whose device memory is host memory and whose launches run the CPU
 * SIMT emulator synchronously. A device address is the host pointer, so
 * AddressSanitizer sees a kernel's out-of-bounds access; the driver itself
 * checks what a real driver would only corrupt silently: every copy lies in
 * one live allocation, device-to-device copies do not overlap, and every
 * pointer a kernel receives is null or inside a live allocation. New device
 * memory holds 0xff bytes (NaN, -1), as cuMemAlloc's holds garbage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_driver.h"
#include "error.h"

typedef struct emu_alloc {
    uintptr_t base;
    size_t size;
} emu_alloc;

typedef struct emu_api {
    int warp;
    emu_alloc *allocs; /* live allocations, ascending by base */
    size_t n, cap;
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

/* The allocation holding [addr, addr + bytes), or NULL. An empty range may
 * sit at the end of an allocation. */
static const emu_alloc *holder(const emu_api *a, uintptr_t addr, size_t bytes)
{
    size_t i = first_above(a, addr);
    if (i == 0)
        return NULL;
    const emu_alloc *al = &a->allocs[i - 1];
    if (addr - al->base > al->size || bytes > al->size - (addr - al->base))
        return NULL;
    return al;
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

static lkv_status emu_htod(void *api, lkv_gpu_ptr dst, const void *src, size_t bytes)
{
    lkv_status st = check_range(api, dst, bytes, "htod destination");
    if (st == LKV_OK && bytes)
        memcpy((void *)(uintptr_t)dst, src, bytes);
    return st;
}

static lkv_status emu_dtoh(void *api, void *dst, lkv_gpu_ptr src, size_t bytes)
{
    lkv_status st = check_range(api, src, bytes, "dtoh source");
    if (st == LKV_OK && bytes)
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
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

static lkv_status emu_launch(void *api, const lkv_gpu_launch *l)
{
    if ((int)l->kernel < 0 || (int)l->kernel >= lkv_emu_kernel_count)
        return lkv_fail(LKV_INTERNAL, "gpu-emu: kernel id %d is not in the table (%d kernels)",
                        (int)l->kernel, lkv_emu_kernel_count);
    return run_kernel(api, &lkv_emu_kernels[l->kernel], l->grid, l->block, l->args);
}

static lkv_status emu_sync(void *api)
{
    return reported_free(api);
}

static void emu_close(void *api)
{
    emu_api *a = api;
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free((void *)a->allocs[i].base);
    free(a->allocs);
    free(a);
}

const lkv_gpu_driver lkv_emu_driver = {
    .name = "gpu-emu",
    .enter = emu_enter,
    .leave = emu_leave,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .mem_zero = emu_mem_zero,
    .htod = emu_htod,
    .dtoh = emu_dtoh,
    .dtod = emu_dtod,
    .launch = emu_launch,
    .sync = emu_sync,
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

static lkv_status emu_open(int device, lkv_device **out_dev)
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
    lkv_gpu_limits lim = {.warp = warp, .multiprocessors = mps, .max_grid_y = 65535,
                          .max_grid_z = 65535};
    return lkv_gpu_device_create(&lkv_emu_driver, api, &lim, out_dev);
}

const lkv_backend_ops lkv_backend_gpu_emu = {
    .name = "gpu-emu",
    .probe = emu_probe,
    .open = emu_open,
    LKV_GPU_OPS_COMMON,
};
