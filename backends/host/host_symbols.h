/* The one shape of a backend's symbol file, and the routine that resolves
 * it. A backend lists every driver entry point it calls in one file, a line
 * each:
 *
 *     LKV_SYM(group, need, return type, name, (parameter types))
 *
 *   group  a lower-case word naming where the entry point is looked up,
 *          chosen by the backend: `cuda`, `opencl`; `hip` and `hiprtc` (two
 *          libraries); Vulkan's `lib`, `global`, `instance` and `device`
 *          (dlsym, then vkGetInstanceProcAddr without and with an instance,
 *          then vkGetDeviceProcAddr)
 *   need   REQ: the group is unusable without it; OPT: may be absent (NULL)
 *
 * The includer defines LKV_SYM, includes the file and undefines it: once
 * with LKV_HOST_SLOT for the struct of function pointers, once with
 * LKV_HOST_SYMBOL for the table lkv_host_resolve walks. A new entry point is
 * one new line. */
#ifndef LKV_HOST_SYMBOLS_H
#define LKV_HOST_SYMBOLS_H

#include <stddef.h>

/* Any function pointer, as a lookup gives it; the slot's own type is the
 * one its line declares. */
typedef void (*lkv_host_fn)(void);

/* One entry point of the table: its group (the line's word, as text), its
 * exported name, where its function pointer lies in the struct, and
 * whether its group is unusable without it. */
typedef struct lkv_host_symbol {
    const char *group;
    const char *name;
    size_t offset;
    int required;
} lkv_host_symbol;

#define LKV_HOST_REQ 1
#define LKV_HOST_OPT 0

/* A line as a member of the struct `fns`. */
#define LKV_HOST_SLOT(ret, name, params) ret (*name) params;

/* A line as an entry of the table, its pointer kept in struct type `fns`. */
#define LKV_HOST_SYMBOL(fns, group, need, name)                                              \
    {#group, #name, offsetof(fns, name), LKV_HOST_##need},

/* Finds `name` where a group's entry points come from: dlsym on a library,
 * or an API's own lookup (vkGetInstanceProcAddr). NULL when absent. */
typedef lkv_host_fn (*lkv_host_lookup)(void *ctx, const char *name);

/* The lookup for a library opened with dlopen: `ctx` is its handle. */
lkv_host_fn lkv_host_dlsym(void *ctx, const char *name);

/* Looks up, with `lookup`, every entry of `table` whose group is `group`,
 * and stores it (NULL when absent) into the function pointer at `fns` +
 * offset; entries of other groups are left as they are. Returns the name of
 * the first required entry that is missing, or NULL when all are there. */
const char *lkv_host_resolve(const lkv_host_symbol *table, size_t count, const char *group,
                             lkv_host_lookup lookup, void *ctx, void *fns);

#endif /* LKV_HOST_SYMBOLS_H */
