/* Finding a vendor library at run time: lazykv links no GPU library, so a
 * machine without a driver still runs it, and the backend then says in
 * words what it looked for. Used by every GPU backend (CUDA, HIP, OpenCL,
 * Vulkan). Plain C with no vendor header, so every build compiles it. */
#ifndef LKV_HOST_LIBRARY_H
#define LKV_HOST_LIBRARY_H

#include <stddef.h>

/* Where to look for a library. The environment variable `env`, when set and
 * not empty, names the one library to load instead of the search; else each
 * of `names` through the dynamic loader's path, then, when `dir_env` is set
 * in the environment, each as $dir_env/lib/<name> (where ROCm's packages do
 * not register their folder with the loader). */
typedef struct lkv_host_library_search {
    const char *env;
    const char *const *names;
    size_t count;
    const char *dir_env; /* "ROCM_PATH", or NULL */
    /* Whether an opened library is the one wanted (e.g. has every entry
     * point); NULL takes the first that opens. A refused library is closed
     * and the search goes on. */
    int (*accept)(void *handle, void *ctx);
    void *ctx;
} lkv_host_library_search;

/* The first library of the search that opens (and is accepted), opened with
 * RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: a driver keeps threads and exit-time
 * teardown of its own, which must not outlive its code, so closing it only
 * drops the reference. *out_path gets the name it was opened by. Each name
 * tried and refused is appended to `tried` (", "-separated, after whatever
 * it already holds): the override with the loader's reason, a searched name
 * with the loader's reason only when the file exists but did not load.
 * NULL when none was found. */
void *lkv_host_library_find(const lkv_host_library_search *s, char *out_path, size_t path_cap,
                            char *tried, size_t tried_cap);

/* Drops the reference lkv_host_library_find took; NULL does nothing. The
 * library stays mapped (RTLD_NODELETE), so a driver's threads and exit
 * handlers never outlive its code, and every open is still balanced. */
void lkv_host_library_close(void *handle);

#endif /* LKV_HOST_LIBRARY_H */
