/* Lanes of the shared CUDA/HIP host code (core/backend.h, "Lanes:") on the
 * emulator, through the gpu-emu ops table: a lane is a second handle on
 * the same memory with scratch of its own, work crosses between the two
 * only behind marks, and with events lagging (as on a device that is
 * behind) a wait makes the waiting stream's later work depend on the
 * other's mark, so a host wait for one makes the other's mark pass. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "emu_driver.h"
#include "error.h"
#include "emu_runtime.h"
#include "test_util.h"
#include "twin_caches.h"

static const lkv_backend_ops *emu = &lkv_backend_gpu_emu;

enum { ROWS = 2, CAP = 16, KEEP = 5 };

/* Whether `m`'s event has passed, as the driver of `d` tells it. */
static int mark_passed(lkv_device *d, const lkv_mark *m)
{
    int done = -1;
    TU_OK(lkv_emu_driver.event_done(d->api, m->event, &done));
    return done;
}

static void scores_of(float *s)
{
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < CAP; j++)
            s[r * CAP + j] = (float)((j * 7 + r * 3) % CAP); /* distinct within a row */
}

/* Row r's KEEP highest scores, ascending by slot (select's contract). */
static void expected_kept(const float *s, int r, int32_t *out)
{
    int n = 0;
    for (int j = 0; j < CAP; j++) {
        int above = 0;
        for (int i = 0; i < CAP; i++)
            above += s[r * CAP + i] > s[r * CAP + j];
        if (above < KEEP)
            out[n++] = j;
    }
    cr_assert_eq(n, KEEP);
}

/* Main writes the scores and marks; the lane waits, copies them into a
 * buffer of main's, selects from the copy into a buffer of its own, and
 * marks; main waits and reads both back. */
static void main_writes_lane_copies_and_selects_main_reads(int lag)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    lkv_emu_lag_events(d->api, lag);
    TU_OK(emu->lane_open(d, &lane));
    cr_assert(lane && lane != d && lane->api != d->api);
    lkv_buffer *scores = NULL, *copy = NULL, *kept = NULL;
    TU_OK(emu->alloc(d, sizeof(float) * ROWS * CAP, &scores));
    TU_OK(emu->alloc(d, sizeof(float) * ROWS * CAP, &copy));
    TU_OK(emu->alloc(lane, sizeof(int32_t) * ROWS * CAP, &kept));
    float s[ROWS * CAP];
    scores_of(s);
    TU_OK(emu->write(d, scores, 0, s, sizeof s));
    lkv_mark *written = NULL, *selected = NULL;
    TU_OK(emu->mark(d, &written));
    TU_OK(emu->wait_mark(lane, written));
    TU_OK(emu->copy(lane, copy, 0, scores, 0, sizeof s));
    int32_t rows[ROWS] = {0, 1}, row_n[ROWS] = {CAP, CAP}, row_k[ROWS] = {KEEP, KEEP};
    lkv_select_args sel = {.capacity = CAP, .n_rows = ROWS, .rows = rows, .row_n = row_n,
                           .row_k = row_k, .scores = copy, .kept = kept};
    TU_OK(emu->select(lane, &sel));
    TU_OK(emu->mark(lane, &selected));
    TU_OK(emu->wait_mark(d, selected));
    float got_s[ROWS * CAP];
    int32_t got_k[ROWS * CAP];
    TU_OK(emu->read(d, copy, 0, got_s, sizeof got_s));
    TU_OK(emu->read(d, kept, 0, got_k, sizeof got_k));
    cr_assert(memcmp(got_s, s, sizeof s) == 0, "the lane's copy differs from main's write");
    for (int r = 0; r < ROWS; r++) {
        int32_t want[KEEP];
        expected_kept(s, r, want);
        for (int i = 0; i < KEEP; i++)
            cr_assert_eq(got_k[r * CAP + i], want[i], "lag %d row %d kept[%d]", lag, r, i);
    }
    cr_assert(mark_passed(d, written) && mark_passed(lane, selected),
              "main's read waited for everything");
    emu->mark_free(d, written);
    emu->mark_free(lane, selected);
    emu->free(lane, scores); /* either handle frees either's buffers */
    emu->free(d, kept);
    emu->free(d, copy);
    emu->close(lane);
    emu->close(d);
}

Test(gpu_emu_lanes, work_crosses_between_main_and_lane_behind_marks)
{
    main_writes_lane_copies_and_selects_main_reads(0);
}

Test(gpu_emu_lanes, work_crosses_between_main_and_lane_behind_marks_with_events_lagging)
{
    main_writes_lane_copies_and_selects_main_reads(1);
}

/* With events lagging, a mark passes when the host waits for its own
 * stream, or for work of the other stream that waited for it; never
 * through the other stream alone. */
Test(gpu_emu_lanes, a_host_wait_for_work_behind_a_mark_makes_the_mark_pass)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    lkv_emu_lag_events(d->api, 1);
    TU_OK(emu->lane_open(d, &lane));
    lkv_buffer *b = NULL;
    TU_OK(emu->alloc(d, 64, &b));
    int32_t x = 7;
    TU_OK(emu->write(d, b, 0, &x, 4));
    lkv_mark *alone = NULL, *waited = NULL, *behind = NULL;
    TU_OK(emu->mark(d, &alone));
    TU_OK(emu->sync(lane));
    cr_assert_not(mark_passed(d, alone), "the lane's sync passed a mark it never waited for");
    TU_OK(emu->mark(d, &waited));
    TU_OK(emu->wait_mark(lane, waited));
    TU_OK(emu->write(lane, b, 4, &x, 4));
    TU_OK(emu->mark(lane, &behind));
    cr_assert_not(mark_passed(d, waited), "events lag: nothing waited for the device yet");
    cr_assert_not(mark_passed(lane, behind));
    TU_OK(emu->sync(lane));
    cr_assert(mark_passed(lane, behind));
    cr_assert(mark_passed(d, waited), "the lane's work behind main's mark finished before it");
    cr_assert(mark_passed(d, alone), "an earlier mark of main passed with the later one");
    /* and the other way: main's wait for the lane's mark */
    lkv_mark *lane_mark = NULL, *main_after = NULL;
    TU_OK(emu->write(lane, b, 8, &x, 4));
    TU_OK(emu->mark(lane, &lane_mark));
    TU_OK(emu->wait_mark(d, lane_mark));
    TU_OK(emu->mark(d, &main_after));
    cr_assert_not(mark_passed(lane, lane_mark));
    TU_OK(emu->sync(d));
    cr_assert(mark_passed(d, main_after) && mark_passed(lane, lane_mark));
    emu->mark_free(d, alone);
    emu->mark_free(d, waited);
    emu->mark_free(d, main_after);
    emu->mark_free(lane, behind);
    emu->mark_free(lane, lane_mark);
    emu->free(d, b);
    emu->close(lane);
    emu->close(d);
}

/* mark_free while a wait on the mark is queued: the wait still holds (the
 * driver keeps the record, not the event; ASan sees a use after free). */
Test(gpu_emu_lanes, a_wait_holds_after_its_mark_is_freed)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    lkv_emu_lag_events(d->api, 1);
    TU_OK(emu->lane_open(d, &lane));
    lkv_mark *before = NULL, *freed = NULL;
    TU_OK(emu->mark(d, &before));
    TU_OK(emu->mark(d, &freed));
    TU_OK(emu->wait_mark(lane, freed));
    emu->mark_free(d, freed);
    TU_OK(emu->sync(lane));
    cr_assert(mark_passed(d, before), "the lane's wait for the freed mark was dropped");
    emu->mark_free(d, before);
    emu->close(lane);
    emu->close(d);
}

/* Each handle makes its own staging ring, row lists and op scratch on
 * first use, so the two never write each other's. */
Test(gpu_emu_lanes, the_lane_shares_no_scratch_with_its_device)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    TU_OK(emu->lane_open(d, &lane));
    cr_assert(lane->lane && !d->lane);
    lkv_buffer *scores = NULL, *kept = NULL;
    TU_OK(emu->alloc(d, sizeof(float) * ROWS * CAP, &scores));
    TU_OK(emu->alloc(d, sizeof(int32_t) * ROWS * CAP, &kept));
    float s[ROWS * CAP];
    scores_of(s);
    TU_OK(emu->write(d, scores, 0, s, sizeof s));
    TU_OK(emu->sync(d));
    int32_t rows[ROWS] = {0, 1}, row_n[ROWS] = {CAP, CAP}, row_k[ROWS] = {KEEP, KEEP};
    lkv_select_args sel = {.capacity = CAP, .n_rows = ROWS, .rows = rows, .row_n = row_n,
                           .row_k = row_k, .scores = scores, .kept = kept};
    TU_OK(emu->select(d, &sel));
    TU_OK(emu->select(lane, &sel));
    TU_OK(emu->sync(lane));
    cr_assert(d->lists && lane->lists && d->lists->ptr != lane->lists->ptr);
    cr_assert(d->stages[0].host && lane->stages[0].host &&
              d->stages[0].host != lane->stages[0].host);
    emu->free(d, scores);
    emu->free(d, kept);
    emu->close(lane);
    emu->close(d);
}

/* Device memory is the device's, not the handle's: a buffer the lane made
 * outlives the lane. */
Test(gpu_emu_lanes, a_buffer_made_through_the_lane_outlives_it)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    TU_OK(emu->lane_open(d, &lane));
    lkv_buffer *b = NULL;
    TU_OK(emu->alloc(lane, 16, &b));
    int32_t x = 42, y = 0;
    TU_OK(emu->write(lane, b, 0, &x, 4));
    emu->close(lane); /* waits for the lane's work */
    TU_OK(emu->read(d, b, 0, &y, 4));
    cr_assert_eq(y, 42);
    emu->free(d, b);
    emu->close(d);
}

Test(gpu_emu_lanes, a_device_on_the_engines_stream_has_no_lane)
{
    int engine_stream = 0;
    lkv_external_device ext = {.backend = "gpu-emu", .device = 0, .stream = &engine_stream};
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open_external(&ext, &d));
    cr_assert_eq(emu->lane_open(d, &lane), LKV_UNSUPPORTED);
    cr_assert(strstr(lkv_last_error(), "engine's stream"), "%s", lkv_last_error());
    cr_assert_null(lane);
    emu->close(d);
}

/* ---- two threads, one handle each ---- */

typedef struct worker {
    lkv_device *dev;
    int32_t seed;
    int failures;
} worker;

/* Allocations, copies and reads on one handle while the other thread does
 * the same on the other: the memory both share stays consistent. */
static void *churn(void *arg)
{
    worker *w = arg;
    for (int32_t i = 0; i < 200; i++) {
        lkv_buffer *b = NULL, *c = NULL;
        int32_t in[32], out[32];
        for (int j = 0; j < 32; j++)
            in[j] = w->seed * 100000 + i * 32 + j;
        int ok = emu->alloc(w->dev, sizeof in, &b) == LKV_OK &&
                 emu->alloc(w->dev, sizeof in, &c) == LKV_OK &&
                 emu->write(w->dev, b, 0, in, sizeof in) == LKV_OK &&
                 emu->copy(w->dev, c, 0, b, 0, sizeof in) == LKV_OK &&
                 emu->read(w->dev, c, 0, out, sizeof out) == LKV_OK;
        w->failures += !ok || memcmp(in, out, sizeof in) != 0;
        if (b)
            emu->free(w->dev, b);
        if (c)
            emu->free(w->dev, c);
    }
    return NULL;
}

Test(gpu_emu_lanes, the_device_and_its_lane_work_from_two_threads_at_once)
{
    lkv_device *d = NULL, *lane = NULL;
    TU_OK(emu->open(0, &d));
    lkv_emu_lag_events(d->api, 1);
    TU_OK(emu->lane_open(d, &lane));
    worker a = {.dev = d, .seed = 1}, b = {.dev = lane, .seed = 2};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, churn, &b), 0);
    churn(&a);
    pthread_join(t, NULL);
    cr_assert_eq(a.failures, 0, "the device's thread");
    cr_assert_eq(b.failures, 0, "the lane's thread");
    emu->close(lane);
    emu->close(d);
}

/* Through the cache: every policy's background cache evicts on a lane of
 * the CUDA/HIP host code (eviction_lane), layer by layer, and decides as
 * the inline cache bit for bit, with events on time and lagging (the
 * lane's marks then pass only at host waits, as on a device behind). */
static void twins_on_a_lane(const char *lag)
{
    setenv("LKV_EMU_LAG_EVENTS", lag, 1);
    lkv_runtime *rt = emu_runtime("32", "4");
    for (size_t i = 0; i < TWIN_POLICIES; i++) {
        lkv_cache_config cfg = twin_config(twin_every_policy[i]);
        lkv_cache *in = NULL, *bg = NULL;
        TU_OK(lkv_cache_create(rt, &cfg, &in));
        cfg.eviction = LKV_EVICTION_BACKGROUND;
        TU_OK(lkv_cache_create(rt, &cfg, &bg));
        twin_run(in, bg, 31 + i, 30, lkv_policy_name(twin_every_policy[i]));
        lkv_cache_stats st;
        TU_OK(lkv_cache_get_stats(bg, &st));
        cr_expect_eq(st.eviction_lane, 1, "%s", lkv_policy_name(twin_every_policy[i]));
        lkv_cache_destroy(in);
        lkv_cache_destroy(bg);
    }
    lkv_runtime_close(rt);
    unsetenv("LKV_EMU_LAG_EVENTS");
}

Test(gpu_emu_lanes, every_policy_evicting_on_a_lane_decides_as_inline, .timeout = 900)
{
    twins_on_a_lane("0");
}

Test(gpu_emu_lanes, every_policy_evicting_on_a_lane_decides_as_inline_with_events_lagging,
     .timeout = 900)
{
    twins_on_a_lane("1");
}
