/* The CPU SIMT emulator checked on its own kernels (emu_test_kernels.cpp)
 * against values computed here on the host: barriers, shuffles at both warp
 * widths, the errors it must report instead of hanging or guessing, and the
 * checks of its driver. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_driver.h"
#include "emu_test_kernels.h"
#include "error.h"
#include "lkv_kernel_abi.h"
#include "test_util.h"

#define WHY 512

static uint64_t addr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static int run(const lkv_emu_kernel *k, void **args, uint32_t gx, uint32_t block, int warp,
               char *why)
{
    uint32_t grid[3] = {gx, 1, 1};
    why[0] = '\0';
    return lkv_emu_run(k, args, grid, block, warp, why, WHY);
}

/* A block scan of 0..255 gives the triangular numbers: what the tests
 * after a failed launch run to show the emulator still works. */
static void expect_a_block_scan_right(void)
{
    int in[256], scan[256];
    for (int i = 0; i < 256; i++)
        in[i] = i;
    uint64_t pin = addr(in), pout = addr(scan);
    void *args[] = {&pin, &pout};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_block_scan, args, 1, 256, 32, why), 0, "%s", why);
    for (int i = 0; i < 256; i++)
        cr_assert_eq(scan[i], i * (i + 1) / 2, "thread %d", i);
}

static uint32_t next_u32(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* ---- barriers ---- */

Test(gpu_emu, block_sum_through_shared_memory_matches_the_host)
{
    enum { N = 1000, BLOCKS = 4 };
    float in[N], out[BLOCKS] = {0};
    uint64_t s = 1;
    for (int i = 0; i < N; i++)
        in[i] = (float)(next_u32(&s) % 1000); /* integers: every order sums exactly */
    uint64_t pin = addr(in), pout = addr(out);
    int n = N;
    void *args[] = {&pin, &pout, &n};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_block_sum, args, BLOCKS, 256, 32, why), 0, "%s", why);
    for (int b = 0; b < BLOCKS; b++) {
        float want = 0;
        for (int i = b * 256; i < (b + 1) * 256 && i < N; i++)
            want += in[i];
        cr_assert_eq(out[b], want, "block %d: %g, host %g", b, out[b], want);
    }
}

Test(gpu_emu, block_scan_with_a_barrier_per_round_matches_host_prefix_sums)
{
    static const uint32_t sizes[] = {64, 128, 256};
    uint64_t s = 2;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        uint32_t block = sizes[z];
        int in[3 * 256], out[3 * 256] = {0};
        for (uint32_t i = 0; i < 3 * block; i++)
            in[i] = (int)(next_u32(&s) % 101) - 50;
        uint64_t pin = addr(in), pout = addr(out);
        void *args[] = {&pin, &pout};
        char why[WHY];
        cr_assert_eq(run(&lkv_emu_test_block_scan, args, 3, block, 64, why), 0, "%s", why);
        for (uint32_t b = 0; b < 3; b++) {
            int acc = 0;
            for (uint32_t t = 0; t < block; t++) {
                acc += in[b * block + t];
                cr_assert_eq(out[b * block + t], acc, "block size %u, block %u, thread %u",
                             block, b, t);
            }
        }
    }
}

/* ---- shuffles ---- */

static void check_warp_exchanges(int warp)
{
    enum { BLOCKS = 2, BLOCK = 256, N = BLOCKS * BLOCK, SRC = 37 };
    unsigned in[N], sum[N] = {0}, bcast[N] = {0}, next[N] = {0}, own[N] = {0};
    float pair_f[N] = {0};
    int pair_i[N] = {0}, lane_of[N] = {0};
    uint64_t s = (uint64_t)warp;
    for (int i = 0; i < N; i++)
        in[i] = next_u32(&s) % (1u << 20);
    uint64_t p[] = {addr(in), addr(sum), addr(bcast), addr(next), addr(own), addr(pair_f),
                    addr(pair_i), addr(lane_of)};
    int src = SRC;
    void *args[] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6], &p[7], &src};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_warp, args, BLOCKS, BLOCK, warp, why), 0, "%s", why);
    for (int i = 0; i < N; i++) {
        int lane = i % warp, base = i - lane;
        unsigned want_sum = 0;
        for (int l = 0; l < warp; l++)
            want_sum += in[base + l];
        cr_assert_eq(lane_of[i], lane, "warp %d, thread %d: lane", warp, i);
        cr_assert_eq(sum[i], want_sum, "warp %d, thread %d: butterfly sum", warp, i);
        cr_assert_eq(bcast[i], in[base + SRC % warp], "warp %d, thread %d: lkv_shfl(v, %d)",
                     warp, i, SRC);
        cr_assert_eq(next[i], in[base + (lane + 1) % warp], "warp %d, thread %d: next lane",
                     warp, i);
        cr_assert_eq(own[i], in[i], "warp %d, thread %d: xor beyond the warp", warp, i);
        cr_assert_eq(pair_f[i], (float)in[i ^ 1] * 0.5f, "warp %d, thread %d: float", warp, i);
        cr_assert_eq(pair_i[i], -(int)in[i ^ 1], "warp %d, thread %d: int", warp, i);
    }
}

Test(gpu_emu, warp_exchanges_match_the_host_at_warp_32)
{
    check_warp_exchanges(32);
}

Test(gpu_emu, warp_exchanges_match_the_host_at_warp_64)
{
    check_warp_exchanges(64);
}

/* ---- errors it must report ---- */

static void expect_failure(const lkv_emu_kernel *k, void **args, int warp, const char *a,
                           const char *b)
{
    char why[WHY];
    cr_assert_eq(run(k, args, 2, 256, warp, why), -1, "%s should fail", k->name);
    cr_assert(strstr(why, a) && strstr(why, b), "%s: '%s' lacks '%s' or '%s'", k->name, why, a, b);
}

Test(gpu_emu, a_barrier_some_threads_skip_is_reported)
{
    int out[256] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    expect_failure(&lkv_emu_test_divergent_barrier, args, 32, "divergent __syncthreads",
                   "thread 64 finished");
}

Test(gpu_emu, threads_at_two_different_barriers_are_reported)
{
    int out[256] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    expect_failure(&lkv_emu_test_two_barriers, args, 32, "divergent __syncthreads",
                   "thread 64 waits at __syncthreads (emu_test_kernels.cpp:");
}

Test(gpu_emu, a_shuffle_a_lane_skips_is_reported_at_both_widths)
{
    int out[256] = {0}, missing = 5;
    uint64_t p = addr(out);
    void *args[] = {&p, &missing};
    expect_failure(&lkv_emu_test_shuffle_missing_lane, args, 32,
                   "shuffle not reached by every lane", "thread 5 finished");
    expect_failure(&lkv_emu_test_shuffle_missing_lane, args, 64,
                   "shuffle not reached by every lane", "thread 5 finished");
}

Test(gpu_emu, a_lane_at_a_barrier_while_its_warp_shuffles_is_reported)
{
    int out[256] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    expect_failure(&lkv_emu_test_shuffle_vs_barrier, args, 64, "shuffle not reached",
                   "thread 0 waits at __syncthreads");
}

Test(gpu_emu, the_emulator_runs_correctly_after_a_failed_launch)
{
    int out[256] = {0};
    uint64_t p = addr(out);
    void *bad[] = {&p};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_divergent_barrier, bad, 1, 256, 32, why), -1);
    expect_a_block_scan_right();
}

/* Each OS thread has its own fibers; launches take turns. */
static void *scan_repeatedly(void *arg)
{
    uintptr_t bad = 0;
    int seed = (int)(intptr_t)arg;
    for (int rep = 0; rep < 20 && !bad; rep++) {
        int in[2 * 128], out[2 * 128] = {0};
        for (int i = 0; i < 2 * 128; i++)
            in[i] = (i * 7 + seed + rep) % 13 - 6;
        uint64_t pin = addr(in), pout = addr(out);
        void *args[] = {&pin, &pout};
        char why[WHY];
        if (run(&lkv_emu_test_block_scan, args, 2, 128, rep % 2 ? 64 : 32, why) != 0)
            return (void *)1;
        for (int b = 0; b < 2; b++)
            for (int t = 0, acc = 0; t < 128; t++) {
                acc += in[b * 128 + t];
                bad |= out[b * 128 + t] != acc;
            }
    }
    return (void *)bad;
}

Test(gpu_emu, launches_from_two_os_threads_at_once_both_complete_correctly)
{
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, scan_repeatedly, (void *)(intptr_t)(i + 1)), 0);
    for (int i = 0; i < 2; i++) {
        void *bad = NULL;
        pthread_join(th[i], &bad);
        cr_assert_null(bad, "thread %d got a wrong scan or a failed launch", i);
    }
}

Test(gpu_emu, launch_shapes_outside_the_rules_are_refused_naming_the_value)
{
    int out[512] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    char why[WHY];
    static const uint32_t blocks[] = {96, 0, 512, 320};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        char want[32];
        snprintf(want, sizeof want, "block of %u threads", blocks[i]);
        cr_assert_eq(run(&lkv_emu_test_misc, args, 1, blocks[i], 32, why), -1);
        cr_assert(strstr(why, want), "%s", why);
    }
    cr_assert_eq(run(&lkv_emu_test_misc, args, 1, 64, 48, why), -1);
    cr_assert(strstr(why, "warp width 48"), "%s", why);
    uint32_t grids[][3] = {{0, 1, 1}, {1, 65536, 1}, {1, 1, 70000}};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(lkv_emu_run(&lkv_emu_test_misc, args, grids[i], 64, 32, why, WHY), -1);
        cr_assert(strstr(why, "grid"), "%s", why);
    }
}

/* ---- what kernels see ---- */

Test(gpu_emu, every_block_of_a_3d_grid_runs_once_with_its_coordinates)
{
    enum { GX = 3, GY = 2, GZ = 2, BLOCK = 128, NB = GX * GY * GZ };
    unsigned blocks[NB * 7];
    unsigned count = 0;
    memset(blocks, 0xab, sizeof blocks);
    uint64_t pb = addr(blocks), pc = addr(&count);
    void *args[] = {&pb, &pc};
    uint32_t grid[3] = {GX, GY, GZ};
    char why[WHY];
    cr_assert_eq(lkv_emu_run(&lkv_emu_test_geometry, args, grid, BLOCK, 32, why, WHY), 0, "%s",
                 why);
    for (unsigned z = 0, b = 0; z < GZ; z++)
        for (unsigned y = 0; y < GY; y++)
            for (unsigned x = 0; x < GX; x++, b++) {
                unsigned want[7] = {x, y, z, GX, GY, GZ, BLOCK};
                for (int k = 0; k < 7; k++)
                    cr_assert_eq(blocks[b * 7 + k], want[k], "block %u field %d", b, k);
            }
    cr_assert_eq(count, NB * BLOCK, "atomicAdd counted %u threads", count);
}

Test(gpu_emu, atomic_add_returns_the_old_value_in_shared_and_global_memory)
{
    enum { BLOCKS = 3, BLOCK = 128 };
    int tickets[BLOCKS * BLOCK];
    memset(tickets, 0xff, sizeof tickets);
    /* int addition wraps on the GPU: start near INT32_MIN and count down past it */
    int32_t totals[2] = {0, INT32_MIN + 10};
    uint64_t pt = addr(tickets), ps = addr(totals);
    void *args[] = {&pt, &ps};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_atomics, args, BLOCKS, BLOCK, 32, why), 0, "%s", why);
    for (int b = 0; b < BLOCKS; b++) {
        int seen[BLOCK] = {0};
        for (int t = 0; t < BLOCK; t++) {
            int k = tickets[b * BLOCK + t];
            cr_assert(k >= 0 && k < BLOCK && !seen[k], "block %d thread %d: ticket %d", b, t, k);
            seen[k] = 1;
        }
    }
    cr_assert_eq(totals[0], BLOCKS * BLOCK, "shared counts summed in global memory");
    uint32_t want = (uint32_t)INT32_MIN + 10u - (uint32_t)(BLOCKS * BLOCK);
    cr_assert_eq((uint32_t)totals[1], want, "int atomicAdd wraps: %d", totals[1]);
}

Test(gpu_emu, shared_memory_starts_as_garbage_in_every_block)
{
    enum { BLOCKS = 3, BLOCK = 256 };
    unsigned out[BLOCKS * BLOCK + BLOCKS] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_shared_fresh, args, BLOCKS, BLOCK, 32, why), 0, "%s", why);
    /* not zero, and not the 7 the previous block left */
    for (int i = 0; i < BLOCKS * BLOCK; i++)
        cr_assert_eq(out[i], UINT32_MAX, "thread %d read %u", i, out[i]);
    for (int b = 0; b < BLOCKS; b++)
        cr_assert_eq(out[BLOCKS * BLOCK + b], 1u, "block %d: a shared float is not NaN", b);
}

Test(gpu_emu, a_missing_barrier_shows_in_the_results)
{
    enum { BLOCKS = 2, BLOCK = 256 };
    unsigned out[BLOCKS * BLOCK] = {0};
    uint64_t p = addr(out);
    void *args[] = {&p};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_missing_barrier, args, BLOCKS, BLOCK, 32, why), 0, "%s", why);
    int stale = 0;
    for (int i = 0; i < BLOCKS * BLOCK; i++)
        stale += out[i] != 42u;
    cr_assert_gt(stale, 0, "every thread saw thread 0's write without a barrier");
}

/* Runs a kernel that widens 16-bit patterns over all 65,536 of them; the
 * caller checks out[pattern] and frees it. */
static float *widen_every_pattern(const lkv_emu_kernel *kernel)
{
    enum { N = 65536 };
    unsigned short *in = malloc(N * sizeof *in);
    float *out = malloc(N * sizeof *out);
    cr_assert(in && out);
    for (int i = 0; i < N; i++)
        in[i] = (unsigned short)i;
    uint64_t pin = addr(in), pout = addr(out);
    int n = N;
    void *args[] = {&pin, &pout, &n};
    char why[WHY];
    cr_assert_eq(run(kernel, args, N / 256, 256, 32, why), 0, "%s", why);
    free(in);
    return out;
}

Test(gpu_emu, half_to_float_is_exact_for_every_half)
{
    float *out = widen_every_pattern(&lkv_emu_test_half);
    for (int h = 0; h < 65536; h++) {
        int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
        if (e == 31) {
            uint32_t want = (uint32_t)sign << 31 | 0x7f800000u | (uint32_t)m << 13;
            cr_assert_eq(tu_bits_of_float(out[h]), want, "half 0x%04x: inf/nan bits", h);
            continue;
        }
        /* the binary16 formula in double: subnormal 0.m x 2^-14, normal 1.m x 2^(e-15) */
        double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
        float want = (float)(sign ? -v : v);
        cr_assert_eq(tu_bits_of_float(out[h]), tu_bits_of_float(want), "half 0x%04x: %a, want %a", h,
                     (double)out[h], (double)want);
    }
    free(out);
}

Test(gpu_emu, bf16_to_float_is_exact_for_every_bf16)
{
    float *out = widen_every_pattern(&lkv_emu_test_bf16);
    for (int b = 0; b < 65536; b++) {
        int sign = b >> 15, e = (b >> 7) & 255, m = b & 127;
        if (e == 255) {
            /* infinities, and NaNs with their sign and payload (signalling ones too) */
            uint32_t want = (uint32_t)sign << 31 | 0x7f800000u | (uint32_t)m << 16;
            cr_assert_eq(tu_bits_of_float(out[b]), want, "bf16 0x%04x: inf/nan bits 0x%08x", b,
                         tu_bits_of_float(out[b]));
            continue;
        }
        /* the bfloat16 formula in double: subnormal 0.m x 2^-126, normal 1.m x 2^(e-127) */
        double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
        float want = (float)(sign ? -v : v);
        cr_assert_eq(tu_bits_of_float(out[b]), tu_bits_of_float(want), "bf16 0x%04x: %a, want %a", b,
                     (double)out[b], (double)want);
    }
    free(out);
}

Test(gpu_emu, scalar_and_pointer_parameters_arrive_as_passed)
{
    cr_assert_eq(lkv_emu_test_params.n_params, 8);
    cr_assert_eq(lkv_emu_test_params.pointer_params, (1u << 5) | (1u << 6) | (1u << 7));
    int32_t a = -7;
    uint32_t b = 4000000000u;
    float c = 1.5f;
    double d = -2.25e100;
    uint64_t e = 0x123456789abcdef0ull;
    int pointee = 99;
    long long oi[4] = {0};
    double od[2] = {0};
    uint64_t pp = addr(&pointee), pi = addr(oi), pd = addr(od);
    void *args[] = {&a, &b, &c, &d, &e, &pp, &pi, &pd};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_params, args, 1, 64, 32, why), 0, "%s", why);
    cr_assert_eq(oi[0], -7);
    cr_assert_eq(oi[1], 4000000000ll);
    cr_assert_eq((uint64_t)oi[2], e);
    cr_assert_eq(oi[3], 99);
    cr_assert_eq(od[0], 1.5);
    cr_assert_eq(od[1], -2.25e100);
}

Test(gpu_emu, vector_loads_bit_casts_and_math_behave_as_on_the_gpu)
{
    _Alignas(16) float in[8] = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};
    unsigned ou[8] = {0};
    float of[8] = {0};
    uint64_t pin = addr(in), pu = addr(ou), pf = addr(of);
    void *args[] = {&pin, &pu, &pf};
    char why[WHY];
    cr_assert_eq(run(&lkv_emu_test_misc, args, 1, 64, 32, why), 0, "%s", why);
    cr_assert_eq(of[0], 26.0f, "float4 load");
    cr_assert_eq(ou[0], tu_bits_of_float(in[0]) ^ tu_bits_of_float(in[1]) ^ tu_bits_of_float(in[2]) ^
                            tu_bits_of_float(in[3]), "uint4 load");
    cr_assert_eq(of[1], 13.0f, "float2 load");
    cr_assert_eq(ou[1], tu_bits_of_float(in[4]) + tu_bits_of_float(in[5]), "uint2 load");
    cr_assert_eq(ou[2], tu_bits_of_float(1.5f), "__float_as_uint");
    cr_assert_eq(of[2], 1.0f, "__uint_as_float");
    cr_assert_eq(of[3], 4.75f, "fmaxf/fminf");
    cr_assert_eq(of[4], 2.0f, "expf/logf/exp/log");
    cr_assert_eq(ou[3], 1u, "isnan on float and double, INFINITY");
    cr_assert_eq(of[5], 5.0f, "fmaxf/fminf with a NaN operand");
    cr_assert(isinf(of[6]) && of[6] < 0, "-INFINITY is %a", (double)of[6]);
}

/* ---- the warp setting ---- */

Test(gpu_emu, lkv_emu_warp_chooses_32_or_64_and_names_anything_else)
{
    int warp = 0;
    char why[WHY];
    unsetenv("LKV_EMU_WARP");
    cr_assert_eq(lkv_emu_warp_from_env(&warp, why, WHY), 0);
    cr_assert_eq(warp, 32);
    setenv("LKV_EMU_WARP", "64", 1);
    cr_assert_eq(lkv_emu_warp_from_env(&warp, why, WHY), 0);
    cr_assert_eq(warp, 64);
    setenv("LKV_EMU_WARP", "48", 1);
    cr_assert_eq(lkv_emu_warp_from_env(&warp, why, WHY), -1);
    cr_assert(strstr(why, "LKV_EMU_WARP=48"), "%s", why);
}

Test(gpu_emu, lkv_emu_multiprocessors_chooses_1_to_1024_and_names_anything_else)
{
    int n = 0;
    char why[WHY];
    unsetenv("LKV_EMU_MULTIPROCESSORS");
    cr_assert_eq(lkv_emu_multiprocessors_from_env(&n, why, WHY), 0);
    cr_assert_eq(n, 4);
    static const struct {
        const char *set;
        int want;
    } good[] = {{"", 4}, {"1", 1}, {"132", 132}, {"1024", 1024}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("LKV_EMU_MULTIPROCESSORS", good[i].set, 1);
        cr_assert_eq(lkv_emu_multiprocessors_from_env(&n, why, WHY), 0, "%s", good[i].set);
        cr_assert_eq(n, good[i].want, "LKV_EMU_MULTIPROCESSORS=%s gave %d", good[i].set, n);
    }
    static const char *const bad[] = {"0", "1025", "99999999999999999999", "-4", "+4", " 4",
                                      "4 ", "4x", "many"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("LKV_EMU_MULTIPROCESSORS", bad[i], 1);
        n = -7;
        cr_assert_eq(lkv_emu_multiprocessors_from_env(&n, why, WHY), -1, "%s", bad[i]);
        cr_assert_eq(n, -7, "a refused value changed the count");
        char want[64];
        snprintf(want, sizeof want, "LKV_EMU_MULTIPROCESSORS=%s:", bad[i]);
        cr_assert(strstr(why, want), "%s", why);
    }
    unsetenv("LKV_EMU_MULTIPROCESSORS");
}

Test(gpu_emu, the_device_has_the_multiprocessors_the_environment_asks_for)
{
    lkv_device_report rep;
    int count = 0;
    lkv_device *dev = NULL;
    unsetenv("LKV_EMU_WARP");
    setenv("LKV_EMU_MULTIPROCESSORS", "132", 1);
    TU_OK(lkv_backend_gpu_emu.probe(&rep, 1, &count));
    cr_assert_eq(rep.available, 1);
    cr_assert(strstr(rep.name, "132 multiprocessors"), "%s", rep.name);
    TU_OK(lkv_backend_gpu_emu.open(0, &dev));
    cr_assert_eq(dev->lim.multiprocessors, 132);
    lkv_backend_gpu_emu.close(dev);
    unsetenv("LKV_EMU_MULTIPROCESSORS");
    TU_OK(lkv_backend_gpu_emu.open(0, &dev));
    cr_assert_eq(dev->lim.multiprocessors, 4);
    lkv_backend_gpu_emu.close(dev);
    setenv("LKV_EMU_MULTIPROCESSORS", "0", 1);
    TU_OK(lkv_backend_gpu_emu.probe(&rep, 1, &count));
    cr_assert_eq(rep.available, 0);
    cr_assert(strstr(rep.reason, "LKV_EMU_MULTIPROCESSORS=0"), "%s", rep.reason);
    dev = NULL;
    cr_assert_eq(lkv_backend_gpu_emu.open(0, &dev), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "LKV_EMU_MULTIPROCESSORS=0"), "%s", lkv_last_error());
    cr_assert_null(dev);
    unsetenv("LKV_EMU_MULTIPROCESSORS");
}

Test(gpu_emu, the_backend_reports_one_emulated_device_with_its_warp)
{
    lkv_device_report rep;
    int count = 0;
    setenv("LKV_EMU_WARP", "64", 1);
    TU_OK(lkv_backend_gpu_emu.probe(&rep, 1, &count));
    cr_assert_eq(count, 1);
    cr_assert_str_eq(rep.backend, "gpu-emu");
    cr_assert_eq(rep.available, 1);
    cr_assert_eq(rep.emulated, 1);
    cr_assert(strstr(rep.name, "warp 64"), "%s", rep.name);
    setenv("LKV_EMU_WARP", "wave", 1);
    TU_OK(lkv_backend_gpu_emu.probe(&rep, 1, &count));
    cr_assert_eq(rep.available, 0);
    cr_assert(strstr(rep.reason, "LKV_EMU_WARP=wave"), "%s", rep.reason);
    lkv_device *dev = NULL;
    cr_assert_eq(lkv_backend_gpu_emu.open(0, &dev), LKV_INVALID_ARGUMENT);
    cr_assert(strstr(lkv_last_error(), "LKV_EMU_WARP=wave"), "%s", lkv_last_error());
    unsetenv("LKV_EMU_WARP");
    cr_assert_eq(lkv_backend_gpu_emu.open(1, &dev), LKV_INVALID_ARGUMENT);
}

Test(gpu_emu, the_backend_moves_buffer_contents_through_the_shared_host_code)
{
    unsetenv("LKV_EMU_WARP");
    lkv_device *dev = NULL;
    TU_OK(lkv_backend_gpu_emu.open(0, &dev));
    lkv_buffer *a = NULL, *b = NULL;
    TU_OK(lkv_backend_gpu_emu.alloc(dev, 100, &a));
    TU_OK(lkv_backend_gpu_emu.alloc(dev, 100, &b));
    unsigned char src[100], dst[100];
    for (int i = 0; i < 100; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    TU_OK(lkv_backend_gpu_emu.read(dev, a, 0, dst, 100));
    for (int i = 0; i < 100; i++)
        cr_assert_eq(dst[i], 0, "byte %d of a new buffer", i);
    TU_OK(lkv_backend_gpu_emu.write(dev, a, 10, src, 90));
    TU_OK(lkv_backend_gpu_emu.copy(dev, b, 0, a, 10, 90));
    TU_OK(lkv_backend_gpu_emu.sync(dev));
    TU_OK(lkv_backend_gpu_emu.read(dev, b, 0, dst, 90));
    cr_assert_arr_eq(dst, src, 90);
    lkv_backend_gpu_emu.free(dev, a);
    lkv_backend_gpu_emu.free(dev, b);
    lkv_backend_gpu_emu.close(dev);
}

/* ---- the driver's checks ---- */

static void *driver(void)
{
    void *api = NULL;
    TU_OK(lkv_emu_api_create(32, &api));
    return api;
}

Test(gpu_emu, new_device_memory_is_garbage_until_zeroed)
{
    void *api = driver();
    lkv_gpu_ptr p;
    TU_OK(lkv_emu_driver.mem_alloc(api, 64, &p));
    unsigned char buf[64];
    TU_OK(lkv_emu_driver.dtoh(api, buf, p, 64));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(buf[i], 0xff, "byte %d", i);
    TU_OK(lkv_emu_driver.mem_zero(api, p + 8, 8));
    TU_OK(lkv_emu_driver.dtoh(api, buf, p, 64));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(buf[i], i >= 8 && i < 16 ? 0 : 0xff, "byte %d", i);
    cr_assert_neq(lkv_emu_driver.mem_alloc(api, 0, &p), LKV_OK, "a 0-byte allocation");
    lkv_emu_driver.close(api);
}

Test(gpu_emu, copies_outside_a_live_allocation_are_errors)
{
    void *api = driver();
    lkv_gpu_ptr a, b;
    TU_OK(lkv_emu_driver.mem_alloc(api, 64, &a));
    TU_OK(lkv_emu_driver.mem_alloc(api, 64, &b));
    unsigned char buf[80] = {0};
    cr_assert_neq(lkv_emu_driver.htod_async(api, a + 1, buf, 64), LKV_OK, "htod past the end");
    cr_assert(strstr(lkv_last_error(), "outside every live allocation"), "%s", lkv_last_error());
    cr_assert_neq(lkv_emu_driver.dtoh(api, buf, b, 80), LKV_OK, "dtoh past the end");
    cr_assert_neq(lkv_emu_driver.dtod(api, a, b + 32, 40), LKV_OK, "dtod source past the end");
    cr_assert_neq(lkv_emu_driver.dtod(api, a, a + 8, 16), LKV_OK, "overlapping dtod");
    cr_assert(strstr(lkv_last_error(), "overlap"), "%s", lkv_last_error());
    TU_OK(lkv_emu_driver.dtod(api, a, b, 64));
    lkv_emu_driver.mem_free(api, b);
    cr_assert_neq(lkv_emu_driver.htod_async(api, b, buf, 1), LKV_OK, "htod into freed memory");
    lkv_emu_driver.mem_free(api, a + 4);
    cr_assert_neq(lkv_emu_driver.sync(api), LKV_OK, "a free of no allocation");
    cr_assert(strstr(lkv_last_error(), "mem_free"), "%s", lkv_last_error());
    TU_OK(lkv_emu_driver.sync(api));
    lkv_emu_driver.close(api);
}

Test(gpu_emu, a_kernel_pointer_outside_every_allocation_is_an_error)
{
    void *api = driver();
    lkv_gpu_ptr out;
    TU_OK(lkv_emu_driver.mem_alloc(api, 64 * sizeof(float), &out));
    float host_in[256];
    for (int i = 0; i < 256; i++)
        host_in[i] = 1.0f;
    uint64_t pin = addr(host_in);
    int n = 256;
    void *args[] = {&pin, &out, &n};
    uint32_t grid[3] = {1, 1, 1};
    cr_assert_eq(lkv_emu_launch_custom(api, &lkv_emu_test_block_sum, grid, 256, args),
                 LKV_INTERNAL);
    cr_assert(strstr(lkv_last_error(), "parameter 0"), "%s", lkv_last_error());
    lkv_gpu_ptr in;
    TU_OK(lkv_emu_driver.mem_alloc(api, sizeof host_in, &in));
    TU_OK(lkv_emu_driver.htod_async(api, in, host_in, sizeof host_in));
    void *good[] = {&in, &out, &n};
    TU_OK(lkv_emu_launch_custom(api, &lkv_emu_test_block_sum, grid, 256, good));
    float sum;
    TU_OK(lkv_emu_driver.dtoh(api, &sum, out, sizeof sum));
    cr_assert_eq(sum, 256.0f);
    cr_assert_eq(lkv_emu_launch_custom(api, &lkv_emu_test_divergent_barrier, grid, 256, good),
                 LKV_DEVICE_ERROR);
    cr_assert(strstr(lkv_last_error(), "emu_test_divergent_barrier") &&
                  strstr(lkv_last_error(), "divergent"), "%s", lkv_last_error());
    lkv_emu_driver.close(api);
}

/* ---- lkv_grid_wait and cooperative launches ---- */

static int run_coop(const lkv_emu_kernel *k, void **args, const uint32_t grid[3], uint32_t block,
                    int warp, char *why)
{
    why[0] = '\0';
    return lkv_emu_run_cooperative(k, args, grid, block, warp, why, WHY);
}

/* emu_test_grid_sum on `grid`: every block's sum of every block's value,
 * and no thread's shared value lost across the wait. */
static void check_grid_sum(const uint32_t grid[3], uint32_t block, int warp)
{
    uint32_t n = grid[0] * grid[1] * grid[2];
    unsigned vals[LKV_EMU_COOPERATIVE_MAX], sums[LKV_EMU_COOPERATIVE_MAX];
    unsigned count = 0, lost = 0, extra = 0;
    memset(vals, 0xff, sizeof vals);
    memset(sums, 0xff, sizeof sums);
    uint64_t pv = addr(vals), pc = addr(&count), ps = addr(sums), pl = addr(&lost);
    void *args[] = {&pv, &pc, &ps, &pl, &extra};
    char why[WHY];
    cr_assert_eq(run_coop(&lkv_emu_test_grid_sum, args, grid, block, warp, why), 0,
                 "grid %u x %u x %u, block %u, warp %d: %s", grid[0], grid[1], grid[2], block,
                 warp, why);
    unsigned want = 0;
    for (uint32_t b = 0; b < n; b++)
        want += b * 7u + 3u;
    cr_assert_eq(count, n, "counter %u for %u blocks", count, n);
    for (uint32_t b = 0; b < n; b++)
        cr_assert_eq(sums[b], want, "grid %u x %u x %u, warp %d: block %u summed %u, want %u",
                     grid[0], grid[1], grid[2], warp, b, sums[b], want);
    cr_assert_eq(lost, 0u, "%u threads lost their shared value across lkv_grid_wait", lost);
}

Test(gpu_emu, a_cooperative_grid_wait_sees_every_blocks_writes_and_keeps_shared_memory)
{
    static const uint32_t grids[][3] = {{1, 1, 1}, {2, 1, 1}, {8, 1, 1}, {3, 2, 2}};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
        check_grid_sum(grids[i], 256, 32);
        check_grid_sum(grids[i], 64, 64);
        check_grid_sum(grids[i], 128, 32);
    }
}

Test(gpu_emu, a_cooperative_launch_of_as_many_blocks_as_the_emulator_holds_completes)
{
    uint32_t grid[3] = {LKV_EMU_COOPERATIVE_MAX, 1, 1};
    check_grid_sum(grid, 256, 32);
    check_grid_sum(grid, 256, 64);
}

Test(gpu_emu, blocks_park_again_at_a_second_grid_wait)
{
    enum { N = 7 };
    unsigned a[N], b[N], out[N], count = 0;
    memset(a, 0xff, sizeof a);
    memset(b, 0xff, sizeof b);
    uint64_t pa = addr(a), pb = addr(b), pc = addr(&count), po = addr(out);
    void *args[] = {&pa, &pb, &pc, &po};
    uint32_t grid[3] = {N, 1, 1};
    char why[WHY];
    cr_assert_eq(run_coop(&lkv_emu_test_grid_two_phases, args, grid, 128, 32, why), 0, "%s",
                 why);
    cr_assert_eq(count, 2u * N);
    for (unsigned i = 0; i < N; i++) {
        unsigned bi = (i + 1) + ((i + 1) % N + 1), bn = ((i + 1) % N + 1) + ((i + 2) % N + 1);
        cr_assert_eq(out[i], bi + bn, "block %u: %u, want %u", i, out[i], bi + bn);
    }
}

/* lkv_emu_test_grid_sum's buffers on a driver's device: vals and sums (4
 * words each), count (zeroed) and lost (one word each), in argument order. */
static void grid_sum_buffers(void *api, lkv_gpu_ptr d[4])
{
    const size_t words[4] = {4, 1, 4, 1};
    for (int i = 0; i < 4; i++)
        TU_OK(lkv_emu_driver.mem_alloc(api, words[i] * sizeof(unsigned), &d[i]));
    TU_OK(lkv_emu_driver.mem_zero(api, d[1], sizeof(unsigned)));
}

Test(gpu_emu, a_grid_wait_that_must_wait_fails_a_launch_that_is_not_cooperative)
{
    unsigned vals[4] = {0}, sums[4] = {0}, count = 0, lost = 0, extra = 0;
    uint64_t pv = addr(vals), pc = addr(&count), ps = addr(sums), pl = addr(&lost);
    void *args[] = {&pv, &pc, &ps, &pl, &extra};
    char why[WHY];
    uint32_t grid[3] = {4, 1, 1};
    why[0] = '\0';
    cr_assert_eq(lkv_emu_run(&lkv_emu_test_grid_sum, args, grid, 64, 32, why, WHY), -1);
    cr_assert(strstr(why, "lkv_grid_wait in a launch that is not cooperative") &&
                  strstr(why, "block (0, 0, 0)") && strstr(why, ">= 4, which is 1"),
              "%s", why);
    /* one block counts itself in: its wait holds, so nothing could hang */
    count = 0;
    uint32_t one[3] = {1, 1, 1};
    cr_assert_eq(lkv_emu_run(&lkv_emu_test_grid_sum, args, one, 64, 32, why, WHY), 0, "%s", why);
    cr_assert_eq(sums[0], 3u);
    /* through the driver: DEVICE_ERROR naming the kernel */
    void *api = driver();
    lkv_gpu_ptr d[4];
    grid_sum_buffers(api, d);
    void *dargs[] = {&d[0], &d[1], &d[2], &d[3], &extra};
    cr_assert_eq(lkv_emu_launch_custom(api, &lkv_emu_test_grid_sum, grid, 64, dargs),
                 LKV_DEVICE_ERROR);
    cr_assert(strstr(lkv_last_error(), "emu_test_grid_sum") &&
                  strstr(lkv_last_error(), "not cooperative"), "%s", lkv_last_error());
    /* the same launch, cooperative, through the driver */
    TU_OK(lkv_emu_driver.mem_zero(api, d[1], sizeof count));
    TU_OK(lkv_emu_driver.mem_zero(api, d[3], sizeof lost));
    TU_OK(lkv_emu_launch_custom_cooperative(api, &lkv_emu_test_grid_sum, grid, 64, dargs));
    TU_OK(lkv_emu_driver.dtoh(api, sums, d[2], sizeof sums));
    TU_OK(lkv_emu_driver.dtoh(api, &lost, d[3], sizeof lost));
    for (int b = 0; b < 4; b++)
        cr_assert_eq(sums[b], 3u + 10u + 17u + 24u, "block %d: %u", b, sums[b]);
    cr_assert_eq(lost, 0u);
    lkv_emu_driver.close(api);
}

Test(gpu_emu, a_grid_wait_some_threads_skip_is_reported)
{
    unsigned count = 1;
    uint64_t pc = addr(&count);
    static const struct {
        int mode;
        const char *a, *b;
    } cases[] = {
        {0, "divergent lkv_grid_wait", "thread 64 finished"},
        {1, "divergent lkv_grid_wait", "thread 64 waits at __syncthreads"},
        {2, "arguments that differ", "thread 64 for"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int mode = cases[i].mode;
        void *args[] = {&pc, &mode};
        for (int coop = 0; coop < 2; coop++) {
            uint32_t grid[3] = {2, 1, 1};
            char why[WHY];
            why[0] = '\0';
            int r = coop ? run_coop(&lkv_emu_test_grid_wait_divergent, args, grid, 256, 32, why)
                         : lkv_emu_run(&lkv_emu_test_grid_wait_divergent, args, grid, 256, 32,
                                       why, WHY);
            cr_assert_eq(r, -1, "mode %d, cooperative %d should fail", mode, coop);
            cr_assert(strstr(why, cases[i].a) && strstr(why, cases[i].b),
                      "mode %d, cooperative %d: '%s' lacks '%s' or '%s'", mode, coop, why,
                      cases[i].a, cases[i].b);
        }
    }
}

Test(gpu_emu, a_grid_wait_no_block_can_satisfy_fails_instead_of_hanging)
{
    unsigned vals[4] = {0}, sums[4] = {0}, count = 0, lost = 0, extra = 1;
    uint64_t pv = addr(vals), pc = addr(&count), ps = addr(sums), pl = addr(&lost);
    void *args[] = {&pv, &pc, &ps, &pl, &extra};
    uint32_t grid[3] = {4, 1, 1};
    char why[WHY];
    cr_assert_eq(run_coop(&lkv_emu_test_grid_sum, args, grid, 128, 32, why), -1);
    cr_assert(strstr(why, "can never return") && strstr(why, "block (0, 0, 0)") &&
                  strstr(why, "block (3, 0, 0)") && strstr(why, ">= 5, which is 4"),
              "%s", why);
    /* a block parked in the failed launch does not disturb the next ones */
    extra = 0;
    count = 0;
    cr_assert_eq(run_coop(&lkv_emu_test_grid_sum, args, grid, 128, 32, why), 0, "%s", why);
    for (int b = 0; b < 4; b++)
        cr_assert_eq(sums[b], 54u, "block %d: %u", b, sums[b]);
    expect_a_block_scan_right();
    /* through the driver: DEVICE_ERROR naming the kernel */
    void *api = driver();
    lkv_gpu_ptr d[4];
    grid_sum_buffers(api, d);
    extra = 1;
    void *dargs[] = {&d[0], &d[1], &d[2], &d[3], &extra};
    cr_assert_eq(lkv_emu_launch_custom_cooperative(api, &lkv_emu_test_grid_sum, grid, 64, dargs),
                 LKV_DEVICE_ERROR);
    cr_assert(strstr(lkv_last_error(), "emu_test_grid_sum") &&
                  strstr(lkv_last_error(), "can never return"), "%s", lkv_last_error());
    lkv_emu_driver.close(api);
}

Test(gpu_emu, a_cooperative_grid_larger_than_the_device_holds_is_unsupported)
{
    char why[WHY];
    unsigned count = 0;
    uint64_t pc = addr(&count);
    int mode = 0;
    void *args[] = {&pc, &mode};
    uint32_t over[3] = {LKV_EMU_COOPERATIVE_MAX + 1, 1, 1};
    cr_assert_eq(run_coop(&lkv_emu_test_grid_wait_divergent, args, over, 64, 32, why), -1);
    cr_assert(strstr(why, "at most 32 blocks"), "%s", why);
    /* a driver of 4 multiprocessors holds 4 x 2 blocks; nothing is looked
     * at or run beyond (the arguments are not even read) */
    void *api = driver();
    uint32_t nine[3] = {3, 3, 1};
    cr_assert_eq(lkv_emu_launch_custom_cooperative(api, &lkv_emu_test_grid_sum, nine, 64, NULL),
                 LKV_UNSUPPORTED);
    cr_assert(strstr(lkv_last_error(), "9 blocks") && strstr(lkv_last_error(), "limit is 8") &&
                  strstr(lkv_last_error(), "emu_test_grid_sum"), "%s", lkv_last_error());
    lkv_gpu_launch l = {.kernel = (lkv_gpu_kernel_id)0, .grid = {9, 1, 1}, .block = 64,
                        .args = NULL};
    cr_assert_not_null(lkv_emu_driver.launch_cooperative);
    cr_assert_eq(lkv_emu_driver.launch_cooperative(api, &l), LKV_UNSUPPORTED);
    lkv_emu_driver.close(api);
    /* a device of 132 multiprocessors: the emulator's cap */
    unsetenv("LKV_EMU_WARP");
    setenv("LKV_EMU_MULTIPROCESSORS", "132", 1);
    lkv_device *dev = NULL;
    TU_OK(lkv_backend_gpu_emu.open(0, &dev));
    unsetenv("LKV_EMU_MULTIPROCESSORS");
    l.grid[0] = LKV_EMU_COOPERATIVE_MAX + 1;
    cr_assert_eq(dev->drv->launch_cooperative(dev->api, &l), LKV_UNSUPPORTED);
    cr_assert(strstr(lkv_last_error(), "33 blocks") && strstr(lkv_last_error(), "limit is 32") &&
                  strstr(lkv_last_error(), "132 multiprocessors"), "%s", lkv_last_error());
    lkv_gpu_ptr dv, dc, ds, dl;
    TU_OK(dev->drv->mem_alloc(dev->api, LKV_EMU_COOPERATIVE_MAX * sizeof(unsigned), &dv));
    TU_OK(dev->drv->mem_alloc(dev->api, sizeof(unsigned), &dc));
    TU_OK(dev->drv->mem_alloc(dev->api, LKV_EMU_COOPERATIVE_MAX * sizeof(unsigned), &ds));
    TU_OK(dev->drv->mem_alloc(dev->api, sizeof(unsigned), &dl));
    TU_OK(dev->drv->mem_zero(dev->api, dc, sizeof(unsigned)));
    unsigned extra = 0;
    void *dargs[] = {&dv, &dc, &ds, &dl, &extra};
    uint32_t full[3] = {LKV_EMU_COOPERATIVE_MAX, 1, 1};
    TU_OK(lkv_emu_launch_custom_cooperative(dev->api, &lkv_emu_test_grid_sum, full, 64, dargs));
    unsigned sums[LKV_EMU_COOPERATIVE_MAX];
    TU_OK(dev->drv->dtoh(dev->api, sums, ds, sizeof sums));
    for (unsigned b = 0; b < LKV_EMU_COOPERATIVE_MAX; b++)
        cr_assert_eq(sums[b], 32u * 31u / 2u * 7u + 32u * 3u, "block %u: %u", b, sums[b]);
    dev->drv->mem_free(dev->api, dv);
    dev->drv->mem_free(dev->api, dc);
    dev->drv->mem_free(dev->api, ds);
    dev->drv->mem_free(dev->api, dl);
    lkv_backend_gpu_emu.close(dev);
}

/* ---- select spread over a row's blocks ---- */

static const float *sort_scores; /* qsort has no context argument */

/* The oracle's ranking: higher score first, NaN last, ties to the lower
 * slot. */
static int by_rank(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    float x = sort_scores[i], y = sort_scores[j];
    int xn = isnan(x), yn = isnan(y);
    if (xn != yn)
        return xn - yn;
    if (!xn && x != y)
        return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

static int ascending(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    return (i > j) - (i < j);
}

/* One row of 61440 slots on a 132-multiprocessor device: 30 blocks share
 * it (lkv_select_spread, a cooperative launch), exchanging bins and counts
 * through the device's sync words. Scores of few values (long runs of
 * ties across blocks) and NaNs; the kept list must be the host sort's, on
 * a second call too, and the sync words must be back at zero after each. */
Test(gpu_emu, a_row_shared_by_30_blocks_keeps_what_a_host_sort_keeps)
{
    enum { N = 61440, K = 20000, PARTS = N / LKV_SELECT_CHUNK };
    unsetenv("LKV_EMU_WARP");
    setenv("LKV_EMU_MULTIPROCESSORS", "132", 1);
    lkv_device *dev = NULL;
    TU_OK(lkv_backend_gpu_emu.open(0, &dev));
    unsetenv("LKV_EMU_MULTIPROCESSORS");
    float *scores = malloc(N * sizeof *scores);
    int32_t *order = malloc(N * sizeof *order), *kept = malloc(N * sizeof *kept);
    cr_assert(scores && order && kept);
    uint64_t seed = 21;
    for (int32_t i = 0; i < N; i++) {
        uint32_t r = next_u32(&seed);
        scores[i] = r % 97 == 0 ? NAN : (float)(r % 13) * 0.25f;
        order[i] = i;
    }
    sort_scores = scores;
    qsort(order, N, sizeof *order, by_rank);
    qsort(order, K, sizeof *order, ascending);
    lkv_buffer *s = NULL, *out = NULL;
    TU_OK(lkv_backend_gpu_emu.alloc(dev, N * sizeof(float), &s));
    TU_OK(lkv_backend_gpu_emu.alloc(dev, N * sizeof(int32_t), &out));
    TU_OK(lkv_backend_gpu_emu.write(dev, s, 0, scores, N * sizeof(float)));
    int32_t row = 0, n = N, k = K;
    lkv_select_args a = {.capacity = N, .n_rows = 1, .rows = &row, .row_n = &n, .row_k = &k,
                         .scores = s, .kept = out};
    for (int call = 0; call < 2; call++) {
        TU_OK(lkv_backend_gpu_emu.select(dev, &a));
        TU_OK(lkv_backend_gpu_emu.read(dev, out, 0, kept, K * sizeof(int32_t)));
        for (int32_t i = 0; i < K; i++)
            cr_assert_eq(kept[i], order[i], "call %d: kept[%d] = %d, the host sort's %d", call,
                         i, kept[i], order[i]);
        cr_assert_not_null(dev->select_sync, "the spread select did not run");
        size_t words = LKV_SELECT_SYNC_WORDS(PARTS);
        cr_assert_geq(dev->select_sync->size, words * 4);
        unsigned *sync = malloc(words * 4);
        cr_assert_not_null(sync);
        TU_OK(lkv_backend_gpu_emu.read(dev, dev->select_sync, 0, sync, words * 4));
        for (size_t w = 0; w < words; w++)
            cr_assert_eq(sync[w], 0u, "call %d: sync word %zu left at %u", call, w, sync[w]);
        free(sync);
    }
    lkv_backend_gpu_emu.free(dev, s);
    lkv_backend_gpu_emu.free(dev, out);
    lkv_backend_gpu_emu.close(dev);
    free(scores);
    free(order);
    free(kept);
}
