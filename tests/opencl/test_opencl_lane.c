/* Lanes on OpenCL (core/backend.h, "Lanes:"), through the backend's ops
 * table as the core calls it: a lane is a second in-order queue on the
 * device's context; a mark made on one handle and waited on by the other
 * orders their work with no host wait; buffers of either serve both; the
 * lane builds its own kernels (an op runs there) and closes without
 * touching what its device owns; an engine's borrowed device gets a lane
 * of its own queue, ordered with the engine's. The orderings are checked
 * on work big enough (megabytes of copies) that a missing wait shows as
 * stale bytes. Skips without an OpenCL device unless
 * LAZYKV_REQUIRE_BACKENDS names opencl. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"
#include "test_util.h"

static const lkv_backend_ops *const ops = &lkv_backend_opencl;

static int required(void)
{
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    return req && strstr(req, "opencl") != NULL;
}

static lkv_device *device_or_skip(void)
{
    lkv_device *d = NULL;
    lkv_status st = ops->open(0, &d);
    if (st == LKV_OK)
        return d;
    cr_assert(!required(), "opencl is required here but unavailable: %s", lkv_last_error());
    cr_skip_test("opencl unavailable: %s", lkv_last_error());
    return NULL;
}

static lkv_device *lane_of(lkv_device *d)
{
    cr_assert_not_null(ops->lane_open, "the opencl ops table has no lanes");
    lkv_device *lane = NULL;
    TU_OK(ops->lane_open(d, &lane));
    cr_assert_not_null(lane);
    return lane;
}

/* Work issued to `to` from now on starts after everything issued to
 * `from` so far. The mark is freed at once: the wait already issued holds. */
static void hand_over(lkv_device *from, lkv_device *to)
{
    lkv_mark *m = NULL;
    TU_OK(ops->mark(from, &m));
    TU_OK(ops->wait_mark(to, m));
    ops->mark_free(from, m);
}

/* Words no zero-filled or half-copied buffer holds by chance. */
static uint32_t word_at(uint32_t seed, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ seed;
    return x ^ (x >> 15) ^ 0x80000001u;
}

static uint32_t *pattern(size_t words, uint32_t seed)
{
    uint32_t *p = malloc(words * 4);
    cr_assert_not_null(p);
    for (size_t i = 0; i < words; i++)
        p[i] = word_at(seed, i);
    return p;
}

static void expect_words(const uint32_t *got, const uint32_t *want, size_t words, const char *what)
{
    for (size_t i = 0; i < words; i++)
        cr_assert_eq(got[i], want[i], "%s: word %zu is 0x%08x, not 0x%08x", what, i, got[i],
                     want[i]);
}

#define BIG_WORDS ((size_t)1 << 20) /* 4 MiB: a staged write, queued without a host wait */

Test(opencl_lane, a_lane_is_a_second_queue_on_the_device_s_context)
{
    lkv_device *d = device_or_skip();
    lkv_device *lane = lane_of(d);
    cr_assert_neq((void *)lane, (void *)d);
    cr_assert_neq((void *)lane->queue, (void *)d->queue, "the lane issues to the device's queue");
    cr_assert_eq((void *)lane->ctx, (void *)d->ctx, "the lane is on another context");
    ops->close(lane);
    ops->close(d);
}

/* The device writes, the lane copies and gathers, the device reads. */
Test(opencl_lane, the_lane_copies_and_gathers_what_the_device_wrote_and_the_device_reads_it)
{
    lkv_device *d = device_or_skip();
    lkv_device *lane = lane_of(d);
    uint32_t *in = pattern(BIG_WORDS, 7), *out = calloc(BIG_WORDS, 4);
    lkv_buffer *src = NULL, *dst = NULL;
    TU_OK(ops->alloc(d, BIG_WORDS * 4, &src));
    TU_OK(ops->alloc(d, BIG_WORDS * 4, &dst));
    TU_OK(ops->write(d, src, 0, in, BIG_WORDS * 4));
    hand_over(d, lane);
    TU_OK(ops->copy(lane, dst, 0, src, 0, BIG_WORDS * 4));
    /* the two first 4-word spans swap places, by a kernel built on the lane */
    const uint32_t from[2] = {0, 4}, to[2] = {4, 0};
    lkv_gather_args g = {.n = 2, .words = 4, .src_word = from, .dst_word = to, .buf = dst};
    TU_OK(ops->gather(lane, &g));
    hand_over(lane, d);
    TU_OK(ops->read(d, dst, 0, out, BIG_WORDS * 4));
    for (int i = 0; i < 4; i++) {
        uint32_t t = in[i];
        in[i] = in[4 + i];
        in[4 + i] = t;
    }
    expect_words(out, in, BIG_WORDS, "the device's read of the lane's copy");
    ops->free(d, src);
    ops->free(d, dst);
    ops->close(lane);
    ops->close(d);
    free(in);
    free(out);
}

#define CHAIN 12
#define CHAIN_WORDS ((size_t)1 << 19) /* 2 MiB a link */

/* Link i, issued by the device when i is even and the lane when odd, after
 * a hand-over from the other: buf[i] = buf[i-1] copied, then stamp i
 * written into its own word. Any link run before the one it copies loses
 * that link's stamp (or the whole pattern), and the last buffer shows it. */
Test(opencl_lane, work_handed_back_and_forth_between_the_queues_runs_in_order)
{
    lkv_device *d = device_or_skip();
    lkv_device *lane = lane_of(d);
    lkv_device *on[2] = {d, lane};
    uint32_t *want = pattern(CHAIN_WORDS, 11), *got = calloc(CHAIN_WORDS, 4);
    lkv_buffer *buf[CHAIN];
    for (int i = 0; i < CHAIN; i++) /* each made by the handle that does not fill it */
        TU_OK(ops->alloc(on[(i + 1) % 2], CHAIN_WORDS * 4, &buf[i]));
    hand_over(lane, d); /* the lane's zero fill of buf[0] before the device's write */
    TU_OK(ops->write(d, buf[0], 0, want, CHAIN_WORDS * 4));
    for (int i = 1; i < CHAIN; i++) {
        lkv_device *h = on[i % 2];
        hand_over(on[(i - 1) % 2], h);
        TU_OK(ops->copy(h, buf[i], 0, buf[i - 1], 0, CHAIN_WORDS * 4));
        size_t at = (size_t)i * (CHAIN_WORDS / CHAIN);
        want[at] = 0xC0DE0000u + (uint32_t)i;
        TU_OK(ops->write(h, buf[i], at * 4, &want[at], 4));
    }
    hand_over(on[(CHAIN - 1) % 2], d);
    TU_OK(ops->read(d, buf[CHAIN - 1], 0, got, CHAIN_WORDS * 4));
    expect_words(got, want, CHAIN_WORDS, "the last link");
    for (int i = 0; i < CHAIN; i++)
        ops->free(on[i % 2], buf[i]); /* by the other handle than the one that made it */
    ops->close(lane);
    ops->close(d);
    free(want);
    free(got);
}

/* close waits for the lane's work, and what the lane allocated is the
 * context's: the device still reads and frees it. */
Test(opencl_lane, a_closed_lane_s_work_is_done_and_its_buffers_serve_the_device)
{
    lkv_device *d = device_or_skip();
    lkv_device *lane = lane_of(d);
    uint32_t *in = pattern(BIG_WORDS, 23), *out = calloc(BIG_WORDS, 4);
    lkv_buffer *a = NULL, *b = NULL;
    TU_OK(ops->alloc(lane, BIG_WORDS * 4, &a));
    TU_OK(ops->alloc(lane, BIG_WORDS * 4, &b));
    TU_OK(ops->write(lane, a, 0, in, BIG_WORDS * 4));
    TU_OK(ops->copy(lane, b, 0, a, 0, BIG_WORDS * 4));
    ops->close(lane); /* no mark: the close itself waits */
    TU_OK(ops->read(d, b, 0, out, BIG_WORDS * 4));
    expect_words(out, in, BIG_WORDS, "the device's read after the lane closed");
    ops->free(d, a);
    ops->free(d, b);
    ops->close(d);
    free(in);
    free(out);
}

/* One thread's gathers on its own handle and buffer: spans 0..3 and 4..7
 * swap each round. Statuses, not asserts: Criterion asserts only on the
 * test's own thread. */
typedef struct swapper {
    lkv_device *h;
    lkv_buffer *buf;
    int rounds;
    lkv_status st;
    pthread_t thread;
} swapper;

static void *swap_rounds(void *arg)
{
    swapper *s = arg;
    const uint32_t from[2] = {0, 4}, to[2] = {4, 0};
    lkv_gather_args g = {.n = 2, .words = 4, .src_word = from, .dst_word = to, .buf = s->buf};
    s->st = LKV_OK;
    for (int r = 0; r < s->rounds && s->st == LKV_OK; r++)
        s->st = ops->gather(s->h, &g);
    return NULL;
}

/* The two handles on two threads at once, each under its own lock: a kernel
 * shared between them would take the other thread's arguments now and then. */
Test(opencl_lane, ops_on_the_device_and_its_lane_from_two_threads_keep_to_their_buffers)
{
    lkv_device *d = device_or_skip();
    lkv_device *lane = lane_of(d);
    swapper s[2] = {{.h = d, .rounds = 201}, {.h = lane, .rounds = 201}};
    uint32_t want[2][16], got[16];
    for (int i = 0; i < 2; i++) {
        for (int w = 0; w < 16; w++)
            want[i][w] = word_at(41 + (uint32_t)i, (size_t)w);
        TU_OK(ops->alloc(s[i].h, sizeof want[i], &s[i].buf));
        TU_OK(ops->write(s[i].h, s[i].buf, 0, want[i], sizeof want[i]));
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&s[i].thread, NULL, swap_rounds, &s[i]), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_join(s[i].thread, NULL), 0);
    for (int i = 0; i < 2; i++) {
        TU_OK(s[i].st);
        TU_OK(ops->read(s[i].h, s[i].buf, 0, got, sizeof got));
        for (int w = 0; w < 4; w++) { /* an odd number of swaps */
            uint32_t t = want[i][w];
            want[i][w] = want[i][4 + w];
            want[i][4 + w] = t;
        }
        expect_words(got, want[i], 16, i ? "the lane's buffer" : "the device's buffer");
        ops->free(s[i].h, s[i].buf);
    }
    ops->close(lane);
    ops->close(d);
}

Test(opencl_lane, waiting_on_no_mark_is_an_invalid_argument)
{
    lkv_device *d = device_or_skip();
    cr_assert_eq(ops->wait_mark(d, NULL), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "mark"), "message: %s", lkv_last_error());
    ops->close(d);
}

/* An engine's context and queue, made as an engine makes them. */
typedef struct engine {
    lkv_cl_lib lib;
    cl_context ctx;
    cl_command_queue queue;
    cl_mem mem;
} engine;

static void engine_open(engine *e, size_t bytes)
{
    memset(e, 0, sizeof *e);
    lkv_status st = lkv_cl_load(&e->lib);
    if (st != LKV_OK) {
        cr_assert(!required(), "opencl is required here: %s", lkv_last_error());
        cr_skip_test("no OpenCL: %s", lkv_last_error());
    }
    cl_context_properties props[3] = {LKV_CL_CONTEXT_PLATFORM,
                                      (cl_context_properties)e->lib.dev_platform[0], 0};
    cl_int err = 0;
    e->ctx = e->lib.fn.clCreateContext(props, 1, &e->lib.devs[0], NULL, NULL, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
    e->queue = e->lib.fn.clCreateCommandQueue(e->ctx, e->lib.devs[0], 0, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
    e->mem = e->lib.fn.clCreateBuffer(e->ctx, LKV_CL_MEM_READ_WRITE, bytes, NULL, &err);
    cr_assert_eq(err, LKV_CL_SUCCESS);
}

static void engine_close(engine *e)
{
    cr_assert_eq(e->lib.fn.clFinish(e->queue), LKV_CL_SUCCESS, "the engine's queue broke");
    e->lib.fn.clReleaseMemObject(e->mem);
    e->lib.fn.clReleaseCommandQueue(e->queue);
    e->lib.fn.clReleaseContext(e->ctx);
    lkv_cl_unload(&e->lib);
}

/* The engine writes on its queue, lazykv's mark on the borrowed device
 * covers it, the lane copies it into its own buffer and back into the
 * engine's at an offset, and the engine's blocking read, after the
 * device's wait, sees the copy; the engine's objects outlive both. */
Test(opencl_lane, a_lane_of_an_engine_s_device_is_ordered_with_the_engine_s_queue)
{
    engine e;
    engine_open(&e, BIG_WORDS * 8);
    lkv_external_device ext = {.backend = "opencl", .context = e.ctx, .stream = e.queue,
                               .physical_device = e.lib.devs[0]};
    lkv_device *d = NULL;
    TU_OK(ops->open_external(&ext, &d));
    lkv_device *lane = lane_of(d);
    cr_assert_neq((void *)lane->queue, (void *)e.queue, "the lane issues to the engine's queue");
    uint32_t *in = pattern(BIG_WORDS, 31), *out = calloc(BIG_WORDS, 4);
    cr_assert_eq(e.lib.fn.clEnqueueWriteBuffer(e.queue, e.mem, LKV_CL_FALSE, 0, BIG_WORDS * 4, in,
                                               0, NULL, NULL), LKV_CL_SUCCESS);
    lkv_buffer *view = NULL, *mine = NULL;
    TU_OK(ops->wrap(d, (uint64_t)(uintptr_t)e.mem, 0, BIG_WORDS * 8, &view));
    TU_OK(ops->alloc(lane, BIG_WORDS * 4, &mine));
    hand_over(d, lane);
    TU_OK(ops->copy(lane, mine, 0, view, 0, BIG_WORDS * 4));
    TU_OK(ops->copy(lane, view, BIG_WORDS * 4, mine, 0, BIG_WORDS * 4));
    hand_over(lane, d);
    cr_assert_eq(e.lib.fn.clEnqueueReadBuffer(e.queue, e.mem, LKV_CL_TRUE, BIG_WORDS * 4,
                                              BIG_WORDS * 4, out, 0, NULL, NULL), LKV_CL_SUCCESS);
    expect_words(out, in, BIG_WORDS, "the engine's read of the lane's copy");
    ops->free(lane, mine);
    ops->free(d, view);
    ops->close(lane);
    ops->close(d);
    engine_close(&e);
    free(in);
    free(out);
}
