/* The HIP backend where there is no AMD GPU: the embedded offload bundle
 * (its targets, each an AMDGPU ELF for its processor, byte for byte what
 * clang-offload-bundler extracts), the code-object picker, malformed
 * bundles, a missing runtime, and stand-in runtimes (tests/hip/fake_hip.c)
 * for no device, a device without code and without hiprtc, a device whose
 * module must be exactly its code object from the bundle, hiprtc inside the
 * ROCm 5 runtime, and a failure at each step leaving nothing allocated.
 * The current device is per thread: every entry selects the device and
 * puts the caller's back, from whichever thread calls it. The shared loader
 * (host/host_library.h) searches and reports what it tried. Where a real
 * hiprtc is installed, the embedded kernel source must compile with it.
 *
 * Each Criterion test runs in its own process, so the environment set here
 * (LAZYKV_HIP_LIBRARY, FAKE_HIP_*) never leaks into another test. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hip/amdgpu_elf.h"
#include "hip/hip_internal.h"
#include "host/host_library.h"
#include "registry.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#ifndef LKV_TEST_HIP_ARCHS
#error "tests/CMakeLists.txt passes LAZYKV_HIP_TARGETS as LKV_TEST_HIP_ARCHS"
#endif

static const lkv_hip_code_list *embedded(void)
{
    static lkv_hip_code_list b;
    TU_OK(lkv_hip_bundle_parse(lkv_hip_bundle, lkv_hip_bundle_size, &b));
    return &b;
}

static const lkv_hip_code *entry_for(const lkv_hip_code_list *b, const char *target)
{
    for (int i = 0; i < b->count; i++)
        if (strcmp(b->code[i].target, target) == 0)
            return &b->code[i];
    return NULL;
}

/* ---- (a) the embedded bundle ---- */

Test(hip_bundle, carries_exactly_the_configured_targets)
{
    const lkv_hip_code_list *b = embedded();
    char want[256];
    snprintf(want, sizeof want, "%s", LKV_TEST_HIP_ARCHS);
    int n = 0;
    for (char *t = strtok(want, " "); t; t = strtok(NULL, " "), n++) {
        int found = 0;
        for (int i = 0; i < b->count; i++)
            found += strcmp(b->code[i].target, t) == 0;
        cr_assert_eq(found, 1, "target %s appears %d times in the bundle", t, found);
    }
    cr_assert_eq(b->count, n, "the bundle has %d code objects, %d were configured", b->count, n);
    char list[256];
    lkv_hip_bundle_targets(b, list, sizeof list);
    if (!strcmp(LKV_TEST_HIP_ARCHS, "gfx906 gfx908 gfx90a gfx940 gfx1030"))
        cr_assert_str_eq(list, "gfx906 gfx908 gfx90a gfx940 gfx1030");
}

Test(hip_bundle, every_entry_is_an_amdgpu_elf_for_its_processor)
{
    const lkv_hip_code_list *b = embedded();
    for (int i = 0; i < b->count; i++) {
        const lkv_hip_code *c = &b->code[i];
        const unsigned char *p = c->data;
        cr_assert(c->size > 64 && !memcmp(p, "\x7f" "ELF", 4), "%s is not an ELF", c->target);
        cr_assert_eq(p[4], 2, "%s: not a 64-bit ELF", c->target);
        cr_assert_eq(rd(p + 18, 2), EM_AMDGPU, "%s: e_machine %u", c->target,
                     (unsigned)rd(p + 18, 2));
        unsigned want = mach_of(c->target);
        cr_assert_neq(want, 0, "add %s's EF_AMDGPU_MACH to this test's table", c->target);
        cr_assert_eq(rd(p + 0x30, 4) & 0xff, want, "%s: e_flags 0x%x", c->target,
                     (unsigned)rd(p + 0x30, 4));
        /* clang ends a code object with its section header table: the
         * entry's size from the bundle header must be exactly that */
        uint64_t end = rd(p + 0x28, 8) + rd(p + 0x3a, 2) * rd(p + 0x3c, 2);
        cr_assert_eq(end, c->size, "%s: the ELF ends at %llu, the entry at %zu", c->target,
                     (unsigned long long)end, c->size);
    }
}

static unsigned char *read_whole(const char *path, size_t *out_size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    size_t size = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
            fread(buf, 1, (size_t)n, f) == (size_t)n)
            size = (size_t)n;
    }
    fclose(f);
    if (!size) {
        free(buf);
        return NULL;
    }
    *out_size = size;
    return buf;
}

Test(hip_bundle, entries_are_what_clang_offload_bundler_extracts)
{
    const char *bundler = getenv("LKV_OFFLOAD_BUNDLER");
    const char *file = getenv("LKV_HIP_BUNDLE_FILE");
    if (!bundler || !*bundler)
        cr_skip_test("clang-offload-bundler was not found at configure time");
    cr_assert(file && *file, "LKV_HIP_BUNDLE_FILE is not set (run through ctest)");
    size_t size = 0;
    unsigned char *whole = read_whole(file, &size);
    cr_assert_not_null(whole, "cannot read %s", file);
    cr_assert(size == lkv_hip_bundle_size && !memcmp(whole, lkv_hip_bundle, size),
              "the embedded bundle differs from %s", file);
    free(whole);
    const lkv_hip_code_list *b = embedded();
    for (int i = 0; i < b->count; i++) {
        const lkv_hip_code *c = &b->code[i];
        char out[128], cmd[1024];
        snprintf(out, sizeof out, "test_hip_unbundled_%s.o", c->target);
        snprintf(cmd, sizeof cmd,
                 "\"%s\" --unbundle --type=o --targets=hipv4-amdgcn-amd-amdhsa--%s "
                 "--input=\"%s\" --output=\"%s\"", bundler, c->target, file, out);
        cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
        unsigned char *x = read_whole(out, &size);
        cr_assert_not_null(x, "%s wrote nothing", cmd);
        cr_assert(size == c->size && !memcmp(x, c->data, size),
                  "%s: the parser's %zu bytes differ from the bundler's %zu", c->target, c->size,
                  size);
        free(x);
        remove(out);
    }
}

/* ---- (b) picking the code object for a device ---- */

/* A bundle in memory: the host entry, then one minimal AMDGPU ELF per id. */
static unsigned char *make_bundle(const char *const *ids, int n, size_t *out_size)
{
    size_t header = 24 + 8 + 24 + strlen("host-x86_64-unknown-linux");
    for (int i = 0; i < n; i++)
        header += 24 + strlen(ids[i]);
    size_t size = header + (size_t)n * 64;
    unsigned char *b = calloc(1, size);
    cr_assert_not_null(b);
    memcpy(b, "__CLANG_OFFLOAD_BUNDLE__", 24);
    size_t at = 24;
#define PUT64(v)                                                                            \
    do {                                                                                     \
        uint64_t v_ = (v);                                                                   \
        for (int k = 0; k < 8; k++)                                                          \
            b[at++] = (unsigned char)(v_ >> (8 * k));                                        \
    } while (0)
    PUT64((uint64_t)n + 1);
    PUT64(header);
    PUT64(0);
    PUT64(strlen("host-x86_64-unknown-linux"));
    memcpy(b + at, "host-x86_64-unknown-linux", strlen("host-x86_64-unknown-linux"));
    at += strlen("host-x86_64-unknown-linux");
    for (int i = 0; i < n; i++) {
        PUT64(header + (size_t)i * 64);
        PUT64(64);
        PUT64(strlen(ids[i]));
        memcpy(b + at, ids[i], strlen(ids[i]));
        at += strlen(ids[i]);
        unsigned char *elf = b + header + (size_t)i * 64;
        memcpy(elf, "\x7f" "ELF", 4);
        elf[4] = 2;
        elf[18] = EM_AMDGPU;
        elf[32] = (unsigned char)i; /* tells the entries apart */
    }
#undef PUT64
    *out_size = size;
    return b;
}

static const char *pick(const lkv_hip_code_list *b, const char *device)
{
    const lkv_hip_code *c = lkv_hip_bundle_pick(b, device);
    return c ? c->target : "(none)";
}

Test(hip_pick, a_device_with_features_gets_its_processor)
{
    const lkv_hip_code_list *b = embedded();
    cr_assert_str_eq(pick(b, "gfx90a:sramecc+:xnack-"), "gfx90a");
    cr_assert_str_eq(pick(b, "gfx906:sramecc-:xnack-"), "gfx906");
    cr_assert_str_eq(pick(b, "gfx1030"), "gfx1030");
}

Test(hip_pick, an_unknown_processor_gets_nothing)
{
    const lkv_hip_code_list *b = embedded();
    cr_assert_str_eq(pick(b, "gfx1100"), "(none)");
    cr_assert_str_eq(pick(b, "gfx90"), "(none)"); /* a prefix is not the processor */
    cr_assert_str_eq(pick(b, "gfx90ab"), "(none)");
    cr_assert_str_eq(pick(b, ""), "(none)");
}

Test(hip_pick, an_entry_with_a_feature_needs_the_device_to_have_it)
{
    const char *ids[] = {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"};
    size_t size;
    unsigned char *raw = make_bundle(ids, 1, &size);
    lkv_hip_code_list b;
    TU_OK(lkv_hip_bundle_parse(raw, size, &b));
    cr_assert_str_eq(pick(&b, "gfx90a:sramecc+:xnack-"), "(none)");
    cr_assert_str_eq(pick(&b, "gfx90a"), "(none)"); /* a device that reports no xnack */
    cr_assert_str_eq(pick(&b, "gfx90a:sramecc+:xnack+"), "gfx90a:xnack+");
    free(raw);
}

Test(hip_pick, the_closest_fit_wins_over_a_generic_entry)
{
    const char *ids[] = {"hipv4-amdgcn-amd-amdhsa--gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
                         "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"};
    size_t size;
    unsigned char *raw = make_bundle(ids, 3, &size);
    lkv_hip_code_list b;
    TU_OK(lkv_hip_bundle_parse(raw, size, &b));
    cr_assert_str_eq(pick(&b, "gfx90a:sramecc+:xnack-"), "gfx90a:sramecc+:xnack-");
    cr_assert_str_eq(pick(&b, "gfx90a:sramecc-:xnack-"), "gfx90a:xnack-");
    cr_assert_str_eq(pick(&b, "gfx90a:sramecc-:xnack+"), "gfx90a");
    cr_assert_eq(lkv_hip_target_match("gfx90a:xnack-", "gfx90a:sramecc+:xnack-"), 1);
    cr_assert_eq(lkv_hip_target_match("gfx90a:xnack+", "gfx90a:sramecc+:xnack-"), -1);
    free(raw);
}

Test(hip_pick, the_older_hip_entry_naming_is_understood)
{
    const char *ids[] = {"hip-amdgcn-amd-amdhsa-gfx906"};
    size_t size;
    unsigned char *raw = make_bundle(ids, 1, &size);
    lkv_hip_code_list b;
    TU_OK(lkv_hip_bundle_parse(raw, size, &b));
    cr_assert_eq(b.count, 1);
    cr_assert_str_eq(pick(&b, "gfx906:sramecc-:xnack-"), "gfx906");
    free(raw);
}

/* ---- (c) malformed bundles ---- */

/* Parses an exact-size heap copy, so any read past the end is an ASan
 * error, and expects a rejection whose message holds `needle`. */
static void expect_rejected(const unsigned char *data, size_t size, const char *needle)
{
    unsigned char *copy = malloc(size ? size : 1);
    cr_assert_not_null(copy);
    if (size)
        memcpy(copy, data, size);
    lkv_hip_code_list b;
    lkv_clear_error();
    lkv_status st = lkv_hip_bundle_parse(copy, size, &b);
    free(copy);
    cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%zu bytes: %s (%s)", size, lkv_status_name(st),
                 lkv_last_error());
    cr_assert_eq(b.count, 0);
    if (needle)
        cr_assert(strstr(lkv_last_error(), needle), "%zu bytes: message '%s' lacks '%s'", size,
                  lkv_last_error(), needle);
    else
        cr_assert(lkv_last_error()[0], "%zu bytes: rejected without a message", size);
}

Test(hip_malformed, every_truncation_is_rejected)
{
    /* the last code object ends where the bundle does */
    const lkv_hip_code_list *b = embedded();
    size_t end = 0;
    for (int i = 0; i < b->count; i++) {
        size_t e = (size_t)(b->code[i].data - lkv_hip_bundle) + b->code[i].size;
        end = e > end ? e : end;
    }
    cr_assert_eq(end, lkv_hip_bundle_size);
    expect_rejected(lkv_hip_bundle, 0, "truncated");
    expect_rejected(lkv_hip_bundle, 31, "truncated");
    expect_rejected(lkv_hip_bundle, lkv_hip_bundle_size - 1, "past the end");
    for (size_t cut = 32; cut < lkv_hip_bundle_size; cut += cut < 4096 ? 7 : 4099)
        expect_rejected(lkv_hip_bundle, cut, NULL);
}

Test(hip_malformed, a_bad_magic_is_rejected)
{
    size_t size = lkv_hip_bundle_size < 4096 ? lkv_hip_bundle_size : 4096;
    unsigned char *x = malloc(size);
    cr_assert_not_null(x);
    memcpy(x, lkv_hip_bundle, size);
    x[3] ^= 0x20;
    expect_rejected(x, size, "not a clang offload bundle");
    memcpy(x, "CCOB", 4);
    expect_rejected(x, size, "compressed");
    expect_rejected((const unsigned char *)"\x7f" "ELF and then some more bytes of text here", 40,
                    "not a clang offload bundle");
    free(x);
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

Test(hip_malformed, offsets_and_lengths_past_the_end_are_rejected)
{
    const char *ids[] = {"hipv4-amdgcn-amd-amdhsa--gfx90a"};
    size_t size;
    unsigned char *raw = make_bundle(ids, 1, &size);
    /* the gfx90a entry header follows the host entry's */
    size_t host = 24 + 8 + 24 + strlen("host-x86_64-unknown-linux");
    unsigned char *x = malloc(size);
    cr_assert_not_null(x);

    memcpy(x, raw, size);
    put64(x + host, size + 10); /* offset */
    expect_rejected(x, size, "past the end");

    memcpy(x, raw, size);
    put64(x + host + 8, 65); /* size one byte too many */
    expect_rejected(x, size, "past the end");

    memcpy(x, raw, size);
    put64(x + host, UINT64_MAX - 8); /* offset + size wraps around */
    expect_rejected(x, size, "past the end");

    memcpy(x, raw, size);
    put64(x + host + 16, 1u << 20); /* id length */
    expect_rejected(x, size, "id length");

    memcpy(x, raw, size);
    put64(x + 24, (uint64_t)1 << 40); /* entry count */
    expect_rejected(x, size, "entries");

    memcpy(x, raw, size);
    put64(x + 24, 0);
    expect_rejected(x, size, "entries");

    memcpy(x, raw, size);
    x[size - 64] = 0; /* the code object's ELF magic */
    expect_rejected(x, size, "not an AMDGPU ELF");

    memcpy(x, raw, size);
    put64(x + 24, 1); /* only the host entry */
    expect_rejected(x, size, "no AMDGPU code object");
    free(x);
    free(raw);
}

Test(hip_malformed, random_header_damage_never_reads_out_of_bounds)
{
    size_t size = lkv_hip_bundle_size;
    unsigned char *x = malloc(size);
    cr_assert_not_null(x);
    uint64_t seed = 12345;
    for (int round = 0; round < 2000; round++) {
        memcpy(x, lkv_hip_bundle, size);
        for (int k = 0; k < 4; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            x[(seed >> 33) % 400] ^= (unsigned char)(1u << ((seed >> 20) & 7));
        }
        lkv_hip_code_list b;
        lkv_status st = lkv_hip_bundle_parse(x, size, &b);
        cr_assert(st == LKV_OK || st == LKV_INVALID_ARGUMENT, "round %d: %s", round,
                  lkv_status_name(st));
        for (int i = 0; st == LKV_OK && i < b.count; i++)
            cr_assert(b.code[i].data >= x && b.code[i].data + b.code[i].size <= x + size);
    }
    free(x);
}

/* ---- (d) no runtime ---- */

static int hip_reports(lkv_device_report *reps, int cap, const lkv_device_report **out_first)
{
    int n = 0, count = 0;
    TU_OK(lkv_list_devices(reps, cap, &n));
    *out_first = NULL;
    for (int i = 0; i < n && i < cap; i++)
        if (!strcmp(reps[i].backend, "hip")) {
            if (!*out_first)
                *out_first = &reps[i];
            count++;
        }
    return count;
}

Test(hip_runtime, a_missing_runtime_is_one_unavailable_report_naming_it)
{
    setenv(LKV_HIP_LIBRARY_ENV, "/nonexistent/libamdhip64.so", 1);
    lkv_device_report reps[64];
    const lkv_device_report *r;
    cr_assert_eq(hip_reports(reps, 64, &r), 1);
    cr_assert_eq(r->available, 0);
    cr_assert_eq(r->device, -1);
    cr_assert(strstr(r->reason, "libamdhip64 not found") &&
              strstr(r->reason, "/nonexistent/libamdhip64.so") && strstr(r->reason, "ROCm"),
              "reason: %s", r->reason);
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open(0, &dev), LKV_UNAVAILABLE);
    cr_assert_null(dev);
    cr_assert(strstr(lkv_last_error(), "libamdhip64 not found"), "message: %s", lkv_last_error());
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("hip", &rt), LKV_UNAVAILABLE);
    cr_assert_null(rt);
}

Test(hip_runtime, a_library_that_is_not_hip_is_unavailable)
{
    setenv(LKV_HIP_LIBRARY_ENV, "libm.so.6", 1);
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open(0, &dev), LKV_UNAVAILABLE);
    cr_assert(strstr(lkv_last_error(), "libm.so.6 lacks hipInit"), "message: %s",
              lkv_last_error());
}

/* ---- (e) stand-in runtimes ---- */

typedef struct fake {
    void *handle;
    int (*live)(void);
    size_t (*loaded_size)(void);
    uint64_t (*loaded_hash)(void);
    unsigned (*loaded_mach)(void);
    const char *(*last_kernel)(void);
    void (*last_launch)(unsigned grid[3], unsigned *block);
    int (*count)(const char *what);
    int (*device_of)(const void *p);
    int (*set_device)(int device); /* the fake runtime's own hipSetDevice / hipGetDevice */
    int (*get_device)(int *device);
    void *last_stream_fn; /* fake_hip_last_stream, where a test wants it */
} fake;

#define HOOK_AS(f, field, symbol)                                                             \
    do {                                                                                      \
        void *sym_ = dlsym((f).handle, symbol);                                               \
        cr_assert_not_null(sym_, "the fake lacks " symbol);                                   \
        memcpy(&(f).field, &sym_, sizeof sym_);                                               \
    } while (0)
#define HOOK(f, name) HOOK_AS(f, name, "fake_hip_" #name)

/* Points the backend at the ROCm 5 or 6 stand-in, with no hiprtc outside
 * it, and a device of architecture `arch`. */
static fake use_fake(int rocm, const char *arch)
{
    const char *path = getenv(rocm == 5 ? "LKV_FAKE_HIP5" : "LKV_FAKE_HIP6");
    cr_assert(path && *path, "LKV_FAKE_HIP%d is not set (run through ctest)", rocm);
    setenv(LKV_HIP_LIBRARY_ENV, path, 1);
    setenv(LKV_HIPRTC_LIBRARY_ENV, "/nonexistent/libhiprtc.so", 1);
    setenv("FAKE_HIP_ARCH", arch, 1);
    fake f;
    f.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(f.handle, "%s: %s", path, dlerror());
    HOOK(f, live);
    HOOK(f, loaded_size);
    HOOK(f, loaded_hash);
    HOOK(f, loaded_mach);
    HOOK(f, last_kernel);
    HOOK(f, last_launch);
    HOOK(f, count);
    HOOK(f, device_of);
    HOOK_AS(f, set_device, "hipSetDevice");
    HOOK_AS(f, get_device, "hipGetDevice");
    return f;
}

/* Nothing the backend or the stand-in allocated is left: the stand-in's own
 * count of device objects, and in a sanitizer build a leak check now (a
 * leak reported only at exit would not fail the test). */
static void assert_nothing_left(const fake *f)
{
    cr_assert_eq(f->live(), 0, "%d device objects left", f->live());
#if defined(__SANITIZE_ADDRESS__)
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)");
#endif
}

static lkv_device *open_ok(void)
{
    lkv_device *dev = NULL;
    TU_OK(lkv_backend_hip.open(0, &dev));
    cr_assert_not_null(dev);
    return dev;
}

Test(hip_fake, no_device_is_unavailable)
{
    fake f = use_fake(6, "gfx90a");
    setenv("FAKE_HIP_DEVICES", "0", 1);
    lkv_device_report reps[64];
    const lkv_device_report *r;
    cr_assert_eq(hip_reports(reps, 64, &r), 1);
    cr_assert_eq(r->available, 0);
    cr_assert(strstr(r->reason, "no HIP device"), "reason: %s", r->reason);
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open(0, &dev), LKV_UNAVAILABLE);
    cr_assert(strstr(lkv_last_error(), "no HIP device"), "message: %s", lkv_last_error());
    assert_nothing_left(&f);
}

Test(hip_fake, a_device_without_code_or_hiprtc_is_incompatible_naming_both)
{
    fake f = use_fake(6, "gfx1100");
    const char *want = "device gfx1100 has no embedded code object (this lazykv carries "
                       LKV_TEST_HIP_ARCHS ") and hiprtc was not found: install hiprtc (ROCm)";
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open(0, &dev), LKV_INCOMPATIBLE);
    cr_assert_null(dev);
    cr_assert(strstr(lkv_last_error(), want), "message: %s", lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "/nonexistent/libhiprtc.so"), "message: %s",
              lkv_last_error());
    cr_assert_eq(f.count("module_load"), 0, "a module was loaded for a device without code");
    lkv_device_report reps[64];
    const lkv_device_report *r;
    cr_assert_eq(hip_reports(reps, 64, &r), 1);
    cr_assert_eq(r->available, 0);
    cr_assert_eq(r->device, 0);
    cr_assert(strstr(r->reason, "device gfx1100 has no embedded code object"), "reason: %s",
              r->reason);
    assert_nothing_left(&f);
}

Test(hip_fake, a_gfx90a_device_loads_exactly_its_code_object)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    const lkv_hip_code *c = entry_for(embedded(), "gfx90a");
    cr_assert_not_null(c, "no gfx90a in the bundle");
    lkv_device *dev = open_ok();
    cr_assert_eq(f.count("module_load"), 1);
    cr_assert_eq(f.loaded_size(), c->size, "loaded %zu bytes, the gfx90a entry has %zu",
                 f.loaded_size(), c->size);
    cr_assert_eq(f.loaded_hash(), fnv1a(c->data, c->size));
    cr_assert_eq(f.loaded_mach(), 0x3f);
    cr_assert_eq(dev->lim.warp, 64);
    cr_assert_eq(dev->lim.multiprocessors, 104);
    cr_assert_gt(f.count("r0600"), 0);
    cr_assert_eq(f.count("props"), 0, "the ROCm 5 layout was read from a ROCm 6 runtime");
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

Test(hip_fake, the_rocm5_layout_is_read_where_there_is_no_r0600)
{
    fake f = use_fake(5, "gfx1030");
    lkv_device *dev = open_ok();
    cr_assert_gt(f.count("props"), 0);
    cr_assert_eq(f.loaded_mach(), 0x36);
    cr_assert_eq(dev->lim.warp, 32, "RDNA runs 32-wide wavefronts");
    cr_assert_eq(f.count("rtc_compile"), 0, "hiprtc ran although gfx1030 is embedded");
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

Test(hip_fake, a_failed_r0600_read_falls_back_to_the_plain_call)
{
    fake f = use_fake(6, "gfx908:sramecc+:xnack-");
    setenv("FAKE_HIP_FAIL", "hipGetDevicePropertiesR0600", 1);
    lkv_device *dev = open_ok();
    cr_assert_gt(f.count("props"), 0);
    cr_assert_eq(f.loaded_mach(), 0x30);
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

Test(hip_fake, probe_reports_the_device_and_how_it_gets_code)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    lkv_device_report reps[64];
    const lkv_device_report *r;
    cr_assert_eq(hip_reports(reps, 64, &r), 1);
    cr_assert_eq(r->available, 1, "reason: %s", r->reason);
    cr_assert_eq(r->device, 0);
    cr_assert_str_eq(r->name, "Fake AMD gfx90a");
    cr_assert_eq(r->memory_bytes, (uint64_t)64 << 30);
    cr_assert_str_eq(r->uuid, "10111213-1415-1617-1819-1a1b1c1d1e1f");
    cr_assert(strstr(r->driver, "HIP runtime 6.2.41133"), "driver: %s", r->driver);
    cr_assert(strstr(r->reason, "gfx90a:sramecc+:xnack-") && strstr(r->reason, "wave64") &&
              strstr(r->reason, "embedded gfx90a code object"), "reason: %s", r->reason);
    assert_nothing_left(&f);
}

Test(hip_fake, hiprtc_inside_the_rocm5_runtime_builds_code_for_other_targets)
{
    fake f = use_fake(5, "gfx1100");
    lkv_device_report reps[64];
    const lkv_device_report *r;
    cr_assert_eq(hip_reports(reps, 64, &r), 1);
    cr_assert_eq(r->available, 1, "reason: %s", r->reason);
    cr_assert(strstr(r->reason, "hiprtc"), "reason: %s", r->reason);
    lkv_device *dev = open_ok();
    cr_assert_eq(f.count("rtc_compile"), 1);
    cr_assert_eq(f.loaded_mach(), 0x41);
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

Test(hip_fake, a_hiprtc_compile_error_is_incompatible_with_the_log)
{
    fake f = use_fake(5, "gfx1100");
    setenv("FAKE_HIPRTC_FAIL", "1", 1);
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open(0, &dev), LKV_INCOMPATIBLE);
    cr_assert(strstr(lkv_last_error(), "gfx1100") &&
              strstr(lkv_last_error(), "lazykv.hip:1:1: error: fake compile failure"),
              "message: %s", lkv_last_error());
    assert_nothing_left(&f);
}

Test(hip_fake, a_failure_at_any_step_of_open_leaves_nothing_allocated)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    const char *steps[] = {"hipInit", "hipDeviceGetName", "hipDeviceGetAttribute",
                           "hipSetDevice", "hipModuleLoadData", "hipModuleGetFunction"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        setenv("FAKE_HIP_FAIL", steps[i], 1);
        lkv_device *dev = NULL;
        lkv_status st = lkv_backend_hip.open(0, &dev);
        cr_assert_neq(st, LKV_OK, "open succeeded although %s failed", steps[i]);
        cr_assert_null(dev);
        cr_assert(strstr(lkv_last_error(), steps[i]), "%s: message: %s", steps[i],
                  lkv_last_error());
        cr_assert_eq(f.live(), 0, "%s: %d objects left", steps[i], f.live());
#if defined(__SANITIZE_ADDRESS__)
        cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "%s: leaks (above)", steps[i]);
#endif
    }
    unsetenv("FAKE_HIP_FAIL");
    lkv_backend_hip.close(open_ok());
    assert_nothing_left(&f);
}

Test(hip_fake, buffers_round_trip_through_the_driver_table)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    lkv_device *dev = open_ok();
    const lkv_backend_ops *ops = &lkv_backend_hip;
    lkv_buffer *a = NULL, *b = NULL;
    TU_OK(ops->alloc(dev, 256, &a));
    TU_OK(ops->alloc(dev, 256, &b));
    unsigned char in[256], out[256];
    memset(out, 0xee, sizeof out);
    TU_OK(ops->read(dev, a, 0, out, sizeof out));
    for (size_t i = 0; i < sizeof out; i++)
        cr_assert_eq(out[i], 0, "a new buffer is not zero at byte %zu", i);
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    TU_OK(ops->write(dev, a, 0, in, sizeof in));
    TU_OK(ops->copy(dev, b, 16, a, 0, 128));
    TU_OK(ops->sync(dev));
    TU_OK(ops->read(dev, b, 16, out, 128));
    cr_assert_arr_eq(out, in, 128);
    ops->free(dev, a);
    ops->free(dev, b);
    ops->close(dev);
    assert_nothing_left(&f);
}

Test(hip_fake, a_launch_runs_the_named_kernel_with_its_grid)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    lkv_device *dev = open_ok();
    int32_t arg = 5;
    void *args[] = {&arg};
    TU_OK(dev->drv->enter(dev->api));
    for (int k = 0; k < LKV_GPU_KERNEL_COUNT; k++) {
        TU_OK(lkv_gpu_launch_kernel(dev, (lkv_gpu_kernel_id)k, 3, 2, 1, 128, args));
        cr_assert_str_eq(f.last_kernel(), lkv_gpu_kernel_names[k]);
        unsigned grid[3], block;
        f.last_launch(grid, &block);
        cr_assert(grid[0] == 3 && grid[1] == 2 && grid[2] == 1 && block == 128);
    }
    dev->drv->leave(dev->api);
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

/* A failed call reads as on CUDA: "<backend>: <call>: <error name> (<text>)". */
Test(hip_fake, a_failed_call_names_the_call_and_the_error)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    lkv_device *dev = open_ok();
    setenv("FAKE_HIP_FAIL", "hipMalloc", 1);
    lkv_buffer *b = NULL;
    lkv_status st = lkv_backend_hip.alloc(dev, 1000, &b);
    cr_assert_eq(st, LKV_OUT_OF_MEMORY, "%s: %s", lkv_status_name(st), lkv_last_error());
    cr_assert_null(b);
    cr_assert(strstr(lkv_last_error(), "hip: hipMalloc(1008 bytes): hipErrorOutOfMemory (fake "
                                       "failure)"), "message: %s", lkv_last_error());
    unsetenv("FAKE_HIP_FAIL");
    lkv_backend_hip.close(dev);
    assert_nothing_left(&f);
}

/* ---- the current device, per thread ---- */

static void expect_current(const fake *f, int want, const char *after)
{
    int d = -1;
    cr_assert_eq(f->get_device(&d), 0);
    cr_assert_eq(d, want, "after %s the thread's device is %d, it was %d", after, d, want);
}

/* A select on one row: a launch through the ops table. */
static lkv_status select_one_row(lkv_device *dev, const lkv_buffer *scores, lkv_buffer *kept)
{
    const int32_t rows[1] = {0}, row_n[1] = {16}, row_k[1] = {4};
    lkv_select_args a = {.capacity = 16, .n_rows = 1, .rows = rows, .row_n = row_n,
                         .row_k = row_k, .scores = scores, .kept = kept};
    return lkv_backend_hip.select(dev, &a);
}

/* open creates a stream of its own and launches on it; open_external
 * launches on the engine's and leaves it alone at close. */
Test(hip_fake, launches_go_to_the_devices_stream_own_or_borrowed)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    const void *(*last_stream)(void);
    HOOK_AS(f, last_stream_fn, "fake_hip_last_stream");
    memcpy(&last_stream, &f.last_stream_fn, sizeof last_stream);
    static int engine_stream;
    lkv_external_device ext = {.backend = "hip", .device = 0, .stream = &engine_stream};
    for (int borrowed = 0; borrowed < 2; borrowed++) {
        lkv_device *dev = NULL;
        if (borrowed)
            TU_OK(lkv_backend_hip.open_external(&ext, &dev));
        else
            TU_OK(lkv_backend_hip.open(0, &dev));
        lkv_buffer *a = NULL, *kept = NULL;
        TU_OK(lkv_backend_hip.alloc(dev, 64, &a));
        TU_OK(lkv_backend_hip.alloc(dev, 64, &kept));
        TU_OK(select_one_row(dev, a, kept));
        if (borrowed)
            cr_assert_eq(last_stream(), (const void *)&engine_stream);
        else
            cr_assert(last_stream() && last_stream() != (const void *)&engine_stream,
                      "open launched on the null stream");
        lkv_backend_hip.free(dev, a);
        lkv_backend_hip.free(dev, kept);
        lkv_backend_hip.close(dev);
        assert_nothing_left(&f);
    }
    lkv_external_device bad = {.backend = "hip", .context = &ext};
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_hip.open_external(&bad, &dev), LKV_INVALID_ARGUMENT);
}

/* A lane is a stream of its own on the device: its launches go there, it
 * waits for the device's mark with hipStreamWaitEvent, and closing it
 * leaves the device working and, with the device, nothing behind. On an
 * engine's stream there is no lane. */
Test(hip_fake, a_lane_launches_on_its_own_stream_and_waits_for_marks_on_the_device)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    const void *(*last_stream)(void);
    HOOK_AS(f, last_stream_fn, "fake_hip_last_stream");
    memcpy(&last_stream, &f.last_stream_fn, sizeof last_stream);
    const lkv_backend_ops *ops = &lkv_backend_hip;
    lkv_device *dev = open_ok(), *lane = NULL;
    TU_OK(ops->lane_open(dev, &lane));
    lkv_buffer *scores = NULL, *kept = NULL;
    TU_OK(ops->alloc(dev, 64, &scores));
    TU_OK(ops->alloc(lane, 64, &kept));
    TU_OK(select_one_row(dev, scores, kept));
    const void *main_stream = last_stream();
    lkv_mark *m = NULL;
    TU_OK(ops->mark(dev, &m));
    TU_OK(ops->wait_mark(lane, m));
    cr_assert_eq(f.count("stream_wait"), 1);
    TU_OK(select_one_row(lane, scores, kept));
    cr_assert(last_stream() && last_stream() != main_stream, "the lane launched on %s",
              last_stream() ? "the device's stream" : "the null stream");
    ops->mark_free(dev, m);
    setenv("FAKE_HIP_FAIL", "hipStreamWaitEvent", 1);
    TU_OK(ops->mark(lane, &m));
    cr_assert_eq(ops->wait_mark(dev, m), LKV_DEVICE_ERROR);
    unsetenv("FAKE_HIP_FAIL");
    cr_assert(strstr(lkv_last_error(), "hip: hipStreamWaitEvent"), "%s", lkv_last_error());
    ops->mark_free(lane, m);
    ops->close(lane);
    TU_OK(select_one_row(dev, scores, kept));
    cr_assert_eq(last_stream(), main_stream);
    ops->free(dev, scores);
    ops->free(dev, kept);
    ops->close(dev);
    assert_nothing_left(&f);
    static int engine_stream;
    lkv_external_device ext = {.backend = "hip", .device = 0, .stream = &engine_stream};
    TU_OK(ops->open_external(&ext, &dev));
    lane = NULL;
    cr_assert_eq(ops->lane_open(dev, &lane), LKV_UNSUPPORTED);
    cr_assert(strstr(lkv_last_error(), "engine's stream"), "%s", lkv_last_error());
    cr_assert_null(lane);
    ops->close(dev);
    assert_nothing_left(&f);
}

/* Device 1 opened and used from a thread whose device is 0: the work goes
 * to device 1, and the thread is back on 0 after every entry. */
Test(hip_fake, every_entry_puts_back_the_callers_device)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    setenv("FAKE_HIP_DEVICES", "2", 1);
    cr_assert_eq(f.set_device(0), 0);
    lkv_device *dev = NULL;
    TU_OK(lkv_backend_hip.open(1, &dev));
    expect_current(&f, 0, "open");
    const lkv_backend_ops *ops = &lkv_backend_hip;
    lkv_buffer *a = NULL, *kept = NULL;
    TU_OK(ops->alloc(dev, 64, &a));
    expect_current(&f, 0, "alloc");
    cr_assert_eq(f.device_of((const void *)(uintptr_t)a->ptr), 1, "allocated on the wrong device");
    TU_OK(ops->alloc(dev, 64, &kept));
    unsigned char in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = (unsigned char)(200 - i);
    TU_OK(ops->write(dev, a, 0, in, sizeof in));
    expect_current(&f, 0, "write");
    TU_OK(ops->read(dev, a, 0, out, sizeof out));
    expect_current(&f, 0, "read");
    cr_assert_arr_eq(out, in, sizeof in);
    TU_OK(select_one_row(dev, a, kept));
    expect_current(&f, 0, "select");
    cr_assert_eq(f.count("launch"), 1);
    TU_OK(ops->sync(dev));
    expect_current(&f, 0, "sync");
    ops->free(dev, a);
    ops->free(dev, kept);
    expect_current(&f, 0, "free");
    ops->close(dev);
    expect_current(&f, 0, "close");
    cr_assert_eq(f.count("wrong_device"), 0);
    cr_assert_eq(f.count("bad_address"), 0);
    assert_nothing_left(&f);
}

typedef struct thread_job {
    lkv_device *dev;
    const fake *f;
    lkv_status alloc, write, read, select, without_enter;
    int device_after; /* the thread's device after the ops */
    unsigned char out[64];
    char message[512];
} thread_job;

/* On a thread that never chose a device (so HIP's default, 0). */
static void *use_from_another_thread(void *arg)
{
    thread_job *j = arg;
    const lkv_backend_ops *ops = &lkv_backend_hip;
    lkv_buffer *a = NULL, *kept = NULL;
    unsigned char in[64];
    for (int i = 0; i < 64; i++)
        in[i] = (unsigned char)(3 * i + 1);
    j->alloc = ops->alloc(j->dev, sizeof in, &a);
    if (j->alloc == LKV_OK)
        j->alloc = ops->alloc(j->dev, 64, &kept);
    if (j->alloc == LKV_OK) {
        j->write = ops->write(j->dev, a, 0, in, sizeof in);
        j->read = ops->read(j->dev, a, 0, j->out, sizeof j->out);
        j->select = select_one_row(j->dev, a, kept);
    }
    snprintf(j->message, sizeof j->message, "%s", lkv_last_error());
    ops->free(j->dev, a);
    ops->free(j->dev, kept);
    j->device_after = -1;
    j->f->get_device(&j->device_after);
    return NULL;
}

Test(hip_fake, a_device_opened_on_one_thread_works_from_another)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    setenv("FAKE_HIP_DEVICES", "2", 1);
    thread_job job;
    memset(&job, 0, sizeof job);
    job.f = &f;
    TU_OK(lkv_backend_hip.open(1, &job.dev));
    tu_run_on_a_thread(use_from_another_thread, &job);
    cr_assert_eq(job.alloc, LKV_OK, "alloc: %s", job.message);
    cr_assert_eq(job.write, LKV_OK, "write: %s", job.message);
    cr_assert_eq(job.read, LKV_OK, "read: %s", job.message);
    cr_assert_eq(job.select, LKV_OK, "select: %s", job.message);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(job.out[i], (unsigned char)(3 * i + 1), "byte %d read back wrong", i);
    cr_assert_eq(job.device_after, 0, "the thread was left on device %d", job.device_after);
    cr_assert_eq(f.count("launch"), 1);
    cr_assert_eq(f.count("wrong_device"), 0);
    lkv_backend_hip.close(job.dev);
    assert_nothing_left(&f);
}

static void *read_without_entering(void *arg)
{
    thread_job *j = arg;
    lkv_buffer *b = j->dev->lists; /* any buffer of the device: the row lists of the select */
    j->without_enter = j->dev->drv->dtoh(j->dev->api, j->out, b->ptr, 16);
    snprintf(j->message, sizeof j->message, "%s", lkv_last_error());
    return NULL;
}

/* The stand-in holds the backend to that: device 1's memory read from a
 * thread on device 0 without selecting device 1 fails. */
Test(hip_fake, a_call_on_a_thread_without_the_device_fails)
{
    fake f = use_fake(6, "gfx90a:sramecc+:xnack-");
    setenv("FAKE_HIP_DEVICES", "2", 1);
    thread_job job;
    memset(&job, 0, sizeof job);
    job.f = &f;
    TU_OK(lkv_backend_hip.open(1, &job.dev));
    lkv_buffer *a = NULL, *kept = NULL;
    TU_OK(lkv_backend_hip.alloc(job.dev, 64, &a));
    TU_OK(lkv_backend_hip.alloc(job.dev, 64, &kept));
    TU_OK(select_one_row(job.dev, a, kept)); /* leaves the row-list buffer */
    cr_assert_not_null(job.dev->lists);
    tu_run_on_a_thread(read_without_entering, &job);
    cr_assert_eq(job.without_enter, LKV_DEVICE_ERROR, "%s", job.message);
    cr_assert(strstr(job.message, "hip: hipMemcpyDtoHAsync(16 bytes): hipErrorInvalidDevice"), "%s",
              job.message);
    cr_assert_eq(f.count("wrong_device"), 1);
    lkv_backend_hip.free(job.dev, a);
    lkv_backend_hip.free(job.dev, kept);
    lkv_backend_hip.close(job.dev);
    assert_nothing_left(&f);
}

/* ---- the shared loader (host/host_library.h) ---- */

typedef struct scratch_dir {
    char dir[64], lib[96], a[160], b[160];
} scratch_dir;

/* A temporary folder with lib/liblkv_test_b.so, a link to the ROCm 6
 * stand-in (a library that loads). */
static void make_scratch(scratch_dir *d)
{
    const char *real = getenv("LKV_FAKE_HIP6");
    cr_assert(real && *real, "LKV_FAKE_HIP6 is not set (run through ctest)");
    snprintf(d->dir, sizeof d->dir, "/tmp/lazykv-dl-XXXXXX");
    cr_assert_not_null(mkdtemp(d->dir));
    snprintf(d->lib, sizeof d->lib, "%s/lib", d->dir);
    cr_assert_eq(mkdir(d->lib, 0700), 0);
    snprintf(d->a, sizeof d->a, "%s/liblkv_test_a.so", d->lib);
    snprintf(d->b, sizeof d->b, "%s/liblkv_test_b.so", d->lib);
    cr_assert_eq(symlink(real, d->b), 0);
    setenv("LKV_TEST_DIR", d->dir, 1);
    unsetenv("LKV_TEST_OVERRIDE");
}

static void remove_scratch(const scratch_dir *d)
{
    unlink(d->a);
    unlink(d->b);
    rmdir(d->lib);
    rmdir(d->dir);
}

static const char *const test_names[] = {"liblkv_test_a.so", "liblkv_test_b.so"};

static lkv_host_library_search test_search(void)
{
    lkv_host_library_search s = {.env = "LKV_TEST_OVERRIDE", .names = test_names, .count = 2,
                                 .dir_env = "LKV_TEST_DIR"};
    return s;
}

Test(host_library, names_are_tried_on_the_loader_path_then_in_the_folder)
{
    scratch_dir d;
    make_scratch(&d);
    lkv_host_library_search s = test_search();
    char path[256], tried[512] = "", want[512];
    void *h = lkv_host_library_find(&s, path, sizeof path, tried, sizeof tried);
    cr_assert_not_null(h, "nothing found; tried %s", tried);
    cr_assert_str_eq(path, d.b);
    cr_assert_not_null(dlsym(h, "hipInit"), "not the stand-in");
    snprintf(want, sizeof want, "liblkv_test_a.so, liblkv_test_b.so, %s", d.a);
    cr_assert_str_eq(tried, want);
    dlclose(h);
    remove_scratch(&d);
}

static int refuse(void *handle, void *ctx)
{
    (void)handle;
    ++*(int *)ctx;
    return 0;
}

Test(host_library, a_refused_library_is_closed_and_the_search_goes_on)
{
    scratch_dir d;
    make_scratch(&d);
    FILE *junk = fopen(d.a, "w"); /* exists, but is no library */
    cr_assert_not_null(junk);
    fputs("not an ELF file\n", junk);
    fclose(junk);
    int refused = 0;
    lkv_host_library_search s = test_search();
    s.accept = refuse;
    s.ctx = &refused;
    char path[256] = "untouched", tried[512] = "", want[512];
    cr_assert_null(lkv_host_library_find(&s, path, sizeof path, tried, sizeof tried));
    cr_assert_eq(refused, 1);
    cr_assert_str_eq(path, "untouched");
    /* the junk file says why it did not load; the refused one is named */
    snprintf(want, sizeof want, "liblkv_test_a.so, liblkv_test_b.so, %s (", d.a);
    cr_assert(strncmp(tried, want, strlen(want)) == 0, "tried: %s", tried);
    snprintf(want, sizeof want, "), %s", d.b);
    cr_assert(strlen(tried) > strlen(want) &&
              strcmp(tried + strlen(tried) - strlen(want), want) == 0, "tried: %s", tried);
    remove_scratch(&d);
}

Test(host_library, the_override_is_the_only_library_tried)
{
    scratch_dir d;
    make_scratch(&d);
    setenv("LKV_TEST_OVERRIDE", "/nonexistent/liblkv.so", 1);
    lkv_host_library_search s = test_search();
    char path[256], tried[512] = "earlier";
    cr_assert_null(lkv_host_library_find(&s, path, sizeof path, tried, sizeof tried));
    const char *want = "earlier, /nonexistent/liblkv.so from LKV_TEST_OVERRIDE: ";
    cr_assert(strncmp(tried, want, strlen(want)) == 0, "tried: %s", tried);
    cr_assert(!strstr(tried, "liblkv_test_"), "the search ran too: %s", tried);
    setenv("LKV_TEST_OVERRIDE", d.b, 1);
    void *h = lkv_host_library_find(&s, path, sizeof path, tried, sizeof tried);
    cr_assert_not_null(h);
    cr_assert_str_eq(path, d.b);
    dlclose(h);
    remove_scratch(&d);
}

/* ---- the embedded source and a real hiprtc, where one is installed ---- */

Test(hip_rtc, the_embedded_source_compiles_with_the_installed_hiprtc, .timeout = 300)
{
    unsetenv(LKV_HIPRTC_LIBRARY_ENV);
    lkv_hip_lib lib;
    memset(&lib, 0, sizeof lib);
    const char *names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};
    for (size_t i = 0; i < 3 && !lib.handle; i++) {
        lib.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        snprintf(lib.path, sizeof lib.path, "%s", names[i]);
    }
    if (!lib.handle) { /* libhiprtc alone may still be there */
        lib.handle = dlopen(NULL, RTLD_NOW);
        snprintf(lib.path, sizeof lib.path, "the test program");
    }
    lkv_hip_rtc rtc;
    if (lkv_hip_rtc_find(&lib, &rtc) != LKV_OK) {
        dlclose(lib.handle);
        cr_skip_test("no hiprtc here: %s", lkv_last_error());
    }
    void *code = NULL;
    size_t size = 0;
    /* gfx900: in every hiprtc since ROCm 5, and in no bundle lazykv builds */
    TU_OK(lkv_hip_rtc_compile(&rtc, (const char *)lkv_hip_source, "gfx900", &code, &size));
    const unsigned char *p = code;
    cr_assert(size > 64 && !memcmp(p, "\x7f" "ELF", 4) && rd(p + 18, 2) == EM_AMDGPU,
              "hiprtc gave no AMDGPU ELF");
    cr_assert_eq(rd(p + 0x30, 4) & 0xff, mach_of("gfx900"));
    for (int k = 0; k < LKV_GPU_KERNEL_COUNT; k++) {
        const char *name = lkv_gpu_kernel_names[k];
        size_t n = strlen(name) + 1, i = 0;
        while (i + n <= size && memcmp(p + i, name, n) != 0)
            i++;
        cr_assert(i + n <= size, "kernel %s is not in hiprtc's code object", name);
    }
    free(code);
    lkv_hip_rtc_close(&rtc);
    dlclose(lib.handle);
}
