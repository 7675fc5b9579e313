/* Resolving a backend's symbol table (host_symbols.h). */
#include <dlfcn.h>
#include <string.h>

#include "host_symbols.h"

_Static_assert(sizeof(lkv_host_fn) == sizeof(void *),
               "a function pointer is stored from dlsym's object pointer");

lkv_host_fn lkv_host_dlsym(void *ctx, const char *name)
{
    /* dlsym gives an object pointer; POSIX guarantees it converts to a
     * function pointer, which memcpy does without an aliasing cast. */
    void *entry = dlsym(ctx, name);
    lkv_host_fn fn;
    memcpy(&fn, &entry, sizeof fn);
    return fn;
}

const char *lkv_host_resolve(const lkv_host_symbol *table, size_t count, const char *group,
                             lkv_host_lookup lookup, void *ctx, void *fns)
{
    const char *missing = NULL;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(table[i].group, group) != 0)
            continue;
        /* Every function pointer has one size and representation here, so
         * the slot, declared with its own type, takes the bytes. */
        lkv_host_fn fn = lookup(ctx, table[i].name);
        memcpy((char *)fns + table[i].offset, &fn, sizeof fn);
        if (!fn && table[i].required && !missing)
            missing = table[i].name;
    }
    return missing;
}
