/* The Vulkan backend as a user meets it: a missing loader or driver is a
 * clean UNAVAILABLE with the reason; on a working device (Mesa lavapipe in
 * CI) a decode run with evictions keeps exactly the positions the cpu oracle
 * keeps, with outputs within f32 rounding, for f32, f16 and bf16 storage,
 * with the binding windows of long caches forced on, and at other workgroup
 * sizes, while the Khronos validation layer stays silent.
 *
 * Each Criterion test runs in its own process, so the environment knobs set
 * here (LAZYKV_VULKAN_*) never leak into another test. Where Vulkan is
 * unavailable the device tests skip, unless LAZYKV_REQUIRE_BACKENDS names
 * vulkan (CI), where they fail. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "test_util.h"
#include "vulkan/vk_internal.h"


static int required(void)
{
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    return req && strstr(req, "vulkan") != NULL;
}

/* The Vulkan runtime, or NULL after skipping (or failing, when required). */
static lkv_runtime *vulkan_or_skip(void)
{
    setenv("LAZYKV_VULKAN_VALIDATION", "1", 1);
    lkv_runtime *rt = NULL;
    lkv_status st = lkv_runtime_open("vulkan", &rt);
    if (st == LKV_OK)
        return rt;
    cr_assert(!required(), "vulkan is required here but unavailable: %s", lkv_last_error());
    cr_skip_test("vulkan unavailable: %s", lkv_last_error());
    return NULL;
}

static const lkv_device_report *vulkan_report(lkv_device_report *reps, int *out_n)
{
    TU_OK(lkv_list_devices(reps, 64, out_n));
    for (int i = 0; i < *out_n; i++)
        if (!strcmp(reps[i].backend, "vulkan"))
            return &reps[i];
    cr_assert_fail("lkv_list_devices has no vulkan entry");
    return NULL;
}

Test(vulkan, missing_loader_library_is_unavailable_with_the_reason)
{
    setenv("LAZYKV_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
    lkv_device_report reps[64];
    int n = 0;
    const lkv_device_report *r = vulkan_report(reps, &n);
    cr_assert_eq(r->available, 0);
    cr_assert(strstr(r->reason, "no Vulkan loader") && strstr(r->reason, "/nonexistent"),
              "reason: %s", r->reason);
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("vulkan", &rt), LKV_UNAVAILABLE);
    cr_assert_null(rt);
    cr_assert(strstr(lkv_last_error(), "no Vulkan loader"), "message: %s", lkv_last_error());
    /* auto passes over it to the cpu */
    TU_OK(lkv_runtime_open("auto", &rt));
    lkv_runtime_info info;
    TU_OK(lkv_runtime_get_info(rt, &info));
    cr_assert_str_eq(info.backend, "cpu");
    lkv_runtime_close(rt);
}

/* The loader is found by the shared search (host/host_library.h): the
 * message lists what was tried, the override with the dynamic loader's own
 * reason. */
Test(vulkan, a_missing_override_is_named_with_the_loader_s_reason)
{
    setenv("LAZYKV_VULKAN_LIBRARY", "/nonexistent/liblkv-vulkan.so", 1);
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("vulkan", &rt), LKV_UNAVAILABLE);
    const char *want = "no Vulkan loader (tried /nonexistent/liblkv-vulkan.so from "
                       "LAZYKV_VULKAN_LIBRARY: ";
    cr_assert(strstr(lkv_last_error(), want), "message: %s", lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "No such file"), "no reason: %s", lkv_last_error());
    cr_assert(strstr(lkv_last_error(), "): install libvulkan1"), "message: %s",
              lkv_last_error());
}

Test(vulkan, a_library_that_is_not_vulkan_lacks_vkGetInstanceProcAddr)
{
    setenv("LAZYKV_VULKAN_LIBRARY", "libm.so.6", 1);
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("vulkan", &rt), LKV_UNAVAILABLE);
    cr_assert(strstr(lkv_last_error(), "libm.so.6 has no vkGetInstanceProcAddr"), "message: %s",
              lkv_last_error());
}

Test(vulkan, no_driver_is_unavailable_with_the_reason)
{
    /* The loader finds no ICD at all. */
    setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
    setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
    lkv_device_report reps[64];
    int n = 0;
    const lkv_device_report *r = vulkan_report(reps, &n);
    if (strstr(r->reason, "no Vulkan loader"))
        cr_skip_test("no Vulkan loader on this machine: %s", r->reason);
    cr_assert_eq(r->available, 0);
    cr_assert(strstr(r->reason, "driver") || strstr(r->reason, "no device"), "reason: %s", r->reason);
    lkv_runtime *rt = NULL;
    cr_assert_eq(lkv_runtime_open("vulkan:0", &rt), LKV_UNAVAILABLE);
    cr_assert_null(rt);
}

Test(vulkan, devices_are_listed_with_name_driver_memory_and_uuid)
{
    lkv_runtime *rt = vulkan_or_skip();
    lkv_runtime_close(rt);
    lkv_device_report reps[64];
    int n = 0;
    const lkv_device_report *r = vulkan_report(reps, &n);
    cr_assert_eq(r->available, 1, "%s", r->reason);
    cr_assert_neq(r->name[0], '\0');
    cr_assert_neq(r->driver[0], '\0');
    cr_assert_gt(r->memory_bytes, 0);
    cr_assert_eq(strlen(r->uuid), 36, "uuid '%s'", r->uuid);
}

/* LazyEviction on 2 layers, 8 query heads over 2 KV heads, window 16 (an
 * eviction every 16 steps), budget 96 or capacity - 16 if smaller (then the
 * rows fill to the last slot before each eviction); its decisions depend on
 * the attention, so they check the data the kernels compute and move. */
static lkv_cache_config lazy_config(lkv_dtype dtype, int32_t head_dim, int32_t capacity)
{
    lkv_cache_config cfg = tu_config(2, 8, 2, head_dim, capacity);
    cfg.dtype = dtype;
    TU_OK(lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY));
    cfg.policy.window = 16;
    cfg.policy.budget = capacity - 16 < 96 ? capacity - 16 : 96;
    cfg.policy.alpha = 1e-3f;
    return cfg;
}

/* One cache on the cpu oracle and one on the device, decoded side by side
 * with the same random data. Records instead of asserting, so it can run on
 * a thread of its own (Criterion asserts belong to the test's thread). */
typedef struct side_by_side {
    lkv_cache_config cfg;
    lkv_cache *ref, *dev;
    int steps;
    uint64_t seed;
    lkv_status status; /* the first failure */
    double worst;      /* largest relative output difference */
} side_by_side;

static void *decode_side_by_side(void *arg)
{
    side_by_side *job = arg;
    size_t qn = (size_t)job->cfg.q_heads * (size_t)job->cfg.head_dim;
    size_t kvn = (size_t)job->cfg.kv_heads * (size_t)job->cfg.head_dim;
    float *buf = malloc(sizeof(float) * (3 * qn + 2 * kvn));
    if (!buf) {
        job->status = LKV_OUT_OF_MEMORY;
        return NULL;
    }
    float *q = buf, *k = q + qn, *v = k + kvn, *out_ref = v + kvn, *out_dev = out_ref + qn;
    uint64_t rng = job->seed;
    for (int s = 0; s < job->steps && job->status == LKV_OK; s++) {
        tu_fill_normal(q, qn, &rng, 1.5);
        tu_fill_normal(k, kvn, &rng, 1.5);
        tu_fill_normal(v, kvn, &rng, 1.0);
        for (int32_t l = 0; l < job->cfg.layers && job->status == LKV_OK; l++) {
            lkv_decode_io a = {q, k, v, out_ref, LKV_MEMORY_HOST};
            lkv_decode_io b = {q, k, v, out_dev, LKV_MEMORY_HOST};
            job->status = lkv_cache_decode(job->ref, 0, l, &a);
            if (job->status == LKV_OK)
                job->status = lkv_cache_decode(job->dev, 0, l, &b);
            for (size_t i = 0; job->status == LKV_OK && i < qn; i++) {
                double e = fabs((double)out_dev[i] - out_ref[i]) / fmax(1.0, fabs(out_ref[i]));
                job->worst = e > job->worst ? e : job->worst;
            }
        }
    }
    free(buf);
    return NULL;
}

static void side_by_side_open(side_by_side *job, lkv_runtime *rt, const lkv_cache_config *cfg,
                              int steps, uint64_t seed)
{
    *job = (side_by_side){.cfg = *cfg, .steps = steps, .seed = seed};
    TU_OK(lkv_cache_create(tu_runtime(), cfg, &job->ref));
    TU_OK(lkv_cache_create(rt, cfg, &job->dev));
}

/* What every run must show: no failure, outputs within f32 rounding of the
 * oracle's (f32 accumulation over <= 200 slots against double; f16 storage
 * rounds the same stored values on both sides), evictions, and the same
 * kept positions in every head. Destroys both caches. */
static void side_by_side_check(side_by_side *job)
{
    cr_assert_eq(job->status, LKV_OK, "decode failed: %s: %s", lkv_status_name(job->status),
                 lkv_last_error());
    cr_assert_lt(job->worst, 1e-5, "worst relative output error %g", job->worst);
    lkv_cache_stats st;
    TU_OK(lkv_cache_get_stats(job->dev, &st));
    cr_assert_gt(st.evictions, 0, "the run must evict to test eviction");
    tu_expect_same_positions(job->ref, job->dev, "vulkan");
    lkv_cache_destroy(job->ref);
    lkv_cache_destroy(job->dev);
}

static void decode_matches_cpu(lkv_runtime *rt, const lkv_cache_config *cfg, int steps)
{
    side_by_side job;
    side_by_side_open(&job, rt, cfg, steps, 42);
    decode_side_by_side(&job);
    side_by_side_check(&job);
}

static void run_and_require_silence(lkv_dtype dtype, int32_t head_dim, int32_t capacity)
{
    lkv_runtime *rt = vulkan_or_skip();
    lkv_cache_config cfg = lazy_config(dtype, head_dim, capacity);
    decode_matches_cpu(rt, &cfg, 150);
    lkv_runtime_close(rt);
    cr_assert_eq(atomic_load(&lkv_vk_validation_messages), 0,
                 "the validation layer sent %d message(s); see stderr",
                 atomic_load(&lkv_vk_validation_messages));
}

Test(vulkan, f32_decode_with_evictions_matches_the_cpu_oracle)
{
    run_and_require_silence(LKV_DTYPE_F32, 64, 200);
}

Test(vulkan, f16_decode_with_evictions_matches_the_cpu_oracle)
{
    run_and_require_silence(LKV_DTYPE_F16, 64, 200);
}

Test(vulkan, odd_bf16_rows_decode_with_evictions_match_the_cpu_oracle)
{
    /* bf16 shares f16's 2-byte compaction (words from halves on odd rows)
     * but reads each half as bits << 16 */
    run_and_require_silence(LKV_DTYPE_BF16, 63, 201);
}

Test(vulkan, binding_windows_of_long_caches_give_the_same_results)
{
    /* 64 KiB bindings hold one 50 KiB f32 K/V row (200 slots x 64 x 4
     * bytes) at a time, so attend and compact run a window per cache head. */
    setenv("LAZYKV_VULKAN_MAX_RANGE", "65536", 1);
    run_and_require_silence(LKV_DTYPE_F32, 64, 200);
}

Test(vulkan, odd_f16_rows_compact_one_row_at_a_time)
{
    /* capacity 201 x head_dim 63 is odd: rows share a 4-byte word, and
     * slots straddle words, so compaction assembles words from halves. */
    run_and_require_silence(LKV_DTYPE_F16, 63, 201);
}

Test(vulkan, full_odd_f16_rows_read_their_last_value)
{
    /* 113 x 63 halves per row and one KV head, so a window of one full row
     * ends mid-word: that word must still be inside the binding for attend
     * and compact to read the row's last value. (Whether a device returns 0
     * for the part outside a binding is up to it; this lavapipe reads the
     * value either way, a bounds-checking GPU would not.) */
    lkv_runtime *rt = vulkan_or_skip();
    lkv_cache_config cfg = lazy_config(LKV_DTYPE_F16, 63, 113);
    cfg.q_heads = 3;
    cfg.kv_heads = 1;
    decode_matches_cpu(rt, &cfg, 150);
    lkv_runtime_close(rt);
    cr_assert_eq(atomic_load(&lkv_vk_validation_messages), 0);
}

/* Writes and recorded work keep their order: a write issued after a
 * recorded copy does not reach the copy's source first (small writes are
 * recorded inline; large ones wait for the recorded work). */
static void write_after_copy(size_t bytes)
{
    lkv_runtime *rt = vulkan_or_skip();
    unsigned char *p1 = malloc(bytes), *p2 = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) {
        p1[i] = (unsigned char)(i * 7 + 1);
        p2[i] = (unsigned char)(i * 13 + 5);
    }
    lkv_buffer *a = NULL, *b = NULL;
    TU_OK(rt->ops->alloc(rt->dev, bytes, &a));
    TU_OK(rt->ops->alloc(rt->dev, bytes, &b));
    TU_OK(rt->ops->write(rt->dev, a, 0, p1, bytes));
    TU_OK(rt->ops->copy(rt->dev, b, 0, a, 0, bytes)); /* recorded, not yet run */
    TU_OK(rt->ops->write(rt->dev, a, 0, p2, bytes));
    TU_OK(rt->ops->read(rt->dev, b, 0, got, bytes));
    cr_assert_arr_eq(got, p1, bytes, "the copy saw a write issued after it");
    TU_OK(rt->ops->read(rt->dev, a, 0, got, bytes));
    cr_assert_arr_eq(got, p2, bytes, "the write was lost");
    rt->ops->free(rt->dev, a);
    rt->ops->free(rt->dev, b);
    free(p1);
    free(p2);
    free(got);
    lkv_runtime_close(rt);
    cr_assert_eq(atomic_load(&lkv_vk_validation_messages), 0);
}

Test(vulkan, a_small_write_after_recorded_work_lands_after_it)
{
    write_after_copy(256);
}

Test(vulkan, a_large_write_after_recorded_work_lands_after_it)
{
    write_after_copy(200000);
}

/* lazykv.h lets distinct caches be used from distinct threads; on one
 * Vulkan runtime they share its device, which must serialise them. */
Test(vulkan, two_threads_decode_two_caches_on_one_runtime)
{
    lkv_runtime *rt = vulkan_or_skip();
    lkv_cache_config cfgs[2] = {lazy_config(LKV_DTYPE_F16, 64, 200),
                                lazy_config(LKV_DTYPE_F32, 128, 120)};
    side_by_side jobs[2];
    for (int i = 0; i < 2; i++)
        side_by_side_open(&jobs[i], rt, &cfgs[i], 150, 99);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, decode_side_by_side, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        side_by_side_check(&jobs[i]);
    lkv_runtime_close(rt);
    cr_assert_eq(atomic_load(&lkv_vk_validation_messages), 0,
                 "the validation layer sent %d message(s); see stderr",
                 atomic_load(&lkv_vk_validation_messages));
}

Test(vulkan, workgroup_size_32_gives_the_same_decisions)
{
    setenv("LAZYKV_VULKAN_WG", "32", 1);
    run_and_require_silence(LKV_DTYPE_F16, 64, 200);
}

Test(vulkan, workgroup_size_256_gives_the_same_decisions)
{
    setenv("LAZYKV_VULKAN_WG", "256", 1);
    run_and_require_silence(LKV_DTYPE_F32, 128, 200);
}

/* The silence above means something only if messages are caught: a fill
 * of 2 bytes breaks a rule (sizes are multiples of 4) that the driver does
 * not check but the validation layer reports. Recorded through the
 * backend's own command buffer, as its ops record theirs. */
Test(vulkan, validation_messages_are_caught_and_counted)
{
    lkv_runtime *rt = vulkan_or_skip();
    lkv_buffer *buf = NULL;
    TU_OK(rt->ops->alloc(rt->dev, 256, &buf));
    int before = atomic_load(&lkv_vk_validation_messages);
    TU_OK(lkv_vk_begin(rt->dev));
    rt->dev->vi.fn.vkCmdFillBuffer(rt->dev->cmd, buf->buf, 0, 2, 0);
    TU_OK(lkv_vk_wait_idle(rt->dev, 1));
    cr_assert_gt(atomic_load(&lkv_vk_validation_messages), before,
                 "a broken rule went unreported: is the messenger installed?");
    rt->ops->free(rt->dev, buf);
    lkv_runtime_close(rt);
}
