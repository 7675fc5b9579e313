/* The OpenCL backend as a user meets it: a missing, foreign or empty ICD
 * loader is one clean UNAVAILABLE report with the reason; with a driver
 * (PoCL on the CPU in CI) every device the driver lists has its report, a
 * device that is not a GPU is marked emulated so `auto` passes over it, and naming it
 * opens it; a bad knob fails the open naming the variable and leaves
 * nothing behind; the on-disk program-binary cache only ever saves time
 * (a second runtime takes the binaries and computes the same bits, a
 * corrupt, unwritable or disabled cache changes no result, an entry
 * without its kernel is rebuilt and replaced, and a build option is part
 * of the key), and is never fed from a folder others control (a link for
 * the folder or for an entry, a folder swapped after its check, a parent
 * others may rename it out of); and decodes with evictions, binding windows
 * included, keep the positions the cpu oracle keeps with its outputs
 * within f32 rounding.
 *
 * Each Criterion test runs in its own process; even so every environment
 * change goes through env_put and is undone by the suite's fini, and every
 * test that builds kernels points LAZYKV_OPENCL_CACHE at a folder of its
 * own. Where OpenCL is unavailable the device tests skip, unless
 * LAZYKV_REQUIRE_BACKENDS names opencl (CI), where they fail. */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opencl/cl_internal.h"
#include "test_util.h"

/* ---- environment and scratch folders, undone after each test ---- */

#define MAX_SAVED 16
#define MAX_SCRATCH 8

static struct saved_env {
    const char *name; /* a string literal */
    char *value;      /* NULL when it was unset */
} saved[MAX_SAVED];
static int n_saved;
static char scratch[MAX_SCRATCH][512];
static int n_scratch;

/* Sets (or with NULL unsets) a variable, remembering its first value. */
static void env_put(const char *name, const char *value)
{
    int known = 0;
    for (int i = 0; i < n_saved; i++)
        known |= strcmp(saved[i].name, name) == 0;
    cr_assert(known || n_saved < MAX_SAVED, "too many variables changed in one test");
    if (!known) {
        const char *old = getenv(name);
        saved[n_saved].name = name;
        saved[n_saved].value = old ? strdup(old) : NULL;
        n_saved++;
    }
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* Removes a tree this suite made (nothing else is ever passed here). */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    chmod(path, 0700); /* the read-only folder of one test */
    DIR *dir = opendir(path);
    for (struct dirent *e = dir ? readdir(dir) : NULL; e; e = readdir(dir)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        remove_tree(sub);
    }
    if (dir)
        closedir(dir);
    rmdir(path);
}

/* A new empty folder, removed after the test. */
static const char *fresh_dir(void)
{
    cr_assert_lt(n_scratch, MAX_SCRATCH);
    const char *tmp = getenv("TMPDIR");
    char *p = scratch[n_scratch];
    snprintf(p, sizeof scratch[0], "%s/lazykv-opencl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(p), "mkdtemp failed for %s", p);
    n_scratch++;
    return p;
}

/* A fresh folder for the program-binary cache of this test. */
static const char *fresh_cache(void)
{
    const char *dir = fresh_dir();
    env_put("LAZYKV_OPENCL_CACHE", dir);
    return dir;
}

/* Every test starts from the backend's defaults, whatever the caller's
 * environment says. */
static void defaults(void)
{
    static const char *const knobs[] = {"LAZYKV_OPENCL_LIBRARY", "LAZYKV_OPENCL_WG",
                                        "LAZYKV_OPENCL_MAX_RANGE", "LAZYKV_OPENCL_F64"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        env_put(knobs[i], NULL);
}

static void undo(void)
{
    for (int i = n_saved - 1; i >= 0; i--) {
        if (saved[i].value)
            setenv(saved[i].name, saved[i].value, 1);
        else
            unsetenv(saved[i].name);
        free(saved[i].value);
    }
    n_saved = 0;
    for (int i = 0; i < n_scratch; i++)
        remove_tree(scratch[i]);
    n_scratch = 0;
}

TestSuite(opencl_loader, .init = defaults, .fini = undo);
TestSuite(opencl_devices, .init = defaults, .fini = undo);
TestSuite(opencl_knobs, .init = defaults, .fini = undo);
TestSuite(opencl_cache, .init = defaults, .fini = undo);
TestSuite(opencl_decode, .init = defaults, .fini = undo);

/* ---- the backend, or a skip ---- */

static int required(void)
{
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    return req && strstr(req, "opencl") != NULL;
}

static lkv_runtime *opencl_or_skip(void)
{
    lkv_runtime *rt = NULL;
    lkv_status st = lkv_runtime_open("opencl", &rt);
    if (st == LKV_OK)
        return rt;
    cr_assert(!required(), "opencl is required here but unavailable: %s", lkv_last_error());
    cr_skip_test("opencl unavailable: %s", lkv_last_error());
    return NULL;
}

/* The opencl reports of lkv_list_devices, in order. */
static int opencl_reports(lkv_device_report *out, int cap)
{
    lkv_device_report all[64];
    int n = 0, got = 0;
    TU_OK(lkv_list_devices(all, 64, &n));
    for (int i = 0; i < n && i < 64; i++)
        if (strcmp(all[i].backend, "opencl") == 0 && got < cap)
            out[got++] = all[i];
    cr_assert_gt(got, 0, "lkv_list_devices has no opencl entry");
    return got;
}

/* ---- the loader ---- */

/* One report, no device, unavailable, its reason containing `needle`; and
 * naming the backend fails UNAVAILABLE with it, leaving *out_rt alone. */
static void expect_unavailable(const char *needle)
{
    lkv_device_report reps[8];
    int n = opencl_reports(reps, 8);
    cr_assert_eq(n, 1, "%d opencl reports for an unusable loader", n);
    cr_assert_eq(reps[0].available, 0);
    cr_assert_eq(reps[0].device, -1);
    cr_assert(strstr(reps[0].reason, needle), "reason '%s' does not say '%s'", reps[0].reason,
              needle);
    static const char *const specs[] = {"opencl", "opencl:0"};
    for (int i = 0; i < 2; i++) {
        lkv_runtime *rt = (lkv_runtime *)&n;
        cr_assert_eq(lkv_runtime_open(specs[i], &rt), LKV_UNAVAILABLE, "%s: %s", specs[i],
                     lkv_last_error());
        cr_assert_eq((void *)rt, (void *)&n, "a failed open wrote *out_rt");
        cr_assert(strstr(lkv_last_error(), needle), "%s: message '%s' does not say '%s'", specs[i],
                  lkv_last_error(), needle);
    }
    /* auto passes over it */
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("auto", &rt));
    lkv_runtime_info info;
    TU_OK(lkv_runtime_get_info(rt, &info));
    cr_assert_str_neq(info.backend, "opencl");
    lkv_runtime_close(rt);
}

Test(opencl_loader, a_missing_library_is_unavailable_naming_the_path)
{
    env_put("LAZYKV_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so");
    expect_unavailable("/nonexistent/libOpenCL.so");
}

Test(opencl_loader, a_library_that_is_not_opencl_lacks_clGetPlatformIDs)
{
    env_put("LAZYKV_OPENCL_LIBRARY", "libm.so.6");
    expect_unavailable("libm.so.6 lacks clGetPlatformIDs");
}

/* ocl-icd (and the Khronos loader) read the drivers to load from
 * OCL_ICD_VENDORS: an empty folder registers none. The loader reads it
 * once, at its first call, which is why this test must be the first
 * OpenCL call of its process. */
Test(opencl_loader, a_loader_without_a_platform_is_unavailable)
{
    env_put("OCL_ICD_VENDORS", fresh_dir());
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        cr_skip_test("no libOpenCL.so.1 here: %s", dlerror());
    dlclose(h);
    expect_unavailable("no OpenCL platform");
}

/* ---- the device list ---- */

/* The devices as the driver lists them, read here with our own calls (as
 * clinfo would), every platform in order. */
typedef struct cl_listing {
    int loaded, n;
    cl_device_type type[LKV_CL_MAX_DEVICES];
    char name[LKV_CL_MAX_DEVICES][128];
    char platform[LKV_CL_MAX_DEVICES][96];
} cl_listing;

typedef cl_int (*get_platforms_fn)(cl_uint, cl_platform_id *, cl_uint *);
typedef cl_int (*get_platform_info_fn)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
typedef cl_int (*get_devices_fn)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                                 cl_uint *);
typedef cl_int (*get_device_info_fn)(cl_device_id, cl_device_info, size_t, void *, size_t *);

static void *symbol(void *h, const char *name)
{
    void *p = dlsym(h, name);
    cr_assert_not_null(p, "libOpenCL.so.1 has no %s", name);
    return p;
}

/* Kept loaded, as the backend keeps it: the ICD loader holds its platform
 * list (and a driver its threads) for the life of the process, and
 * unloading it would strand them. */
#ifdef RTLD_NODELETE
#define ICD_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define ICD_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif

static void list_independently(cl_listing *out)
{
    memset(out, 0, sizeof *out);
    void *h = dlopen("libOpenCL.so.1", ICD_DLOPEN_FLAGS);
    if (!h)
        return;
    out->loaded = 1;
    get_platforms_fn get_platforms;
    get_platform_info_fn platform_info;
    get_devices_fn get_devices;
    get_device_info_fn device_info;
    void *p = symbol(h, "clGetPlatformIDs");
    memcpy(&get_platforms, &p, sizeof p);
    p = symbol(h, "clGetPlatformInfo");
    memcpy(&platform_info, &p, sizeof p);
    p = symbol(h, "clGetDeviceIDs");
    memcpy(&get_devices, &p, sizeof p);
    p = symbol(h, "clGetDeviceInfo");
    memcpy(&device_info, &p, sizeof p);
    cl_platform_id plats[16];
    cl_uint n_plat = 0;
    if (get_platforms(16, plats, &n_plat) != LKV_CL_SUCCESS)
        n_plat = 0;
    for (cl_uint i = 0; i < n_plat && i < 16; i++) {
        cl_device_id devs[LKV_CL_MAX_DEVICES];
        cl_uint n_dev = 0;
        cl_uint room = (cl_uint)(LKV_CL_MAX_DEVICES - out->n);
        if (get_devices(plats[i], LKV_CL_DEVICE_TYPE_ALL, room, devs, &n_dev) != LKV_CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n_dev && out->n < LKV_CL_MAX_DEVICES; d++, out->n++) {
            device_info(devs[d], LKV_CL_DEVICE_TYPE, sizeof out->type[0], &out->type[out->n], NULL);
            device_info(devs[d], LKV_CL_DEVICE_NAME, sizeof out->name[0] - 1, out->name[out->n],
                        NULL);
            platform_info(plats[i], LKV_CL_PLATFORM_NAME, sizeof out->platform[0] - 1,
                          out->platform[out->n], NULL);
        }
    }
    dlclose(h);
}

/* The independent listing, skipping where there is no device. */
static void listing_or_skip(cl_listing *l)
{
    list_independently(l);
    if (l->n > 0)
        return;
    cr_assert(!required(), "opencl is required here but the ICD loader lists no device");
    cr_skip_test("%s", l->loaded ? "the OpenCL loader lists no device" : "no libOpenCL.so.1 here");
}

Test(opencl_devices, every_device_of_every_platform_has_its_report)
{
    cl_listing l;
    listing_or_skip(&l);
    lkv_device_report reps[LKV_CL_MAX_DEVICES + 1];
    int n = opencl_reports(reps, LKV_CL_MAX_DEVICES + 1);
    cr_assert_eq(n, l.n, "lazykv lists %d opencl device(s), the driver %d", n, l.n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(reps[i].device, i);
        cr_assert_str_eq(reps[i].name, l.name[i], "opencl:%d", i);
        cr_assert_eq(reps[i].emulated, (l.type[i] & LKV_CL_DEVICE_TYPE_GPU) == 0,
                     "opencl:%d (%s): emulated %d, device type 0x%llx", i, reps[i].name,
                     reps[i].emulated, (unsigned long long)l.type[i]);
        cr_assert(strstr(reps[i].driver, l.platform[i]),
                  "opencl:%d: driver '%s' omits platform '%s'", i, reps[i].driver, l.platform[i]);
    }
}

/* PoCL's index in the listing, or a skip. */
static int pocl_or_skip(const cl_listing *l)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->platform[i], "Portable Computing Language") == 0)
            return i;
    cr_skip_test("no PoCL device here");
    return -1;
}

Test(opencl_devices, pocl_is_usable_and_marked_emulated)
{
    cl_listing l;
    listing_or_skip(&l);
    int i = pocl_or_skip(&l);
    lkv_device_report reps[LKV_CL_MAX_DEVICES];
    opencl_reports(reps, LKV_CL_MAX_DEVICES);
    cr_assert_eq(reps[i].available, 1, "PoCL: %s", reps[i].reason);
    cr_assert_eq(reps[i].emulated, 1, "PoCL runs on the CPU");
    cr_assert_gt(reps[i].memory_bytes, 0);
    cr_assert(strstr(reps[i].reason, "f64 scores") || strstr(reps[i].reason, "f32 scores"),
              "reason '%s'", reps[i].reason);
}

/* Where no OpenCL device is a GPU, `auto` never picks OpenCL. */
Test(opencl_devices, auto_passes_over_cpu_emulated_devices)
{
    cl_listing l;
    listing_or_skip(&l);
    for (int i = 0; i < l.n; i++)
        if (l.type[i] & LKV_CL_DEVICE_TYPE_GPU)
            cr_skip_test("opencl:%d (%s) is a GPU", i, l.name[i]);
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("auto", &rt));
    lkv_runtime_info info;
    TU_OK(lkv_runtime_get_info(rt, &info));
    lkv_runtime_close(rt);
    cr_assert_str_neq(info.backend, "opencl", "auto chose %s", info.selection);
    if (strcmp(info.backend, "cpu") == 0)
        cr_assert(strstr(info.selection, "opencl: only CPU-emulated devices"), "selection '%s'",
                  info.selection);
}

Test(opencl_devices, naming_the_backend_opens_device_0)
{
    cl_listing l;
    listing_or_skip(&l);
    static const char *const specs[] = {"opencl", "opencl:0"};
    for (int i = 0; i < 2; i++) {
        lkv_runtime *rt = NULL;
        TU_OK(lkv_runtime_open(specs[i], &rt));
        lkv_runtime_info info;
        TU_OK(lkv_runtime_get_info(rt, &info));
        lkv_runtime_close(rt);
        cr_assert_str_eq(info.backend, "opencl", "%s", specs[i]);
        cr_assert_eq(info.device, 0, "%s", specs[i]);
        cr_assert_str_eq(info.device_name, l.name[0], "%s", specs[i]);
    }
}

Test(opencl_devices, an_index_past_the_last_device_is_refused_naming_it)
{
    cl_listing l;
    listing_or_skip(&l);
    lkv_runtime *rt = (lkv_runtime *)&l;
    cr_assert_eq(lkv_runtime_open("opencl:99", &rt), LKV_INVALID_ARGUMENT, "%s", lkv_last_error());
    cr_assert_eq((void *)rt, (void *)&l);
    cr_assert(strstr(lkv_last_error(), "99") && strstr(lkv_last_error(), "out of range"),
              "message '%s'", lkv_last_error());
}

/* ---- files of the program-binary cache ---- */

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* The number of entries of `dir` whose name ends with `tail` ("" for all);
 * 0 when it does not exist. */
static int count_entries(const char *dir, const char *tail)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        n += e->d_name[0] != '.' && ends_with(e->d_name, tail);
    if (d)
        closedir(d);
    return n;
}

/* Cached programs: whole files only, no temporary left behind. */
static int cached_programs(const char *dir)
{
    cr_assert_eq(count_entries(dir, ".tmp"), 0, "a temporary file was left in %s", dir);
    cr_assert_eq(count_entries(dir, ""), count_entries(dir, ".bin"), "a stray file in %s", dir);
    return count_entries(dir, ".bin");
}

typedef void (*file_damage)(const char *path);

static void damage_each(const char *dir, file_damage fn)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (!ends_with(e->d_name, ".bin"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        fn(path);
        n++;
    }
    closedir(d);
    cr_assert_gt(n, 0, "no cached program to damage in %s", dir);
}

static long file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (long)st.st_size;
}

static void cut_in_half(const char *path)
{
    cr_assert_eq(truncate(path, file_size(path) / 2), 0, "%s", path);
}

/* 16 bytes in the middle of the file, where the program binary is. */
static void flip_middle(const char *path)
{
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    unsigned char bytes[16];
    cr_assert_eq(fseek(f, size / 2, SEEK_SET), 0);
    cr_assert_eq(fread(bytes, 1, sizeof bytes, f), sizeof bytes);
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] ^= 0x5a;
    cr_assert_eq(fseek(f, size / 2, SEEK_SET), 0);
    cr_assert_eq(fwrite(bytes, 1, sizeof bytes, f), sizeof bytes);
    cr_assert_eq(fclose(f), 0);
}

/* ---- decoding side by side with the cpu oracle ---- */

/* LazyEviction on 2 layers, 8 query heads over 2 KV heads, window 16 and
 * budget capacity - 16: rows fill to the last slot before each eviction,
 * and the decisions depend on the attention, so they check the data the
 * kernels compute and move. */
static lkv_cache_config lazy_config(lkv_dtype dtype, int32_t head_dim, int32_t capacity)
{
    lkv_cache_config cfg = tu_config(2, 8, 2, head_dim, capacity);
    cfg.dtype = dtype;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.window = 16;
    cfg.policy.budget = capacity - 16;
    cfg.policy.alpha = 1e-3f;
    return cfg;
}

/* What a decode run gave: every output of every step and layer, and the
 * cache (kept for its positions until run_free). */
typedef struct decode_run {
    float *out;
    size_t n;
    lkv_cache *cache;
} decode_run;

static decode_run decode(lkv_runtime *rt, const lkv_cache_config *cfg, int steps)
{
    size_t qn = (size_t)cfg->q_heads * (size_t)cfg->head_dim;
    size_t kvn = (size_t)cfg->kv_heads * (size_t)cfg->head_dim;
    decode_run r = {malloc(sizeof(float) * qn * (size_t)cfg->layers * (size_t)steps),
                    qn * (size_t)cfg->layers * (size_t)steps, NULL};
    float *q = malloc(sizeof(float) * (qn + 2 * kvn));
    cr_assert(r.out && q);
    float *k = q + qn, *v = k + kvn;
    TU_OK(lkv_cache_create(rt, cfg, &r.cache));
    uint64_t rng = 42;
    for (int s = 0; s < steps; s++) {
        tu_fill_normal(q, qn, &rng, 1.5);
        tu_fill_normal(k, kvn, &rng, 1.5);
        tu_fill_normal(v, kvn, &rng, 1.0);
        for (int32_t l = 0; l < cfg->layers; l++) {
            lkv_decode_io io = {q, k, v, r.out + ((size_t)s * (size_t)cfg->layers + (size_t)l) * qn,
                                LKV_MEMORY_HOST};
            TU_OK(lkv_cache_decode(r.cache, 0, l, &io));
        }
    }
    free(q);
    return r;
}

static void run_free(decode_run *r)
{
    lkv_cache_destroy(r->cache);
    free(r->out);
    r->cache = NULL;
    r->out = NULL;
}

/* Outputs within f32 rounding of the oracle's (f32 accumulation over at
 * most a few hundred slots against double), evictions, the same kept
 * positions in every head. */
static void expect_like_oracle(const decode_run *oracle, const decode_run *dev)
{
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < oracle->n; i++) {
        double e = fabs((double)dev->out[i] - oracle->out[i]) / fmax(1.0, fabs(oracle->out[i]));
        if (!(e <= worst)) {
            worst = e;
            at = i;
        }
    }
    cr_assert_lt(worst, 1e-5,
                 "worst relative output error %g at output %zu (%g on cpu, %g on opencl)", worst,
                 at, oracle->out[at], dev->out[at]);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(dev->cache, &st));
    cr_assert_gt(st.evictions, 0, "the run must evict to test eviction");
    tu_expect_same_positions(oracle->cache, dev->cache, "opencl");
}

static void expect_same_bits(const decode_run *a, const decode_run *b, const char *why)
{
    cr_assert_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        cr_assert(memcmp(&a->out[i], &b->out[i], sizeof(float)) == 0,
                  "%s: output %zu is %.9g, was %.9g", why, i, b->out[i], a->out[i]);
}

/* One opencl runtime, one decode compared with the oracle; the runtime is
 * closed and the outputs kept. Counts the cache's hits and stores. */
typedef struct cache_use {
    int hits, stores;
} cache_use;

static decode_run opencl_decode(const lkv_cache_config *cfg, int steps, const decode_run *oracle,
                                cache_use *out_use)
{
    int hits = atomic_load(&lkv_cl_cache_hits), stores = atomic_load(&lkv_cl_cache_stores);
    lkv_runtime *rt = opencl_or_skip();
    decode_run r = decode(rt, cfg, steps);
    expect_like_oracle(oracle, &r);
    lkv_cache_destroy(r.cache);
    r.cache = NULL;
    lkv_runtime_close(rt);
    out_use->hits = atomic_load(&lkv_cl_cache_hits) - hits;
    out_use->stores = atomic_load(&lkv_cl_cache_stores) - stores;
    return r;
}

/* The shape of the cache tests: f16 storage, and 60 steps of window 16
 * over budget 32, which evict, so attend, observe, score, select and
 * compact all build their programs. */
#define CACHE_STEPS 60

static lkv_cache_config cache_test_config(void)
{
    return lazy_config(LKV_DTYPE_F16, 64, 48);
}

/* ---- knobs ---- */

/* The open fails naming the variable and the value; nothing is written,
 * *out_rt stays, and the same open without the knob then works. */
static void knob_refused(const char *name, const char *value)
{
    lkv_runtime *rt = opencl_or_skip();
    lkv_runtime_close(rt);
    const char *dir = fresh_cache();
    env_put(name, value);
    int stores = atomic_load(&lkv_cl_cache_stores);
    rt = (lkv_runtime *)&stores;
    lkv_status st = lkv_runtime_open("opencl", &rt);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%s=%s: %s: %s", name, value, lkv_status_name(st),
                 lkv_last_error());
    cr_assert_eq((void *)rt, (void *)&stores, "a failed open wrote *out_rt");
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", value);
    cr_assert(strstr(lkv_last_error(), name) && strstr(lkv_last_error(), quoted),
              "message '%s' does not name %s %s", lkv_last_error(), name, quoted);
    cr_assert_eq(count_entries(dir, ""), 0);
    cr_assert_eq(atomic_load(&lkv_cl_cache_stores), stores);
    env_put(name, NULL);
    rt = NULL;
    TU_OK(lkv_runtime_open("opencl", &rt));
    lkv_runtime_close(rt);
}

Test(opencl_knobs, a_work_group_size_not_a_power_of_two_is_refused)
{
    knob_refused("LAZYKV_OPENCL_WG", "48");
}

Test(opencl_knobs, a_work_group_size_above_256_is_refused)
{
    knob_refused("LAZYKV_OPENCL_WG", "1024");
}

Test(opencl_knobs, a_work_group_size_not_a_number_is_refused)
{
    knob_refused("LAZYKV_OPENCL_WG", "abc");
}

Test(opencl_knobs, a_binding_range_below_4096_is_refused)
{
    knob_refused("LAZYKV_OPENCL_MAX_RANGE", "10");
}

Test(opencl_knobs, an_f64_switch_other_than_0_or_1_is_refused)
{
    knob_refused("LAZYKV_OPENCL_F64", "2");
}

/* ---- the program-binary cache ---- */

/* The first runtime stores one file per program it builds; a second one in
 * the same process takes every one of them and computes the same bits. */
Test(opencl_cache, a_second_runtime_takes_the_stored_binaries)
{
    const char *dir = fresh_cache();
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use first, second;
    decode_run a = opencl_decode(&cfg, CACHE_STEPS, &oracle, &first);
    int files = cached_programs(dir);
    cr_assert_gt(first.stores, 0, "nothing was stored");
    cr_assert_eq(first.hits, 0, "an empty cache gave %d binaries", first.hits);
    cr_assert_eq(files, first.stores, "%d stores, %d files", first.stores, files);
    decode_run b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &second);
    cr_assert_eq(second.hits, files, "%d of %d cached programs taken", second.hits, files);
    cr_assert_eq(second.stores, 0, "a cached program was built again");
    cr_assert_eq(cached_programs(dir), files);
    expect_same_bits(&a, &b, "from cached binaries");
    run_free(&a);
    run_free(&b);
    run_free(&oracle);
}

/* A damaged file is not taken: the program is built from source, stored
 * again whole, and the next runtime takes the repaired file. */
static void damaged_files_are_rebuilt(file_damage damage)
{
    const char *dir = fresh_cache();
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use use;
    decode_run a = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    int files = cached_programs(dir);
    cr_assert_gt(files, 0);
    damage_each(dir, damage);
    decode_run b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, 0, "%d damaged binaries were taken", use.hits);
    cr_assert_eq(use.stores, files, "%d of %d damaged files stored again", use.stores, files);
    expect_same_bits(&a, &b, "after damaged cache files");
    run_free(&b);
    b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, files, "%d of %d repaired files taken", use.hits, files);
    expect_same_bits(&a, &b, "from repaired cache files");
    run_free(&a);
    run_free(&b);
    run_free(&oracle);
}

Test(opencl_cache, a_truncated_file_is_ignored)
{
    damaged_files_are_rebuilt(cut_in_half);
}

Test(opencl_cache, a_file_with_flipped_bytes_is_ignored)
{
    damaged_files_are_rebuilt(flip_middle);
}

/* Ops run the same where nothing can be stored. */
static void nothing_stored_in(const char *cache_dir)
{
    env_put("LAZYKV_OPENCL_CACHE", cache_dir);
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use use;
    decode_run r = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.stores, 0);
    cr_assert_eq(use.hits, 0);
    run_free(&r);
    run_free(&oracle);
}

Test(opencl_cache, a_cache_path_under_a_regular_file_fails_no_op)
{
    const char *dir = fresh_dir();
    char file[600], under[700];
    snprintf(file, sizeof file, "%s/not-a-folder", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(under, sizeof under, "%s/cache", file);
    nothing_stored_in(under);
    cr_assert_eq(file_size(file), 0);
}

Test(opencl_cache, a_read_only_cache_folder_fails_no_op)
{
    /* root writes into a 0500 folder regardless */
    if (geteuid() == 0)
        cr_skip_test("running as root, which ignores the folder's mode");
    const char *dir = fresh_dir();
    cr_assert_eq(chmod(dir, 0500), 0);
    nothing_stored_in(dir);
    cr_assert_eq(count_entries(dir, ""), 0);
}

/* The tests below move HOME and XDG_CACHE_HOME, where PoCL keeps its own
 * cache of compiled kernels too; it stays where it was, so PoCL does not
 * compile everything again (seconds per kernel, and PoCL 3.1's LLVM leaks
 * on that path, which LeakSanitizer would report). */
static void keep_pocl_cache(void)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[1024];
    if (getenv("POCL_CACHE_DIR"))
        return;
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/pocl/kcache", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/pocl/kcache", home);
    else
        return;
    env_put("POCL_CACHE_DIR", dir);
}

/* "off" neither reads nor writes, not even in the default places. */
Test(opencl_cache, off_writes_nothing)
{
    keep_pocl_cache();
    const char *home = fresh_dir();
    char xdg[600], lazykv_home[700], lazykv_xdg[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", home);
    cr_assert_eq(mkdir(xdg, 0700), 0);
    env_put("HOME", home);
    env_put("XDG_CACHE_HOME", xdg);
    nothing_stored_in("off");
    snprintf(lazykv_home, sizeof lazykv_home, "%s/.cache/lazykv", home);
    snprintf(lazykv_xdg, sizeof lazykv_xdg, "%s/lazykv", xdg);
    struct stat st;
    cr_assert_neq(stat(lazykv_home, &st), 0, "%s was made", lazykv_home);
    cr_assert_neq(stat(lazykv_xdg, &st), 0, "%s was made", lazykv_xdg);
}

/* Without LAZYKV_OPENCL_CACHE the cache lives under XDG_CACHE_HOME. */
Test(opencl_cache, by_default_the_cache_is_under_xdg_cache_home)
{
    keep_pocl_cache();
    const char *xdg = fresh_dir();
    env_put("XDG_CACHE_HOME", xdg);
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use use;
    decode_run r = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/lazykv/opencl", xdg);
    cr_assert_gt(use.stores, 0);
    cr_assert_eq(cached_programs(dir), use.stores);
    run_free(&r);
    run_free(&oracle);
}

/* The work-group size is a build option, so it is part of the key: another
 * one stores programs of its own, and the first one's are still taken. */
Test(opencl_cache, another_work_group_size_stores_its_own_programs)
{
    const char *dir = fresh_cache();
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use use;
    env_put("LAZYKV_OPENCL_WG", "64");
    decode_run a = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    int files = cached_programs(dir);
    cr_assert_gt(files, 0);
    env_put("LAZYKV_OPENCL_WG", "32");
    decode_run b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, 0, "%d work-group-64 programs were taken for 32", use.hits);
    cr_assert_eq(use.stores, files, "%d stores for work-group 32, %d for 64", use.stores, files);
    cr_assert_eq(cached_programs(dir), 2 * files);
    env_put("LAZYKV_OPENCL_WG", "64");
    decode_run c = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, files);
    cr_assert_eq(use.stores, 0);
    expect_same_bits(&a, &c, "work-group 64 from cached binaries");
    run_free(&a);
    run_free(&b);
    run_free(&c);
    run_free(&oracle);
}

/* ---- the cache folder: never one that others control ---- */

/* A key of no program, for the tests that never reach a driver. */
static lkv_cl_cache_key test_key(void)
{
    lkv_cl_cache_key key;
    memset(&key, 0, sizeof key);
    snprintf(key.text, sizeof key.text, "lazykv opencl cache test entry\n");
    snprintf(key.file, sizeof key.file, "00000000deadbeef.bin");
    return key;
}

/* `sub` of `dir`, made private (0700) unless it is only a name. */
static void sub_path(char *buf, size_t len, const char *dir, const char *sub, int make)
{
    cr_assert_lt(snprintf(buf, len, "%s/%s", dir, sub), (int)len);
    if (make)
        cr_assert_eq(mkdir(buf, 0700), 0, "mkdir %s", buf);
}

/* The cache folder LAZYKV_OPENCL_CACHE=`path` opens to, or -1. */
static int open_cache_at(const char *path)
{
    env_put("LAZYKV_OPENCL_CACHE", path);
    return lkv_cl_cache_open();
}

/* An entry holding `text` under `key` in the folder `path`. */
static void plant_entry(const char *path, const lkv_cl_cache_key *key, const char *text)
{
    int dir = open_cache_at(path);
    cr_assert_geq(dir, 0, "%s was refused", path);
    int stores = atomic_load(&lkv_cl_cache_stores);
    lkv_cl_cache_store(dir, key, (const unsigned char *)text, strlen(text));
    cr_assert_eq(atomic_load(&lkv_cl_cache_stores), stores + 1, "nothing stored in %s", path);
    lkv_cl_cache_close(dir);
}

/* The entry `key` read through the open folder `dir`: its text, or "" when
 * there is none. */
static void entry_text(int dir, const lkv_cl_cache_key *key, char *buf, size_t len)
{
    size_t size = 0;
    unsigned char *bin = lkv_cl_cache_load(dir, key, &size);
    snprintf(buf, len, "%.*s", bin ? (int)size : 0, bin ? (const char *)bin : "");
    free(bin);
}

Test(opencl_cache, a_missing_cache_folder_is_made_private)
{
    char path[700];
    sub_path(path, sizeof path, fresh_dir(), "a/b/opencl", 0);
    int dir = open_cache_at(path);
    cr_assert_geq(dir, 0, "%s was not made", path);
    lkv_cl_cache_close(dir);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0700, "mode %o", (unsigned)(st.st_mode & 0777));
}

Test(opencl_cache, a_cache_path_that_is_a_link_is_refused)
{
    const char *base = fresh_dir();
    char real[700], link[700];
    sub_path(real, sizeof real, base, "real", 1);
    sub_path(link, sizeof link, base, "cache", 0);
    cr_assert_eq(symlink(real, link), 0);
    int dir = open_cache_at(real);
    cr_assert_geq(dir, 0, "the folder itself was refused");
    lkv_cl_cache_close(dir);
    cr_assert_eq(open_cache_at(link), -1, "a link to the cache folder was followed");
}

/* Anyone may rename our folder out of a folder writable by others without
 * the sticky bit and put theirs in its place; with it (/tmp) only we may. */
Test(opencl_cache, a_parent_others_may_rename_the_folder_out_of_is_refused)
{
    const char *base = fresh_dir();
    char path[700];
    sub_path(path, sizeof path, base, "cache", 1);
    static const mode_t refused[] = {0777, 0770, 0702};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_assert_eq(chmod(base, refused[i]), 0);
        cr_assert_eq(open_cache_at(path), -1, "taken under a parent of mode %o",
                     (unsigned)refused[i]);
    }
    cr_assert_eq(chmod(base, 01777), 0);
    int dir = open_cache_at(path);
    cr_assert_geq(dir, 0, "refused under a sticky parent of mode 1777");
    lkv_cl_cache_close(dir);
    cr_assert_eq(chmod(base, 0700), 0);
}

/* The folder is checked once and then used through its handle: swapped for
 * a link to another folder (one that even passes every check) holding an
 * entry under the right name, it is still our folder that is read and
 * written. */
Test(opencl_cache, a_folder_swapped_for_a_link_after_the_check_is_not_followed)
{
    const char *base = fresh_dir();
    char path[700], moved[700], other[700], text[64];
    sub_path(path, sizeof path, base, "cache", 1);
    sub_path(moved, sizeof moved, base, "moved", 0);
    sub_path(other, sizeof other, base, "other", 1);
    lkv_cl_cache_key key = test_key();
    plant_entry(other, &key, "foreign");
    int dir = open_cache_at(path);
    cr_assert_geq(dir, 0);
    cr_assert_eq(rename(path, moved), 0);
    cr_assert_eq(symlink(other, path), 0);
    entry_text(dir, &key, text, sizeof text);
    cr_assert_str_eq(text, "", "the swapped-in folder's entry was read");
    lkv_cl_cache_store(dir, &key, (const unsigned char *)"ours", 4);
    entry_text(dir, &key, text, sizeof text);
    cr_assert_str_eq(text, "ours");
    lkv_cl_cache_close(dir);
    char stored[800];
    snprintf(stored, sizeof stored, "%s/%s", moved, key.file);
    cr_assert_eq(file_size(stored), (long)(8 + 4 + strlen(key.text) + 8 + 4 + 8),
                 "the store missed the folder that was checked");
    dir = open_cache_at(other);
    entry_text(dir, &key, text, sizeof text);
    lkv_cl_cache_close(dir);
    cr_assert_str_eq(text, "foreign", "the store went through the link");
}

Test(opencl_cache, an_entry_that_is_a_link_is_not_read)
{
    const char *base = fresh_dir();
    char path[700], other[700], target[800], entry[800], text[64];
    sub_path(path, sizeof path, base, "cache", 1);
    sub_path(other, sizeof other, base, "other", 1);
    lkv_cl_cache_key key = test_key();
    plant_entry(other, &key, "foreign");
    snprintf(target, sizeof target, "%s/%s", other, key.file);
    snprintf(entry, sizeof entry, "%s/%s", path, key.file);
    cr_assert_eq(symlink(target, entry), 0);
    int dir = open_cache_at(other);
    entry_text(dir, &key, text, sizeof text);
    lkv_cl_cache_close(dir);
    cr_assert_str_eq(text, "foreign", "the planted entry itself must be readable");
    dir = open_cache_at(path);
    cr_assert_geq(dir, 0);
    entry_text(dir, &key, text, sizeof text);
    lkv_cl_cache_close(dir);
    cr_assert_str_eq(text, "", "a link in the cache folder was followed");
}

/* A program of another kernel, built for opencl:0 as lazykv builds its own;
 * its binary, malloc'ed. */
static unsigned char *foreign_binary(size_t *out_size)
{
    static const char *const text = "__kernel void lkv_not_ours(__global int *x) { x[0] = 1; }";
    lkv_device *d = NULL;
    TU_OK(lkv_cl_open(0, &d));
    cl_int err = LKV_CL_SUCCESS;
    const char *texts[1] = {text};
    cl_program p = d->lib.fn.clCreateProgramWithSource(d->ctx, 1, texts, NULL, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
    cr_assert_eq(d->lib.fn.clBuildProgram(p, 1, &d->dev, "-cl-std=CL1.2", NULL, NULL),
                 LKV_CL_SUCCESS);
    size_t size = 0;
    cr_assert_eq(d->lib.fn.clGetProgramInfo(p, LKV_CL_PROGRAM_BINARY_SIZES, sizeof size, &size,
                                            NULL), LKV_CL_SUCCESS);
    unsigned char *bin = malloc(size);
    cr_assert(size > 0 && bin);
    cr_assert_eq(d->lib.fn.clGetProgramInfo(p, LKV_CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL),
                 LKV_CL_SUCCESS);
    d->lib.fn.clReleaseProgram(p);
    lkv_cl_close(d);
    *out_size = size;
    return bin;
}

/* Every entry of `path` holding `bin` instead, each under its own key. */
static void replace_binaries(const char *path, const unsigned char *bin, size_t size)
{
    int dir = open_cache_at(path);
    DIR *d = opendir(path);
    cr_assert(dir >= 0 && d, "%s", path);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (!ends_with(e->d_name, ".bin"))
            continue;
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        lkv_cl_cache_key key;
        memset(&key, 0, sizeof key);
        FILE *f = fopen(file, "rb");
        uint32_t klen = 0;
        cr_assert(f && fseek(f, 8, SEEK_SET) == 0 && fread(&klen, 4, 1, f) == 1, "%s", file);
        cr_assert(klen < sizeof key.text && fread(key.text, 1, klen, f) == klen, "%s", file);
        fclose(f);
        cr_assert_lt(strlen(e->d_name), sizeof key.file, "%s", e->d_name);
        memcpy(key.file, e->d_name, strlen(e->d_name) + 1);
        lkv_cl_cache_store(dir, &key, bin, size);
    }
    closedir(d);
    lkv_cl_cache_close(dir);
}

/* An entry the driver builds but without the kernel the key names: the
 * program is built from source, the op succeeds and the entry is replaced,
 * which the next runtime takes. */
Test(opencl_cache, an_entry_without_its_kernel_is_rebuilt_and_replaced)
{
    const char *dir = fresh_cache();
    lkv_cache_config cfg = cache_test_config();
    decode_run oracle = decode(tu_runtime(), &cfg, CACHE_STEPS);
    cache_use use;
    decode_run a = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    int files = cached_programs(dir);
    cr_assert_gt(files, 0);
    size_t size = 0;
    unsigned char *bin = foreign_binary(&size);
    replace_binaries(dir, bin, size);
    free(bin);
    cr_assert_eq(cached_programs(dir), files);
    decode_run b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, 0, "%d programs without their kernel were taken", use.hits);
    cr_assert_eq(use.stores, files, "%d of %d entries replaced", use.stores, files);
    expect_same_bits(&a, &b, "after entries without their kernel");
    run_free(&b);
    b = opencl_decode(&cfg, CACHE_STEPS, &oracle, &use);
    cr_assert_eq(use.hits, files, "%d of %d replaced entries taken", use.hits, files);
    cr_assert_eq(use.stores, 0);
    expect_same_bits(&a, &b, "from replaced entries");
    run_free(&a);
    run_free(&b);
    run_free(&oracle);
}

/* ---- decodes and bad input against the cpu backend ---- */

/* Binding windows of 4096 bytes hold one K/V row of a cache head at a
 * time, so attend and compact run a window per head. */
static void windowed_decode_matches_cpu(lkv_dtype dtype, int32_t head_dim, int32_t capacity)
{
    fresh_cache();
    env_put("LAZYKV_OPENCL_MAX_RANGE", "4096");
    lkv_cache_config cfg = lazy_config(dtype, head_dim, capacity);
    size_t elem = lkv_dtype_size(dtype);
    size_t row = (size_t)capacity * (size_t)head_dim * elem;
    cr_assert(row <= 4096 - 20 && row * (size_t)(cfg.layers * cfg.kv_heads) > 4096,
              "the shape must need windows of whole rows");
    decode_run oracle = decode(tu_runtime(), &cfg, 100);
    cache_use use;
    decode_run r = opencl_decode(&cfg, 100, &oracle, &use);
    run_free(&r);
    run_free(&oracle);
}

/* 49 x 15 floats per row is not a multiple of the 16-byte alignment, so
 * most windows start before their first row and kernels index past a skew. */
Test(opencl_decode, f32_binding_windows_give_the_cpu_results)
{
    windowed_decode_matches_cpu(LKV_DTYPE_F32, 15, 49);
}

/* Odd rows of halves end mid-word: windows must still reach their last value. */
Test(opencl_decode, odd_f16_binding_windows_give_the_cpu_results)
{
    windowed_decode_matches_cpu(LKV_DTYPE_F16, 17, 49);
}

Test(opencl_decode, odd_bf16_binding_windows_give_the_cpu_results)
{
    windowed_decode_matches_cpu(LKV_DTYPE_BF16, 17, 49);
}

/* The statuses of representative bad calls, on one backend. A valid step
 * after them shows they changed nothing; its output goes to `out`. */
enum { BAD_CALLS = 6 };

static void bad_calls(lkv_runtime *rt, lkv_status got[BAD_CALLS], float *out)
{
    lkv_cache_config cfg = lazy_config(LKV_DTYPE_F32, 16, 48);
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    float q[8 * 16], k[2 * 16], v[2 * 16];
    uint64_t rng = 7;
    for (int step = 0; step < 3; step++)
        tu_decode_random(c, &rng);
    tu_fill_normal(q, 8 * 16, &rng, 1.0);
    tu_fill_normal(k, 2 * 16, &rng, 1.0);
    tu_fill_normal(v, 2 * 16, &rng, 1.0);
    lkv_decode_io io = {q, k, v, out, LKV_MEMORY_HOST};
    q[5] = NAN;
    got[0] = lkv_cache_decode(c, 0, 0, &io);
    q[5] = 0.5f;
    io.memory = LKV_MEMORY_DEVICE;
    got[1] = lkv_cache_decode(c, 0, 0, &io);
    io.memory = LKV_MEMORY_HOST;
    got[2] = lkv_cache_decode(c, 0, 1, &io); /* layer 1 before layer 0 */
    int32_t n = 0, pos[48];
    lkv_slot_view view = {48, pos, NULL, NULL, NULL};
    got[3] = lkv_cache_read_slots(c, 0, 0, 99, &view, &n);
    lkv_cache *other = NULL;
    cfg.policy.budget = 400;
    got[4] = lkv_cache_create(rt, &cfg, &other);
    /* policy full never evicts: capacity 2 is full after 2 steps */
    lkv_cache_config full = tu_config(1, 8, 2, 16, 2);
    TU_OK(lkv_cache_create(rt, &full, &other));
    uint64_t rng2 = 3;
    tu_decode_random(other, &rng2);
    tu_decode_random(other, &rng2);
    float spare[8 * 16];
    lkv_decode_io one = {q, k, v, spare, LKV_MEMORY_HOST};
    got[5] = lkv_cache_decode(other, 0, 0, &one);
    lkv_cache_destroy(other);
    for (int32_t l = 0; l < cfg.layers; l++) {
        io.out = out + l * 8 * 16;
        TU_OK(lkv_cache_decode(c, 0, l, &io));
    }
    lkv_cache_destroy(c);
}

Test(opencl_decode, bad_input_gives_the_cpu_backend_statuses)
{
    fresh_cache();
    lkv_runtime *rt = opencl_or_skip();
    static const lkv_status want[BAD_CALLS] = {LKV_INVALID_ARGUMENT, LKV_UNSUPPORTED,
                                               LKV_INVALID_ARGUMENT, LKV_INVALID_ARGUMENT,
                                               LKV_INVALID_ARGUMENT, LKV_OUT_OF_MEMORY};
    lkv_status cpu[BAD_CALLS], cl[BAD_CALLS];
    float out_cpu[2 * 8 * 16], out_cl[2 * 8 * 16];
    bad_calls(tu_runtime(), cpu, out_cpu);
    bad_calls(rt, cl, out_cl);
    lkv_runtime_close(rt);
    for (int i = 0; i < BAD_CALLS; i++) {
        cr_assert_eq(cpu[i], want[i], "call %d on cpu: %s", i, lkv_status_name(cpu[i]));
        cr_assert_eq(cl[i], cpu[i], "call %d: %s on opencl, %s on cpu", i, lkv_status_name(cl[i]),
                     lkv_status_name(cpu[i]));
    }
    for (int i = 0; i < 2 * 8 * 16; i++)
        cr_assert_float_eq(out_cl[i], out_cpu[i], 1e-5f * fmaxf(1.0f, fabsf(out_cpu[i])),
                           "output %d after the bad calls: %g on opencl, %g on cpu", i, out_cl[i],
                           out_cpu[i]);
}

/* ---- a host batch step waits once ---- */

#define HB_SEQS 64
#define HB_STEPS 40

/* HB_STEPS batch steps of HB_SEQS sequences forked from one prompt, with
 * evictions every 16 steps, host arrays in and out; the last step's
 * outputs go to `out`, the syncs of each step to `syncs` (when not NULL). */
static void host_batch_run(lkv_runtime *rt, float *out, int64_t *syncs)
{
    lkv_cache_config cfg = lazy_config(LKV_DTYPE_F16, 64, 64);
    cfg.layers = 1;
    cfg.sequences = HB_SEQS;
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(rt, &cfg, &c));
    uint64_t rng = 11;
    size_t qs = 8 * 64, kvs = 2 * 64;
    float *prompt_k = tu_alloc_normal(40 * kvs, &rng, 1.0),
          *prompt_v = tu_alloc_normal(40 * kvs, &rng, 1.0);
    lkv_prefill_io pio = {.n_tokens = 40, .k = prompt_k, .v = prompt_v,
                          .memory = LKV_MEMORY_HOST};
    TU_OK(lkv_cache_prefill(c, 0, 0, &pio));
    for (int32_t j = 1; j < HB_SEQS; j++)
        TU_OK(lkv_cache_fork_sequence(c, 0, j));
    float *q = tu_alloc_normal(HB_SEQS * qs, &rng, 1.0), *k = tu_alloc_normal(HB_SEQS * kvs, &rng, 1.0),
          *v = tu_alloc_normal(HB_SEQS * kvs, &rng, 1.0);
    int32_t seqs[HB_SEQS];
    for (int32_t j = 0; j < HB_SEQS; j++)
        seqs[j] = HB_SEQS - 1 - j; /* any order */
    for (int step = 0; step < HB_STEPS; step++) {
        tu_fill_normal(q, HB_SEQS * qs, &rng, 1.0);
        tu_fill_normal(k, HB_SEQS * kvs, &rng, 1.0);
        tu_fill_normal(v, HB_SEQS * kvs, &rng, 1.0);
        lkv_counters a, b;
        TU_OK(lkv_runtime_get_counters(rt, &a));
        lkv_decode_batch_io io = {.n_sequences = HB_SEQS, .sequences = seqs,
                                  .memory = LKV_MEMORY_HOST, .q = q, .k = k, .v = v, .out = out};
        TU_OK(lkv_cache_decode_batch(c, 0, &io));
        TU_OK(lkv_runtime_get_counters(rt, &b));
        if (syncs)
            syncs[step] = b.syncs - a.syncs;
    }
    free(prompt_k);
    free(prompt_v);
    free(q);
    free(k);
    free(v);
    lkv_cache_destroy(c);
}

/* The q, k and v rows of 64 sequences (196 KiB) are staged like a small
 * write, and the arena is rewound when the step reads its output back: every
 * step, an evicting one included, waits for the queue exactly once (that
 * read), and computes what the cpu oracle computes. */
Test(opencl_decode, a_host_batch_step_of_64_sequences_waits_once)
{
    fresh_cache();
    lkv_runtime *rt = opencl_or_skip();
    size_t n = (size_t)HB_SEQS * 8 * 64;
    float *cl = malloc(sizeof(float) * n), *cpu = malloc(sizeof(float) * n);
    int64_t syncs[HB_STEPS];
    host_batch_run(rt, cl, syncs);
    lkv_runtime_close(rt);
    host_batch_run(tu_runtime(), cpu, NULL);
    for (int s = 0; s < HB_STEPS; s++)
        cr_assert_eq(syncs[s], 1, "step %d waited %lld times for the queue", s,
                     (long long)syncs[s]);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(cl[i], cpu[i], 1e-4f * fmaxf(1.0f, fabsf(cpu[i])),
                           "output %zu of the last step: %g on opencl, %g on cpu", i, cl[i], cpu[i]);
    free(cl);
    free(cpu);
}
