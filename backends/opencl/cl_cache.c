/* The on-disk program-binary cache. Building the kernels from source takes
 * a noticeable time (seconds on PoCL, which runs LLVM), so each built
 * program's binary is kept, under a file named by a hash of everything it
 * depends on: the kernel text, the build options, and the platform, device
 * and driver versions. The file repeats that key in full and a checksum of
 * the binary, so a hash collision, a truncated or corrupt file, or one from
 * another driver is simply not used. The folder is opened once per build
 * and checked through that handle, and every file is named relative to it,
 * so a folder renamed or swapped for a link after the check is never
 * followed. Nothing here ever fails an op: an unreadable, unwritable or
 * untrusted cache means a build from source. */
#define _XOPEN_SOURCE 700 /* realpath, which glibc names only beyond plain POSIX */

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_internal.h"

#define LKV_CL_CACHE_MAGIC "LKVCLBIN"
#define LKV_CL_CACHE_MAX ((long)256 << 20) /* a larger file is not a program of ours */

atomic_int lkv_cl_cache_hits, lkv_cl_cache_stores;
static atomic_uint tmp_serial; /* two devices of one process may store at once */

/* FNV-1a, 64-bit: names files and checks their contents, not a defence
 * against anyone. */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#define LKV_FNV_SEED 0xcbf29ce484222325ull

void lkv_cl_cache_key_make(const lkv_device *d, const char *const texts[LKV_CL_TEXTS], const char *options,
                           lkv_cl_cache_key *out_key)
{
    uint64_t src = LKV_FNV_SEED;
    for (int i = 0; i < LKV_CL_TEXTS; i++)
        src = fnv(src, texts[i], strlen(texts[i]) + 1); /* the NUL keeps the seams apart */
    /* The platform version names PoCL's LLVM, which its driver version
     * does not. */
    snprintf(out_key->text, sizeof out_key->text,
             "lazykv opencl program v1\nplatform %s\nplatform version %s\nvendor %08x\n"
             "device %s\ndevice version %s\ndriver %s\noptions %s\nsource %016llx\n",
             d->info.platform, d->info.platform_version, d->info.vendor_id, d->info.name,
             d->info.version, d->info.driver, options, (unsigned long long)src);
    uint64_t h = fnv(LKV_FNV_SEED, out_key->text, strlen(out_key->text));
    snprintf(out_key->file, sizeof out_key->file, "%016llx.bin", (unsigned long long)h);
}

/* The folder, or 0 when the cache is off or has nowhere to live. */
static int cache_path(char *buf, size_t len)
{
    const char *env = getenv("LAZYKV_OPENCL_CACHE");
    if (env && (!strcmp(env, "off") || !strcmp(env, "0")))
        return 0;
    if (env && *env)
        return snprintf(buf, len, "%s", env) < (int)len;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        return snprintf(buf, len, "%s/lazykv/opencl", xdg) < (int)len;
    if (home && *home)
        return snprintf(buf, len, "%s/.cache/lazykv/opencl", home) < (int)len;
    return 0;
}

/* mkdir -p, quietly; the cache folder itself private to its owner. */
static void make_dirs(char *path)
{
    for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    mkdir(path, 0700);
}

#define LKV_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* A folder above the cache: whoever can rename entries in it can swap
 * our folder for theirs, so only root or we may own it, and one writable
 * by others needs the sticky bit (/tmp), where only an entry's owner may
 * rename it; the folder below is then checked as ours in turn. */
static int safe_ancestor(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
           (st.st_uid == 0 || st.st_uid == geteuid()) &&
           ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (st.st_mode & S_ISVTX) != 0);
}

/* A cached binary is native code the driver loads, so only a folder that
 * no one else can write is trusted: ours, not writable by group or others. */
static int private_dir(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* The absolute, link-free folder `real`, opened from the root down, each
 * folder relative to the one above and checked once open, so the folder
 * checked is the folder returned whatever is renamed meanwhile; -1 when
 * one fails. A link swapped in during the walk is refused, not followed. */
static int open_ancestors(char *real)
{
    int fd = open("/", LKV_DIR_FLAGS);
    char *save = NULL;
    for (char *name = strtok_r(real, "/", &save); fd >= 0; name = strtok_r(NULL, "/", &save)) {
        if (!safe_ancestor(fd)) {
            close(fd);
            return -1;
        }
        if (!name)
            return fd;
        int next = openat(fd, name, LKV_DIR_FLAGS);
        close(fd);
        fd = next;
    }
    return -1;
}

/* The folder holding the last component of `path` (trailing slashes
 * dropped), absolute and with its links resolved (malloc'ed), and that
 * component in *out_leaf; NULL for a path without one. */
static char *real_parent(char *path, const char **out_leaf)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    char *slash = strrchr(path, '/');
    *out_leaf = slash ? slash + 1 : path;
    if (!**out_leaf)
        return NULL;
    if (!slash || slash == path)
        return realpath(slash ? "/" : ".", NULL);
    *slash = '\0';
    char *real = realpath(path, NULL);
    *slash = '/';
    return real;
}

/* The folder `path` names, opened and checked, or -1. Links above its
 * last component are resolved first, so a home reached through one still
 * has a cache; the last component itself must not be a link. */
static int open_checked(char *path)
{
    const char *leaf = NULL;
    char *real = real_parent(path, &leaf);
    int above = real ? open_ancestors(real) : -1;
    free(real);
    int dir = above >= 0 ? openat(above, leaf, LKV_DIR_FLAGS) : -1;
    if (above >= 0)
        close(above);
    if (dir >= 0 && !private_dir(dir)) {
        close(dir);
        dir = -1;
    }
    return dir;
}

int lkv_cl_cache_open(void)
{
    char path[900];
    if (!cache_path(path, sizeof path))
        return -1;
    int dir = open_checked(path);
    if (dir < 0) { /* made only when missing, so a warm cache costs no mkdir */
        make_dirs(path);
        dir = open_checked(path);
    }
    return dir;
}

void lkv_cl_cache_close(int dir)
{
    if (dir >= 0)
        close(dir);
}

static int read_full(int fd, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

/* A regular file of ours only: opened without following a link and
 * without blocking, so a link, FIFO or device node planted in the folder
 * is neither followed nor waited on. */
static unsigned char *read_entry(int dir, const char *name, size_t *out_size)
{
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    unsigned char *data = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_size > 0 && st.st_size <= LKV_CL_CACHE_MAX)
        data = malloc((size_t)st.st_size);
    if (data && !read_full(fd, data, (size_t)st.st_size)) {
        free(data);
        data = NULL;
    }
    close(fd);
    *out_size = data ? (size_t)st.st_size : 0;
    return data;
}

/* File: magic, key length (4 bytes), key, binary length (8), binary,
 * checksum of the binary (8), all in the host's byte order. */
unsigned char *lkv_cl_cache_load(int dir, const lkv_cl_cache_key *key, size_t *out_size)
{
    size_t size = 0;
    unsigned char *file = dir >= 0 ? read_entry(dir, key->file, &size) : NULL;
    if (!file)
        return NULL;
    size_t klen = strlen(key->text), at = 8 + 4 + klen;
    uint32_t flen = 0;
    uint64_t blen = 0, sum = 0;
    int ok = size >= at + 16 && memcmp(file, LKV_CL_CACHE_MAGIC, 8) == 0;
    if (ok) {
        memcpy(&flen, file + 8, 4);
        memcpy(&blen, file + at, 8);
        ok = flen == klen && memcmp(file + 12, key->text, klen) == 0 &&
             blen == (uint64_t)size - at - 16 && blen > 0;
    }
    if (ok) {
        memcpy(&sum, file + at + 8 + blen, 8);
        ok = sum == fnv(LKV_FNV_SEED, file + at + 8, (size_t)blen);
    }
    if (!ok) {
        free(file);
        return NULL;
    }
    memmove(file, file + at + 8, (size_t)blen);
    *out_size = (size_t)blen;
    return file;
}

void lkv_cl_cache_store(int dir, const lkv_cl_cache_key *key, const unsigned char *bin,
                        size_t size)
{
    if (dir < 0)
        return;
    /* Written under a private name and renamed, so a reader never sees half
     * a file and two processes storing at once do not mix their bytes. */
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", key->file, (long)getpid(),
             atomic_fetch_add(&tmp_serial, 1u));
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlinkat(dir, tmp, 0);
        }
        return;
    }
    uint32_t klen = (uint32_t)strlen(key->text);
    uint64_t blen = size, sum = fnv(LKV_FNV_SEED, bin, size);
    int ok = fwrite(LKV_CL_CACHE_MAGIC, 1, 8, f) == 8 && fwrite(&klen, 4, 1, f) == 1 &&
             fwrite(key->text, 1, klen, f) == klen && fwrite(&blen, 8, 1, f) == 1 &&
             fwrite(bin, 1, size, f) == size && fwrite(&sum, 8, 1, f) == 1;
    ok = fclose(f) == 0 && ok;
    if (ok && renameat(dir, tmp, dir, key->file) == 0)
        atomic_fetch_add(&lkv_cl_cache_stores, 1);
    else
        unlinkat(dir, tmp, 0);
}
