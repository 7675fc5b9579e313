/* The on-disk program-binary cache. Building the kernels from source takes
 * a noticeable time (seconds on PoCL, which runs LLVM), so each built
 * program's binary is kept, under a file named by a hash of everything it
 * depends on: the kernel text, the build options, and the platform, device
 * and driver versions. The file repeats that key in full and a checksum of
 * the binary, so a hash collision, a truncated or corrupt file, or one from
 * another driver is simply not used. Nothing here ever fails an op: an
 * unreadable or unwritable cache means a build from source. */
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

void lkv_cl_cache_key_make(const lkv_device *d, const char *const texts[3], const char *options,
                           lkv_cl_cache_key *out_key)
{
    uint64_t src = LKV_FNV_SEED;
    for (int i = 0; i < 3; i++)
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

/* A cached binary is native code the driver loads, so only a folder that
 * no one else can write is trusted: ours, not writable by group or others. */
static int trusted(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static int cache_dir(char *buf, size_t len)
{
    return cache_path(buf, len) && trusted(buf);
}

static int path_of(const lkv_cl_cache_key *key, char *buf, size_t len)
{
    char dir[900];
    return cache_dir(dir, sizeof dir) && snprintf(buf, len, "%s/%s", dir, key->file) < (int)len;
}

/* A regular file only: opened without blocking, so a FIFO or device node
 * planted in the folder cannot stall a build. */
static unsigned char *read_all(const char *path, long *out_size)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return NULL;
    FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        close(fd);
        return NULL;
    }
    unsigned char *data = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size > 0 && size <= LKV_CL_CACHE_MAX && fseek(f, 0, SEEK_SET) == 0)
        data = malloc((size_t)size);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *out_size = size;
    return data;
}

/* File: magic, key length (4 bytes), key, binary length (8), binary,
 * checksum of the binary (8), all in the host's byte order. */
unsigned char *lkv_cl_cache_load(const lkv_cl_cache_key *key, size_t *out_size)
{
    char path[1024];
    long size = 0;
    unsigned char *file = path_of(key, path, sizeof path) ? read_all(path, &size) : NULL;
    if (!file)
        return NULL;
    size_t klen = strlen(key->text), at = 8 + 4 + klen;
    uint32_t flen = 0;
    uint64_t blen = 0, sum = 0;
    int ok = (size_t)size >= at + 16 && memcmp(file, LKV_CL_CACHE_MAGIC, 8) == 0;
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

void lkv_cl_cache_store(const lkv_cl_cache_key *key, const unsigned char *bin, size_t size)
{
    char dir[900], path[1024], tmp[1100];
    if (!cache_path(dir, sizeof dir))
        return;
    make_dirs(dir);
    if (!trusted(dir) || snprintf(path, sizeof path, "%s/%s", dir, key->file) >= (int)sizeof path)
        return;
    /* Written under a private name and renamed, so a reader never sees half
     * a file and two processes storing at once do not mix their bytes. */
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", path, (long)getpid(),
             atomic_fetch_add(&tmp_serial, 1u));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    uint32_t klen = (uint32_t)strlen(key->text);
    uint64_t blen = size, sum = fnv(LKV_FNV_SEED, bin, size);
    int ok = fwrite(LKV_CL_CACHE_MAGIC, 1, 8, f) == 8 && fwrite(&klen, 4, 1, f) == 1 &&
             fwrite(key->text, 1, klen, f) == klen && fwrite(&blen, 8, 1, f) == 1 &&
             fwrite(bin, 1, size, f) == size && fwrite(&sum, 8, 1, f) == 1;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        atomic_fetch_add(&lkv_cl_cache_stores, 1);
    else
        unlink(tmp);
}
