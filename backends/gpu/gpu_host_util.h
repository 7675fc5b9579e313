/* Host-side pieces the backends that load a vendor library (CUDA, HIP,
 * OpenCL) share that are not about
 * devices: finding and resolving a vendor library loaded at run time
 * (gpu_dl.c), the wording of a failed driver call and other bounded text
 * (gpu_text.c), and the probe's reports (gpu_report.c). Plain C with no
 * vendor header, so every build compiles it. */
#ifndef LKV_GPU_HOST_UTIL_H
#define LKV_GPU_HOST_UTIL_H

#include <stddef.h>

#include "lazykv.h"

/* ---- gpu_dl.c: vendor libraries ---- */

/* Where to look for a library. The environment variable `env`, when set and
 * not empty, names the one library to load instead of the search; else each
 * of `names` through the dynamic loader's path, then, when `dir_env` is set
 * in the environment, each as $dir_env/lib/<name> (where ROCm's packages do
 * not register their folder with the loader). */
typedef struct lkv_gpu_dl_search {
    const char *env;
    const char *const *names;
    size_t count;
    const char *dir_env; /* "ROCM_PATH", or NULL */
    /* Whether an opened library is the one wanted (e.g. has every entry
     * point); NULL takes the first that opens. A refused library is closed
     * and the search goes on. */
    int (*accept)(void *handle, void *ctx);
    void *ctx;
} lkv_gpu_dl_search;

/* The first library of the search that opens (and is accepted), opened with
 * RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: a driver keeps threads and exit-time
 * teardown of its own, which must not outlive its code, so closing it only
 * drops the reference. *out_path gets the name it was opened by. Each name
 * tried and refused is appended to `tried` (", "-separated, after whatever
 * it already holds): the override with the loader's reason, a searched name
 * with the loader's reason only when the file exists but did not load.
 * NULL when none was found. */
void *lkv_gpu_dl_find(const lkv_gpu_dl_search *s, char *out_path, size_t path_cap, char *tried,
                      size_t tried_cap);

/* One entry point of a vendor library: its exported name, where its
 * function pointer lies in the table struct, and whether the library is
 * unusable without it. A backend builds the list from its X-macro symbol
 * list with offsetof. */
typedef struct lkv_gpu_dl_symbol {
    const char *name;
    size_t offset;
    int required;
} lkv_gpu_dl_symbol;

/* Looks up every symbol of `list` in `handle` and stores it (NULL when
 * absent) into the function pointer at `table` + offset. Returns the name
 * of the first required symbol that is missing, or NULL when all are there. */
const char *lkv_gpu_dl_resolve(void *handle, const lkv_gpu_dl_symbol *list, size_t count,
                               void *table);

/* ---- gpu_text.c: messages and bounded text ---- */

/* Appends `text` to the NUL-terminated string in buf (cap bytes), after
 * `sep` when buf is not empty, truncating rather than overrunning. */
void lkv_gpu_append(char *buf, size_t cap, const char *sep, const char *text);

/* A driver's error code in words: "CUDA_ERROR_UNKNOWN (unknown error)",
 * "NAME" without a text, "error 999 (text)" or "error 999" when the driver
 * cannot name it. `name` and `text` may be NULL. */
void lkv_gpu_error_text(int code, const char *name, const char *text, char *buf, size_t len);

/* The one shape of a failed driver call, for every GPU backend:
 * "<backend>: <what>: <error text as above>", failed with status `st`.
 * Returns `st`. */
lkv_status lkv_gpu_call_failed(lkv_status st, const char *backend, const char *what, int code,
                               const char *name, const char *text);

/* 16 UUID bytes as 8-4-4-4-12 lowercase hex; all zero bytes (a driver that
 * has no UUID for the device) give "". `len` should be at least 37. */
void lkv_gpu_uuid_text(const unsigned char bytes[16], char *buf, size_t len);

/* A PCI address as a driver writes it ("0000:65:00.0", "00000000:65:00.0")
 * in the one form reports use, "dddd:bb:dd.f"; "" when `raw` is not one. */
void lkv_gpu_pci_text(const char *raw, char *buf, size_t len);

/* ---- gpu_report.c: the probe's reports ---- */

/* A backend that cannot offer any device: one report (device -1, not
 * available) saying why, written when cap allows; the count is 1 either way. */
void lkv_gpu_report_unavailable(lkv_device_report *out, int cap, int *out_count,
                                const char *backend, const char *why);

#endif /* LKV_GPU_HOST_UTIL_H */
