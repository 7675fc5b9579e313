/* The search of host_library.h: the override, the loader's path, then an
 * install folder, each refusal noted for the message. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_library.h"
#include "host_text.h"

#ifdef RTLD_NODELETE
#define LKV_HOST_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define LKV_HOST_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif

/* `name` opened and accepted, or NULL with `name` added to `tried`. The
 * loader's reason is kept for the override (the user named that file) and
 * for a file that exists but did not load (a broken install, the wrong
 * architecture); "no such file" for a searched name would only repeat it. */
static void *try_open(const lkv_host_library_search *s, const char *name, int overridden,
                      char *tried, size_t tried_cap)
{
    void *h = dlopen(name, LKV_HOST_DLOPEN_FLAGS);
    if (h && (!s->accept || s->accept(h, s->ctx)))
        return h;
    char entry[640];
    if (h) {
        dlclose(h);
        snprintf(entry, sizeof entry, "%s", name);
    } else {
        const char *why = dlerror();
        if (overridden)
            snprintf(entry, sizeof entry, "%s from %s: %s", name, s->env,
                     why ? why : "no reason given");
        else if (why && !strstr(why, strerror(ENOENT)))
            snprintf(entry, sizeof entry, "%s (%s)", name, why);
        else
            snprintf(entry, sizeof entry, "%s", name);
    }
    lkv_host_append(tried, tried_cap, ", ", entry);
    return NULL;
}

static void *found(void *h, const char *name, char *out_path, size_t path_cap)
{
    if (h)
        snprintf(out_path, path_cap, "%s", name);
    return h;
}

void *lkv_host_library_find(const lkv_host_library_search *s, char *out_path, size_t path_cap,
                            char *tried, size_t tried_cap)
{
    const char *env = s->env ? getenv(s->env) : NULL;
    if (env && *env)
        return found(try_open(s, env, 1, tried, tried_cap), env, out_path, path_cap);
    for (size_t i = 0; i < s->count; i++) {
        void *h = try_open(s, s->names[i], 0, tried, tried_cap);
        if (h)
            return found(h, s->names[i], out_path, path_cap);
    }
    const char *dir = s->dir_env ? getenv(s->dir_env) : NULL;
    for (size_t i = 0; dir && *dir && i < s->count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/lib/%s", dir, s->names[i]);
        void *h = try_open(s, path, 0, tried, tried_cap);
        if (h)
            return found(h, path, out_path, path_cap);
    }
    return NULL;
}

void lkv_host_library_close(void *handle)
{
    if (handle)
        dlclose(handle);
}
