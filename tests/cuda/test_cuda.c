/* The CUDA backend without a GPU: the embedded fatbin carries the GPU code
 * lazykv promises and its parser refuses damaged ones; with no driver, no
 * device, a device too old or a driver too old the backend says so in words
 * a user can act on, with the status the API promises; and, on fake drivers
 * (tests/cuda/fake_cuda.c, loaded through LAZYKV_CUDA_LIBRARY), open
 * resolves every kernel, drives memory and launches the way the driver
 * table says, and a failure at any step leaves nothing held. The real
 * kernels run in the GPU emulator's tests and on a real GPU in
 * scripts/device-check.sh. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "cuda/cuda_internal.h"
#include "cuda/fake_cuda.h"
#include "test_util.h"

#define DEFAULT_TARGETS "sm_75 sm_80 sm_86 sm_89 sm_90 compute_90"

/* ---- helpers ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The words of `text` sorted and joined by spaces, so two lists compare as sets. */
static void sorted_words(const char *text, char *out, size_t len)
{
    char copy[512], *words[64], *save = NULL;
    int n = 0;
    snprintf(copy, sizeof copy, "%s", text);
    for (char *w = strtok_r(copy, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    qsort(words, (size_t)n, sizeof words[0], cmp_str);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(out, words[i], len - strlen(out) - 1);
        if (i + 1 < n)
            strncat(out, " ", len - strlen(out) - 1);
    }
}

/* Whether `needle` occurs in the n bytes at p. */
static int contains(const unsigned char *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}

static lkv_fatbin_info embedded(void)
{
    lkv_fatbin_info fb;
    TU_OK(lkv_fatbin_parse(lkv_cuda_fatbin, lkv_cuda_fatbin_size, &fb));
    return fb;
}

static int default_targets(void) { return strcmp(LKV_CUDA_TARGETS_BUILT, DEFAULT_TARGETS) == 0; }

/* "CUDA 13.0" for the toolkit that built the kernels, or the version given */
static const char *cuda_text(int version)
{
    static char buf[4][24];
    static int next;
    char *b = buf[next++ % 4];
    lkv_cu_version_text(version, b, sizeof buf[0]);
    return b;
}

/* ---- the embedded fatbin ---- */

Test(fatbin, embedded_fatbin_carries_exactly_the_promised_targets)
{
    lkv_fatbin_info fb = embedded();
    char listed[512], got[512], want[512];
    lkv_fatbin_list(&fb, listed, sizeof listed);
    sorted_words(listed, got, sizeof got);
    sorted_words(LKV_CUDA_TARGETS_BUILT, want, sizeof want);
    cr_assert_str_eq(got, want, "the fatbin carries '%s', LAZYKV_CUDA_TARGETS promises '%s'",
                     listed, LKV_CUDA_TARGETS_BUILT);
    if (!default_targets())
        cr_skip_test("built with LAZYKV_CUDA_TARGETS='%s', not the default",
                     LKV_CUDA_TARGETS_BUILT);
    sorted_words(DEFAULT_TARGETS, want, sizeof want);
    cr_assert_str_eq(got, want, "the default build must carry %s (DESIGN.md)", DEFAULT_TARGETS);
}

/* The offsets the parser gives point at real payloads: a CUDA ELF
 * (e_machine 190, EM_CUDA) or PTX text, or a zstd frame when compressed. */
Test(fatbin, embedded_entries_point_at_cuda_elf_and_ptx)
{
    lkv_fatbin_info fb = embedded();
    static const unsigned char zstd[4] = {0x28, 0xb5, 0x2f, 0xfd};
    for (int i = 0; i < fb.count; i++) {
        const lkv_fatbin_entry *e = &fb.entries[i];
        const unsigned char *p = lkv_cuda_fatbin + e->offset;
        cr_assert(e->size >= 64 && e->offset + e->size <= lkv_cuda_fatbin_size, "entry %d", i);
        if (e->compressed) {
            cr_assert(memcmp(p, zstd, 4) == 0, "entry %d: compressed, but no zstd frame", i);
        } else if (e->kind == LKV_FATBIN_ELF) {
            cr_assert(memcmp(p, "\x7f" "ELF", 4) == 0, "entry %d is no ELF", i);
            cr_assert_eq(p[18] | p[19] << 8, 190, "entry %d: e_machine is not EM_CUDA", i);
        } else {
            cr_assert(contains(p, e->size, ".version") && contains(p, e->size, ".target"),
                      "entry %d is no PTX", i);
        }
    }
}

Test(fatbin, embedded_summary_names_the_range_and_the_ptx)
{
    if (!default_targets())
        cr_skip_test("built with LAZYKV_CUDA_TARGETS='%s'", LKV_CUDA_TARGETS_BUILT);
    lkv_fatbin_info fb = embedded();
    char s[128];
    lkv_fatbin_summary(&fb, s, sizeof s);
    cr_assert_str_eq(s, "sm_75..sm_90 and PTX compute_90");
}

/* Machine code runs within its major version at or above its minor; PTX
 * runs on anything at or above its version. */
Test(fatbin, best_code_follows_compute_capability)
{
    if (!default_targets())
        cr_skip_test("built with LAZYKV_CUDA_TARGETS='%s'", LKV_CUDA_TARGETS_BUILT);
    lkv_fatbin_info fb = embedded();
    static const struct {
        int major, minor, elf, ptx;
    } cases[] = {{6, 1, 0, 0},  {7, 0, 0, 0},   {7, 5, 75, 0},  {8, 0, 80, 0},
                 {8, 6, 86, 0}, {8, 7, 86, 0},  {8, 9, 89, 0},  {9, 0, 90, 90},
                 {9, 1, 90, 90}, {10, 0, 0, 90}, {12, 0, 0, 90}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const lkv_fatbin_entry *elf = lkv_fatbin_best_elf(&fb, cases[i].major, cases[i].minor);
        const lkv_fatbin_entry *ptx = lkv_fatbin_best_ptx(&fb, cases[i].major, cases[i].minor);
        cr_assert_eq(elf ? elf->arch : 0, cases[i].elf, "machine code for %d.%d", cases[i].major,
                     cases[i].minor);
        cr_assert_eq(ptx ? ptx->arch : 0, cases[i].ptx, "PTX for %d.%d", cases[i].major,
                     cases[i].minor);
    }
}

/* ---- damaged fatbins ---- */

static void wr16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}
static void wr64(unsigned char *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

/* One entry: a 64-byte header then `payload` bytes of `fill`. */
static size_t put_entry(unsigned char *at, int kind, int arch, size_t payload, unsigned char fill)
{
    memset(at, 0, 64);
    wr16(at, (unsigned)kind);
    wr16(at + 2, 0x101);
    wr32(at + 4, 64);
    wr64(at + 8, payload);
    wr16(at + 24, kind == LKV_FATBIN_PTX ? 0 : 8);
    wr16(at + 26, kind == LKV_FATBIN_PTX ? 8 : 1);
    wr32(at + 28, (uint32_t)arch);
    wr64(at + 40, 0x11);
    memset(at + 64, fill, payload);
    return 64 + payload;
}

/* A well-formed container: machine code for sm_80, PTX for compute_80.
 * Returns its size; `buf` needs 256 bytes. */
static size_t build(unsigned char *buf)
{
    size_t n = 16;
    n += put_entry(buf + n, LKV_FATBIN_ELF, 80, 40, 0xee);
    n += put_entry(buf + n, LKV_FATBIN_PTX, 80, 24, 'p');
    wr32(buf, LKV_FATBIN_MAGIC);
    wr16(buf + 4, 1);
    wr16(buf + 6, 16);
    wr64(buf + 8, n - 16);
    return n;
}

/* Parses an exact-size heap copy, so ASan catches any read past the end,
 * and checks the verdict; a rejection must leave `out` alone and explain. */
static lkv_status parse_copy(const unsigned char *src, size_t n, const char *needle)
{
    unsigned char *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, src, n);
    lkv_fatbin_info fb;
    memset(&fb, 0x5a, sizeof fb);
    lkv_status st = lkv_fatbin_parse(copy, n, &fb);
    free(copy);
    if (st != LKV_OK) {
        cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%s", lkv_last_error());
        cr_assert_eq(fb.count, 0x5a5a5a5a, "a rejected parse wrote its output");
        cr_assert(strncmp(lkv_last_error(), "fatbin: ", 8) == 0, "message: '%s'", lkv_last_error());
        if (needle)
            cr_assert(strstr(lkv_last_error(), needle), "'%s' does not say '%s'", lkv_last_error(),
                      needle);
    }
    return st;
}

Test(fatbin, a_built_container_parses)
{
    unsigned char buf[256];
    size_t n = build(buf);
    lkv_fatbin_info fb;
    TU_OK(lkv_fatbin_parse(buf, n, &fb));
    char list[64];
    lkv_fatbin_list(&fb, list, sizeof list);
    cr_assert_str_eq(list, "sm_80 compute_80");
    cr_assert_eq(fb.entries[0].offset, 16 + 64);
    cr_assert_eq(fb.entries[0].size, 40);
    cr_assert_eq(fb.entries[1].offset, 16 + 64 + 40 + 64);
    cr_assert_eq(fb.entries[1].code_major, 8);
}

Test(fatbin, a_container_cut_anywhere_is_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    for (size_t cut = 0; cut < n; cut++)
        cr_assert_neq(parse_copy(buf, cut, NULL), LKV_OK, "cut at %zu of %zu parsed", cut, n);
}

Test(fatbin, the_embedded_fatbin_cut_short_is_rejected)
{
    size_t n = lkv_cuda_fatbin_size;
    const size_t cuts[] = {0, 4, 15, 16, 17, 79, 80, 81, n / 3, n / 2, n - 8, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        cr_assert_neq(parse_copy(lkv_cuda_fatbin, cuts[i], NULL), LKV_OK, "cut at %zu parsed",
                      cuts[i]);
}

Test(fatbin, bad_magic_is_rejected_naming_it)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr32(buf, 0x464c457f); /* an ELF file handed over by mistake */
    parse_copy(buf, n, "bad magic 0x464c457f");
}

Test(fatbin, unknown_version_is_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr16(buf + 4, 2);
    parse_copy(buf, n, "version 2");
}

Test(fatbin, header_size_out_of_range_is_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr16(buf + 6, 8);
    parse_copy(buf, n, "header size 8");
    wr16(buf + 6, 0xffff);
    parse_copy(buf, n, "header size 65535");
}

Test(fatbin, entries_promised_past_the_end_are_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr64(buf + 8, n); /* 16 bytes more than follow the header */
    parse_copy(buf, n, "promises");
    wr64(buf + 8, UINT64_MAX);
    parse_copy(buf, n, "promises");
}

Test(fatbin, bytes_after_the_last_entry_are_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    buf[n] = 0;
    wr64(buf + 8, n - 16 + 1);
    parse_copy(buf, n + 1, "cut short");
}

Test(fatbin, an_entry_payload_past_the_end_is_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr64(buf + 16 + 8, 41); /* the first entry claims one byte more than it has */
    parse_copy(buf, n, NULL);
    wr64(buf + 16 + 8, 1000);
    parse_copy(buf, n, "payload of 1000 bytes");
    /* a size meant to wrap the offset arithmetic around */
    wr64(buf + 16 + 8, UINT64_MAX - 63);
    parse_copy(buf, n, "payload of");
}

Test(fatbin, an_entry_header_size_out_of_range_is_rejected)
{
    unsigned char buf[256];
    size_t n = build(buf);
    wr32(buf + 16 + 4, 0);
    parse_copy(buf, n, "header size of 0 bytes");
    wr32(buf + 16 + 4, 0xffffffffu);
    parse_copy(buf, n, "header size of 4294967295 bytes");
}

Test(fatbin, too_many_entries_are_rejected)
{
    size_t n = 16 + (LKV_FATBIN_MAX_ENTRIES + 1) * 64;
    unsigned char *buf = calloc(1, n);
    cr_assert_not_null(buf);
    for (int i = 0; i <= LKV_FATBIN_MAX_ENTRIES; i++)
        put_entry(buf + 16 + (size_t)i * 64, LKV_FATBIN_ELF, 80, 0, 0);
    wr32(buf, LKV_FATBIN_MAGIC);
    wr16(buf + 4, 1);
    wr16(buf + 6, 16);
    wr64(buf + 8, n - 16);
    parse_copy(buf, n, "more than");
    free(buf);
}

Test(fatbin, no_input_is_rejected)
{
    lkv_fatbin_info fb;
    cr_assert_eq(lkv_fatbin_parse(NULL, 100, &fb), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "too few"), "%s", lkv_last_error());
}

/* ---- drivers that are missing, fake or refuse ---- */

/* Points the backend at fake driver `variant` and returns the fake's state. */
static fake_cuda_state *use_fake(const char *variant)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/libfakecuda_%s.so", LKV_FAKE_CUDA_DIR, variant);
    cr_assert_eq(setenv("LAZYKV_CUDA_LIBRARY", path, 1), 0);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "cannot load the fake driver: %s", dlerror());
    void *sym = dlsym(lib, "fake_cuda_get_state");
    cr_assert_not_null(sym, "%s has no fake_cuda_get_state", path);
    fake_cuda_state_fn fn;
    memcpy(&fn, &sym, sizeof sym);
    return fn();
}

static void expect_nothing_held(const fake_cuda_state *s, const char *after)
{
    cr_assert_eq(s->retains, 0, "%s: %d primary context retains left", after, s->retains);
    cr_assert_eq(s->ctx_depth, 0, "%s: %d context pushes left", after, s->ctx_depth);
    cr_assert_eq(s->modules, 0, "%s: %d modules left", after, s->modules);
    cr_assert_eq(s->allocations, 0, "%s: %d allocations left", after, s->allocations);
    cr_assert_eq(s->without_context, 0, "%s: %d calls made without a context", after,
                 s->without_context);
    cr_assert_eq(s->bad_addresses, 0, "%s: %d bad addresses", after, s->bad_addresses);
    cr_assert_eq(s->streams, 0, "%s: %d streams left", after, s->streams);
    cr_assert_eq(s->events, 0, "%s: %d events left", after, s->events);
    cr_assert_eq(s->host_allocations, 0, "%s: %d page-locked allocations left", after,
                 s->host_allocations);
    cr_assert_eq(s->foreign_streams, 0, "%s: %d calls on another stream than the device's",
                 after, s->foreign_streams);
}

/* One probe, asserting it succeeded and listed `want` reports. */
static void probe(lkv_device_report *reps, int cap, int want)
{
    int count = -1;
    TU_OK(lkv_backend_cuda.probe(reps, cap, &count));
    cr_assert_eq(count, want, "probe listed %d reports, expected %d (first: %s)", count, want,
                 cap > 0 ? reps[0].reason : "");
}

/* open(device) must fail with `want` and a message containing `needle`. */
static void expect_open_fails(int device, lkv_status want, const char *needle)
{
    lkv_device *d = NULL;
    lkv_status st = lkv_backend_cuda.open(device, &d);
    cr_assert_eq(st, want, "open(%d) gave %s, expected %s: %s", device, lkv_status_name(st),
                 lkv_status_name(want), lkv_last_error());
    cr_assert_null(d);
    cr_assert(strstr(lkv_last_error(), needle), "'%s' does not say '%s'", lkv_last_error(), needle);
}

/* What the shared loader says of LAZYKV_CUDA_LIBRARY naming no file. */
#define MISSING_DRIVER                                                                          \
    "libcuda not found (tried /nonexistent/libcuda.so.1 from LAZYKV_CUDA_LIBRARY: "

Test(driver, a_missing_driver_is_one_unavailable_report_naming_the_library)
{
    setenv("LAZYKV_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    lkv_device_report reps[4];
    probe(reps, 4, 1);
    cr_assert_str_eq(reps[0].backend, "cuda");
    cr_assert_eq(reps[0].device, -1);
    cr_assert_eq(reps[0].available, 0);
    cr_assert(strstr(reps[0].reason, MISSING_DRIVER), "%s", reps[0].reason);
    cr_assert(strstr(reps[0].reason, "install the NVIDIA driver"), "%s", reps[0].reason);
    expect_open_fails(0, LKV_UNAVAILABLE, MISSING_DRIVER);
}

Test(driver, a_probe_with_no_room_still_counts)
{
    setenv("LAZYKV_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    probe(NULL, 0, 1);
    use_fake("sm90");
    probe(NULL, 0, 2);
}

Test(driver, no_device_is_unavailable)
{
    use_fake("nodevice");
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert_eq(reps[0].available, 0);
    cr_assert(strncmp(reps[0].reason, "no CUDA device", 14) == 0, "%s", reps[0].reason);
    cr_assert(strstr(reps[0].reason, "CUDA_ERROR_NO_DEVICE"), "%s", reps[0].reason);
    expect_open_fails(0, LKV_UNAVAILABLE, "no CUDA device");
}

Test(driver, a_driver_lacking_an_entry_point_is_unavailable_naming_it)
{
    use_fake("nosym");
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert_eq(reps[0].available, 0);
    cr_assert(strstr(reps[0].reason, "lacks cuMemAlloc_v2"), "%s", reps[0].reason);
    expect_open_fails(0, LKV_UNAVAILABLE, "lacks cuMemAlloc_v2");
}

Test(driver, a_failing_cuinit_is_unavailable_with_the_error_name)
{
    fake_cuda_state *s = use_fake("sm90");
    setenv("LKV_FAKE_CUDA_FAIL", "cuInit=999", 1);
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert(strstr(reps[0].reason, "cuInit: CUDA_ERROR_UNKNOWN (unknown error)"), "%s",
              reps[0].reason);
    expect_open_fails(0, LKV_UNAVAILABLE, "CUDA_ERROR_UNKNOWN");
    expect_nothing_held(s, "a failed cuInit");
}

Test(driver, a_compute_capability_6_1_gpu_is_incompatible_in_words)
{
    fake_cuda_state *s = use_fake("sm61");
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert_eq(reps[0].device, 0);
    cr_assert_eq(reps[0].available, 0);
    cr_assert_str_eq(reps[0].name, "NVIDIA GeForce GTX 1080");
    lkv_fatbin_info fb = embedded();
    char carried[96], words[256];
    lkv_fatbin_summary(&fb, carried, sizeof carried);
    snprintf(words, sizeof words, "compute capability 6.1 (sm_61): this lazykv carries %s; needs",
             carried);
    cr_assert(strstr(reps[0].reason, words), "'%s' lacks '%s'", reps[0].reason, words);
    if (default_targets())
        cr_assert(strstr(reps[0].reason, "compute capability 6.1 (sm_61): this lazykv carries "
                                         "sm_75..sm_90 and PTX compute_90; needs a Turing or "
                                         "newer GPU"), "%s", reps[0].reason);
    expect_open_fails(0, LKV_INCOMPATIBLE, words);
    expect_nothing_held(s, "an incompatible open");
}

Test(driver, a_driver_older_than_the_toolkit_is_incompatible_naming_both)
{
    fake_cuda_state *s = use_fake("olddriver");
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert_eq(reps[0].available, 0);
    cr_assert_str_eq(reps[0].driver, "CUDA driver 12.2");
    char words[160];
    snprintf(words, sizeof words, "driver supports CUDA 12.2 but the kernels were built by %s: "
             "update the NVIDIA driver to ", cuda_text(lkv_cuda_fatbin_toolkit));
    cr_assert(strstr(reps[0].reason, words), "'%s' lacks '%s'", reps[0].reason, words);
    if (lkv_cuda_fatbin_toolkit / 1000 == 13)
        cr_assert(strstr(reps[0].reason, "update the NVIDIA driver to 580 or newer"), "%s",
                  reps[0].reason);
    expect_open_fails(0, LKV_INCOMPATIBLE, words);
    expect_nothing_held(s, "an incompatible open");
}

/* A compute capability 10.0 device runs only the PTX; this driver refuses
 * it at load time (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): open is then
 * INCOMPATIBLE naming the driver's version, with the JIT's log. */
Test(driver, a_refused_ptx_is_incompatible_naming_the_driver_version)
{
    fake_cuda_state *s = use_fake("ptxfail");
    lkv_device_report reps[2];
    probe(reps, 2, 1);
    cr_assert_eq(reps[0].available, 1, "the probe cannot know yet: %s", reps[0].reason);
    cr_assert(strstr(reps[0].reason, "PTX compute_"), "%s", reps[0].reason);
    expect_open_fails(0, LKV_INCOMPATIBLE, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION");
    const char *driver = cuda_text(lkv_cuda_fatbin_toolkit + 20);
    cr_assert(strstr(lkv_last_error(), driver), "'%s' does not name %s", lkv_last_error(), driver);
    cr_assert(strstr(lkv_last_error(), "JIT log: ptxas application ptx input"), "%s",
              lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "'8.8'; ptxas fatal   : Ptx assembly aborted: "), "%s",
              lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "update the NVIDIA driver"), "%s", lkv_last_error());
    cr_assert(!strchr(lkv_last_error(), '\n'), "not one line: %s", lkv_last_error());
    cr_assert_eq(s->jit_log_given, 1, "the load was given no error log buffer");
    expect_nothing_held(s, "a refused module load");
}

Test(driver, the_probe_reports_every_device_with_its_identity)
{
    use_fake("sm90");
    lkv_device_report reps[3];
    memset(reps, 0x77, sizeof reps);
    probe(reps, 3, 2);
    static const struct {
        const char *name, *code;
        uint64_t memory;
    } want[2] = {{"Fake H200", "sm_90 machine code", (uint64_t)143771 << 20},
                 {"Fake RTX A6000", "sm_86 machine code", (uint64_t)48676 << 20}};
    for (int i = 0; i < 2; i++) {
        const lkv_device_report *r = &reps[i];
        cr_assert_str_eq(r->backend, "cuda");
        cr_assert_eq(r->device, i);
        cr_assert_eq(r->available, 1, "%s", r->reason);
        cr_assert_eq(r->emulated, 0);
        cr_assert_str_eq(r->name, want[i].name);
        char driver[32];
        snprintf(driver, sizeof driver, "CUDA driver %s", cuda_text(lkv_cuda_fatbin_toolkit) + 5);
        cr_assert_str_eq(r->driver, driver);
        cr_assert_eq(r->memory_bytes, want[i].memory);
        cr_assert(strstr(r->reason, want[i].code), "device %d: %s", i, r->reason);
        char uuid[40];
        int b = 0xa0 + 0x10 * i;
        snprintf(uuid, sizeof uuid,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b,
                 b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8, b + 9, b + 10, b + 11,
                 b + 12, b + 13, b + 14, b + 15);
        cr_assert_str_eq(r->uuid, uuid);
    }
    cr_assert_eq(reps[2].device, 0x77777777, "the probe wrote past the devices");
    cr_assert(strstr(reps[0].reason, "compute capability 9.0, 132 SMs"), "%s", reps[0].reason);
}

Test(driver, open_resolves_every_kernel_and_close_releases_everything)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    cr_assert_eq(s->functions, (int)LKV_GPU_KERNEL_COUNT);
    cr_assert_eq(s->modules, 1);
    cr_assert_eq(s->retains, 1);
    cr_assert_eq(s->ctx_depth, 0, "open left its context current");
    cr_assert_eq(d->lim.warp, 32);
    cr_assert_eq(d->lim.multiprocessors, 132);
    cr_assert_eq(d->lim.max_grid_y, 65535);
    cr_assert_eq(d->lim.max_grid_z, 65535);
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "close");
}

Test(driver, buffers_round_trip_through_the_driver)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(1, &d));
    const lkv_backend_ops *ops = &lkv_backend_cuda;
    enum { N = 1000 };
    lkv_buffer *a = NULL, *b = NULL;
    TU_OK(ops->alloc(d, N * sizeof(int32_t), &a));
    TU_OK(ops->alloc(d, N * sizeof(int32_t), &b));
    cr_assert_eq(s->allocations, 2);
    int32_t in[N], out[N];
    TU_OK(ops->read(d, a, 0, out, sizeof out));
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], 0, "a new buffer is not zero at %d", i); /* the fake fills 0xcd */
    for (int i = 0; i < N; i++)
        in[i] = i * 7 - 3;
    TU_OK(ops->write(d, a, 0, in, sizeof in));
    TU_OK(ops->copy(d, b, 4 * sizeof(int32_t), a, 0, (N - 4) * sizeof(int32_t)));
    TU_OK(ops->sync(d));
    TU_OK(ops->read(d, b, 0, out, sizeof out));
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], i < 4 ? 0 : in[i - 4], "b[%d]", i);
    ops->free(d, a);
    ops->free(d, b);
    cr_assert_eq(s->allocations, 0);
    ops->close(d);
    expect_nothing_held(s, "buffers and close");
}

Test(driver, launches_go_to_the_devices_own_stream_without_dynamic_shared_memory)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    lkv_gpu_kernel_id k = (lkv_gpu_kernel_id)(LKV_GPU_KERNEL_COUNT - 1);
    uint64_t ptr = 0;
    int32_t n = 5;
    void *args[] = {&ptr, &n};
    TU_OK(d->drv->enter(d->api));
    TU_OK(lkv_gpu_launch_kernel(d, k, 3, 4, 5, 128, args));
    d->drv->leave(d->api);
    cr_assert_eq(s->launches, 1);
    cr_assert_str_eq(s->last_kernel, lkv_gpu_kernel_names[k]);
    cr_assert(s->grid[0] == 3 && s->grid[1] == 4 && s->grid[2] == 5, "grid %u %u %u", s->grid[0],
              s->grid[1], s->grid[2]);
    cr_assert(s->block[0] == 128 && s->block[1] == 1 && s->block[2] == 1, "block %u %u %u",
              s->block[0], s->block[1], s->block[2]);
    cr_assert_eq(s->shared_bytes, 0);
    cr_assert_not_null(s->stream, "on the legacy default stream");
    cr_assert_eq(s->stream, s->created_stream, "not on the stream open created");
    cr_assert_eq(s->streams, 1);
    cr_assert_eq(s->extra_given, 0);
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "a launch and close");
}

Test(driver, opening_a_device_that_does_not_exist_is_an_invalid_argument)
{
    fake_cuda_state *s = use_fake("sm90");
    expect_open_fails(2, LKV_INVALID_ARGUMENT, "cuda device 2 does not exist (2 found)");
    expect_open_fails(-1, LKV_INVALID_ARGUMENT, "cuda device -1 does not exist");
    expect_nothing_held(s, "a bad device index");
}

/* Every driver call open makes, failed in turn: open reports it, naming
 * the call, and leaves no context, module or memory behind. */
Test(driver, a_failure_at_any_open_step_leaves_nothing_held)
{
    fake_cuda_state *s = use_fake("sm90");
    static const char *const steps[] = {
        "cuDriverGetVersion", "cuDeviceGetCount",   "cuDeviceGet",
        "cuDeviceGetName",    "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain",
        "cuCtxPushCurrent_v2", "cuStreamCreate",   "cuModuleLoadDataEx",
        "cuModuleGetFunction",
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        setenv("LKV_FAKE_CUDA_FAIL", steps[i], 1);
        lkv_device *d = NULL;
        lkv_status st = lkv_backend_cuda.open(0, &d);
        cr_assert_neq(st, LKV_OK, "open succeeded with %s failing", steps[i]);
        cr_assert_null(d);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(strcspn(steps[i], "_")), steps[i]);
        if (strcmp(steps[i], "cuModuleGetFunction") != 0) /* that one names the kernel */
            cr_assert(strstr(lkv_last_error(), name), "%s failing: '%s' does not name it",
                      steps[i], lkv_last_error());
        cr_assert(strstr(lkv_last_error(), "CUDA_ERROR_UNKNOWN"), "%s failing: %s", steps[i],
                  lkv_last_error());
        expect_nothing_held(s, steps[i]);
    }
    unsetenv("LKV_FAKE_CUDA_FAIL");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "the last open and close");
}

Test(driver, device_memory_running_out_is_out_of_memory)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    setenv("LKV_FAKE_CUDA_FAIL", "cuMemAlloc_v2=2", 1);
    lkv_buffer *b = NULL;
    lkv_status st = lkv_backend_cuda.alloc(d, 1 << 20, &b);
    cr_assert_eq(st, LKV_OUT_OF_MEMORY, "%s: %s", lkv_status_name(st), lkv_last_error());
    cr_assert_null(b);
    cr_assert(strstr(lkv_last_error(), "cuMemAlloc of 1048576 bytes"), "%s", lkv_last_error());
    unsetenv("LKV_FAKE_CUDA_FAIL");
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "a failed allocation");
}

Test(driver, a_failing_copy_is_a_device_error_naming_the_call)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    lkv_buffer *b = NULL;
    TU_OK(lkv_backend_cuda.alloc(d, 64, &b));
    setenv("LKV_FAKE_CUDA_FAIL", "cuMemcpyDtoHAsync_v2", 1);
    char out[64];
    lkv_status st = lkv_backend_cuda.read(d, b, 0, out, sizeof out);
    cr_assert_eq(st, LKV_DEVICE_ERROR, "%s: %s", lkv_status_name(st), lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "cuMemcpyDtoHAsync: CUDA_ERROR_UNKNOWN"), "%s",
              lkv_last_error());
    unsetenv("LKV_FAKE_CUDA_FAIL");
    lkv_backend_cuda.free(d, b);
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "a failed copy");
}

/* A write and a read of a fresh device: the write goes through page-locked
 * staging and an event, the read waits for the stream, and close gives all
 * of it back. */
Test(driver, copies_are_staged_page_locked_and_ordered_on_the_devices_stream)
{
    fake_cuda_state *s = use_fake("sm90");
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open(0, &d));
    lkv_buffer *b = NULL;
    TU_OK(lkv_backend_cuda.alloc(d, 256, &b));
    int32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = 3 * i + 1;
    TU_OK(lkv_backend_cuda.write(d, b, 0, in, sizeof in));
    cr_assert_eq(s->host_allocations, 1, "the write did not stage through page-locked memory");
    cr_assert_eq(s->events, 1);
    int syncs = s->stream_syncs;
    TU_OK(lkv_backend_cuda.read(d, b, 0, out, sizeof out));
    cr_assert_eq(s->stream_syncs, syncs + 1, "a read is one wait for the stream");
    cr_assert(memcmp(in, out, sizeof in) == 0, "read back differs");
    lkv_counters c;
    lkv_backend_cuda.counters(d, &c);
    cr_assert(c.h2d_copies == 1 && c.h2d_bytes == 256 && c.d2h_copies == 1 &&
              c.d2h_bytes == 256 && c.syncs == 1 && c.launches == 0,
              "counters %lld %lld %lld %lld %lld %lld", (long long)c.launches,
              (long long)c.h2d_copies, (long long)c.h2d_bytes, (long long)c.d2h_copies,
              (long long)c.d2h_bytes, (long long)c.syncs);
    lkv_backend_cuda.free(d, b);
    lkv_backend_cuda.close(d);
    expect_nothing_held(s, "staged copies and close");
}

/* The fake's own entry points, to play the engine that owns a context. */
static void *fake_symbol(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/libfakecuda_sm90.so", LKV_FAKE_CUDA_DIR);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    void *sym = dlsym(lib, name);
    cr_assert_not_null(sym, "the fake has no %s", name);
    return sym;
}

/* open_external borrows the engine's context and stream: every call goes
 * to that stream, and close neither releases the context nor destroys the
 * stream. */
Test(driver, an_external_device_borrows_the_engines_context_and_stream)
{
    fake_cuda_state *s = use_fake("sm90");
    CUresult (*init)(unsigned int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    void *p = fake_symbol("cuInit");
    memcpy(&init, &p, sizeof p);
    p = fake_symbol("cuDevicePrimaryCtxRetain");
    memcpy(&retain, &p, sizeof p);
    p = fake_symbol("cuDevicePrimaryCtxRelease_v2");
    memcpy(&release, &p, sizeof p);
    CUcontext engine_ctx = NULL;
    cr_assert_eq(init(0), 0);
    cr_assert_eq(retain(&engine_ctx, 0), 0);
    static int engine_stream;
    setenv("LKV_FAKE_CUDA_ANY_STREAM", "1", 1);
    lkv_external_device ext = {.backend = "cuda", .device = 0, .context = engine_ctx,
                               .stream = &engine_stream};
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open_external(&ext, &d));
    cr_assert_eq(s->streams, 0, "open_external created a stream of its own");
    cr_assert_eq(s->retains, 1, "open_external retained a context besides the engine's");
    lkv_gpu_kernel_id k = (lkv_gpu_kernel_id)(LKV_GPU_KERNEL_COUNT - 1);
    uint64_t ptr = 0;
    int32_t n = 5;
    void *args[] = {&ptr, &n};
    TU_OK(d->drv->enter(d->api));
    TU_OK(lkv_gpu_launch_kernel(d, k, 1, 1, 1, 64, args));
    d->drv->leave(d->api);
    cr_assert_eq(s->stream, (const void *)&engine_stream, "the launch missed the engine's stream");
    lkv_backend_cuda.close(d);
    unsetenv("LKV_FAKE_CUDA_ANY_STREAM");
    cr_assert_eq(s->retains, 1, "close released the engine's context");
    cr_assert_eq(release(0), 0);
    expect_nothing_held(s, "an external device and close");
}

Test(driver, an_external_device_without_a_context_uses_the_primary_one_and_releases_it)
{
    fake_cuda_state *s = use_fake("sm90");
    setenv("LKV_FAKE_CUDA_ANY_STREAM", "1", 1);
    lkv_external_device ext = {.backend = "cuda", .device = 1};
    lkv_device *d = NULL;
    TU_OK(lkv_backend_cuda.open_external(&ext, &d));
    cr_assert_eq(s->retains, 1);
    cr_assert_eq(s->streams, 0);
    lkv_backend_cuda.close(d);
    unsetenv("LKV_FAKE_CUDA_ANY_STREAM");
    expect_nothing_held(s, "an external device on the primary context");
    lkv_external_device vk = {.backend = "cuda", .logical_device = &ext};
    cr_assert_eq(lkv_backend_cuda.open_external(&vk, &d), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "logical_device"), "%s", lkv_last_error());
}

/* ---- entries from another thread than open ---- */

/* What a thread did with a device another thread opened; asserted on the
 * main thread (Criterion's asserts belong there). */
typedef struct thread_job {
    lkv_device *dev;
    lkv_status alloc, write, read, select, without_enter;
    int32_t out[64];
    char message[512];
} thread_job;

/* alloc, write, read back, launch (select) and free, each through the ops
 * table as an application would call it. */
static void *use_from_another_thread(void *arg)
{
    thread_job *j = arg;
    const lkv_backend_ops *ops = &lkv_backend_cuda;
    lkv_buffer *buf = NULL, *scores = NULL, *kept = NULL;
    int32_t in[64];
    for (int i = 0; i < 64; i++)
        in[i] = 1000 - 3 * i;
    j->alloc = ops->alloc(j->dev, sizeof in, &buf);
    if (j->alloc == LKV_OK)
        j->alloc = ops->alloc(j->dev, 64 * sizeof(float), &scores);
    if (j->alloc == LKV_OK)
        j->alloc = ops->alloc(j->dev, 64 * sizeof(int32_t), &kept);
    if (j->alloc == LKV_OK) {
        j->write = ops->write(j->dev, buf, 0, in, sizeof in);
        j->read = ops->read(j->dev, buf, 0, j->out, sizeof j->out);
        const int32_t rows[1] = {0}, row_n[1] = {64}, row_k[1] = {8};
        lkv_select_args a = {.capacity = 64, .n_rows = 1, .rows = rows, .row_n = row_n,
                             .row_k = row_k, .scores = scores, .kept = kept};
        j->select = ops->select(j->dev, &a);
    }
    snprintf(j->message, sizeof j->message, "%s", lkv_last_error());
    ops->free(j->dev, buf);
    ops->free(j->dev, scores);
    ops->free(j->dev, kept);
    return NULL;
}

/* The context stack is per thread: every entry pushes the device's context
 * on the thread that calls it, so a device opened on one thread works on
 * another. */
Test(driver, a_device_opened_on_one_thread_works_from_another)
{
    fake_cuda_state *s = use_fake("sm90");
    thread_job job;
    memset(&job, 0, sizeof job);
    TU_OK(lkv_backend_cuda.open(0, &job.dev));
    tu_run_on_a_thread(use_from_another_thread, &job);
    cr_assert_eq(job.alloc, LKV_OK, "alloc: %s", job.message);
    cr_assert_eq(job.write, LKV_OK, "write: %s", job.message);
    cr_assert_eq(job.read, LKV_OK, "read: %s", job.message);
    cr_assert_eq(job.select, LKV_OK, "select: %s", job.message);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(job.out[i], 1000 - 3 * i, "element %d read back wrong", i);
    cr_assert_eq(s->launches, 1);
    /* rows of one chunk: the spread select, one block a row, a plain launch */
    cr_assert_str_eq(s->last_kernel, lkv_gpu_kernel_names[LKV_GPU_K_lkv_select_spread]);
    lkv_backend_cuda.close(job.dev);
    expect_nothing_held(s, "ops from another thread");
}

static void *alloc_without_entering(void *arg)
{
    thread_job *j = arg;
    lkv_gpu_ptr p = 0;
    j->without_enter = j->dev->drv->mem_alloc(j->dev->api, 64, &p);
    snprintf(j->message, sizeof j->message, "%s", lkv_last_error());
    if (j->without_enter == LKV_OK)
        j->dev->drv->mem_free(j->dev->api, p);
    return NULL;
}

/* The fake holds the backend to that: a driver call on a thread where the
 * context was never made current fails, as on the real driver. */
Test(driver, a_driver_call_on_a_thread_without_the_context_fails)
{
    fake_cuda_state *s = use_fake("sm90");
    thread_job job;
    memset(&job, 0, sizeof job);
    TU_OK(lkv_backend_cuda.open(0, &job.dev));
    tu_run_on_a_thread(alloc_without_entering, &job);
    cr_assert_eq(job.without_enter, LKV_DEVICE_ERROR, "%s", job.message);
    cr_assert(strstr(job.message, "cuda: cuMemAlloc of 64 bytes: CUDA_ERROR_INVALID_CONTEXT "
                                  "(invalid device context)"), "%s", job.message);
    cr_assert_eq(s->without_context, 1);
    s->without_context = 0;
    lkv_backend_cuda.close(job.dev);
    expect_nothing_held(s, "a call without the context");
}

/* ---- lanes ---- */

/* The lane's work from a thread of its own, as the core drives it: the
 * lane pushes the context there as the device does. */
typedef struct lane_job {
    lkv_device *lane;
    lkv_buffer *src, *dst;
    const lkv_mark *wait_for;
    lkv_mark *done;
    lkv_status st;
    char message[256];
} lane_job;

static void *lane_work(void *arg)
{
    lane_job *j = arg;
    const lkv_backend_ops *ops = &lkv_backend_cuda;
    j->st = ops->wait_mark(j->lane, j->wait_for);
    if (j->st == LKV_OK)
        j->st = ops->copy(j->lane, j->dst, 0, j->src, 0, 256);
    if (j->st == LKV_OK)
        j->st = ops->mark(j->lane, &j->done);
    snprintf(j->message, sizeof j->message, "%s", lkv_last_error());
    return NULL;
}

/* A lane is a non-blocking stream of its own on the device's context and
 * module: its work goes there, it waits for a mark with cuStreamWaitEvent
 * (never on the host), buffers cross between the handles, and closing it
 * destroys its stream and what it made but not the context, the module or
 * a buffer. */
Test(driver, a_lane_is_a_stream_of_its_own_ordered_by_marks_and_closes_alone)
{
    fake_cuda_state *s = use_fake("sm90");
    const lkv_backend_ops *ops = &lkv_backend_cuda;
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(ops->open(0, &d));
    const void *main_stream = s->created_stream;
    TU_OK(ops->lane_open(d, &lane));
    cr_assert_eq(s->streams, 2);
    cr_assert_neq(s->created_stream, main_stream);
    cr_assert_eq(s->created_flags, LKV_CU_STREAM_NON_BLOCKING);
    cr_assert(s->modules == 1 && s->retains == 1, "the lane loaded or retained its own");
    cr_assert_eq(s->ctx_depth, 0);
    const void *lane_stream = s->created_stream;
    lkv_buffer *src = NULL, *dst = NULL;
    TU_OK(ops->alloc(d, 256, &src));
    TU_OK(ops->alloc(lane, 256, &dst));
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)(i * 5);
    TU_OK(ops->write(d, src, 0, in, sizeof in));
    lkv_mark *written = NULL;
    TU_OK(ops->mark(d, &written));
    int syncs = s->stream_syncs;
    lane_job job = {.lane = lane, .src = src, .dst = dst, .wait_for = written};
    tu_run_on_a_thread(lane_work, &job);
    cr_assert_eq(job.st, LKV_OK, "%s", job.message);
    cr_assert_eq(s->stream_waits, 1);
    cr_assert(s->waiting_stream == lane_stream && s->waited_event == written->event,
              "the lane did not wait on its stream for main's event");
    cr_assert_eq(s->stream_syncs, syncs, "a mark or a wait made the host wait");
    TU_OK(ops->wait_mark(d, job.done));
    cr_assert(s->stream_waits == 2 && s->waiting_stream == main_stream);
    TU_OK(ops->read(d, dst, 0, out, sizeof out));
    cr_assert(memcmp(in, out, sizeof in) == 0);
    ops->mark_free(lane, job.done);
    ops->mark_free(d, written);
    ops->close(lane);
    cr_assert(s->streams == 1 && s->modules == 1 && s->retains == 1 && s->allocations == 2,
              "closing the lane took %d streams, %d modules, %d retains, %d buffers of main's",
              1 - s->streams, 1 - s->modules, 1 - s->retains, 2 - s->allocations);
    ops->free(d, src);
    ops->free(d, dst);
    ops->close(d);
    expect_nothing_held(s, "a lane and close");
}

Test(driver, a_failing_lane_stream_or_wait_names_the_call_and_leaves_nothing)
{
    fake_cuda_state *s = use_fake("sm90");
    const lkv_backend_ops *ops = &lkv_backend_cuda;
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(ops->open(0, &d));
    setenv("LKV_FAKE_CUDA_FAIL", "cuStreamCreate", 1);
    cr_assert_eq(ops->lane_open(d, &lane), LKV_DEVICE_ERROR);
    unsetenv("LKV_FAKE_CUDA_FAIL");
    cr_assert(strstr(lkv_last_error(), "cuStreamCreate (a lane)"), "%s", lkv_last_error());
    cr_assert_null(lane);
    cr_assert_eq(s->streams, 1);
    TU_OK(ops->lane_open(d, &lane));
    lkv_mark *m = NULL;
    TU_OK(ops->mark(d, &m));
    setenv("LKV_FAKE_CUDA_FAIL", "cuStreamWaitEvent", 1);
    cr_assert_eq(ops->wait_mark(lane, m), LKV_DEVICE_ERROR);
    unsetenv("LKV_FAKE_CUDA_FAIL");
    cr_assert(strstr(lkv_last_error(), "waiting for a mark: cuda: cuStreamWaitEvent"), "%s",
              lkv_last_error());
    ops->mark_free(d, m);
    ops->close(lane);
    ops->close(d);
    expect_nothing_held(s, "failed lane calls");
}

/* The engine orders only its own stream (and may capture it into a graph),
 * so a device on it keeps lazykv's work there. */
Test(driver, an_external_device_has_no_lane)
{
    fake_cuda_state *s = use_fake("sm90");
    setenv("LKV_FAKE_CUDA_ANY_STREAM", "1", 1);
    static int engine_stream;
    lkv_external_device ext = {.backend = "cuda", .device = 0, .stream = &engine_stream};
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(lkv_backend_cuda.open_external(&ext, &d));
    cr_assert_eq(lkv_backend_cuda.lane_open(d, &lane), LKV_UNSUPPORTED);
    cr_assert(strstr(lkv_last_error(), "engine's stream"), "%s", lkv_last_error());
    cr_assert_null(lane);
    cr_assert_eq(s->streams, 0);
    lkv_backend_cuda.close(d);
    unsetenv("LKV_FAKE_CUDA_ANY_STREAM");
    expect_nothing_held(s, "an external device asked for a lane");
}

/* ---- `lazykv devices` ---- */

/* Runs `env lazykv devices` and returns the cuda line's status and reason. */
static void devices_cuda_line(const char *env, char *out, size_t len, char *status, char *reason)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char tmp[] = "/tmp/lazykv-cuda-cli-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert(fd >= 0, "mkstemp failed");
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s '%s' devices >'%s' 2>&1 </dev/null", env, cli, tmp);
    int rc = system(cmd);
    FILE *f = fopen(tmp, "rb");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    unlink(tmp);
    cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "lazykv devices failed: %s", out);
    for (const char *line = out; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        char dev[16];
        int used = 0;
        if (strncmp(line, "cuda ", 5) != 0 ||
            sscanf(line, "cuda %15s %15s %n", dev, status, &used) != 2)
            continue;
        size_t r = strcspn(line + used, "\n");
        snprintf(reason, 512, "%.*s", (int)r, line + used);
        return;
    }
    cr_assert_fail("no cuda line in: %s", out);
}

Test(cli, devices_fails_cuda_naming_a_missing_driver)
{
    char out[16384], status[16], reason[512];
    devices_cuda_line("LAZYKV_BACKEND= LAZYKV_CUDA_LIBRARY=/nonexistent/libcuda.so.1", out,
                      sizeof out, status, reason);
    cr_assert_str_eq(status, "FAIL", "%s", out);
    cr_assert(strstr(reason, MISSING_DRIVER), "%s", out);
}

Test(cli, devices_fails_cuda_on_a_gpu_too_old_for_the_kernels)
{
    char env[4200], out[16384], status[16], reason[512];
    snprintf(env, sizeof env, "LAZYKV_BACKEND= LAZYKV_CUDA_LIBRARY='%s/libfakecuda_sm61.so'",
             LKV_FAKE_CUDA_DIR);
    devices_cuda_line(env, out, sizeof out, status, reason);
    cr_assert_str_eq(status, "FAIL", "%s", out);
    cr_assert(strstr(reason, "NVIDIA GeForce GTX 1080: compute capability 6.1 (sm_61)"), "%s", out);
    cr_assert(strstr(out, "CUDA driver"), "no identity line: %s", out);
}

/* A usable device passes, and auto picks it, opening it for real (on the
 * fake driver). */
Test(cli, devices_passes_a_usable_cuda_device_and_auto_chooses_it)
{
    char env[4200], out[16384], status[16], reason[512];
    snprintf(env, sizeof env, "LAZYKV_BACKEND= LAZYKV_CUDA_LIBRARY='%s/libfakecuda_sm90.so'",
             LKV_FAKE_CUDA_DIR);
    devices_cuda_line(env, out, sizeof out, status, reason);
    cr_assert_str_eq(status, "PASS", "%s", out);
    cr_assert(strstr(reason, "Fake H200 (compute capability 9.0"), "%s", out);
    cr_assert(strstr(out, "uuid a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"), "%s", out);
    cr_assert(strstr(out, "default: auto chose cuda:0"), "%s", out);
}
