/* The benchmark's arithmetic and writers, checked against numbers worked out
 * by hand: the bytes model, the unit formatting, the median, the plot's axis
 * mapping, that the JSON and SVG say what the results hold, and the batched
 * decode step's device counters on the cpu oracle, which are exact. Nothing
 * here asserts a time: speed is shown by `lazykv bench`, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>

#include "bench.h"
#include "bench_batch.h"
#include "bench_decode.h"
#include "bench_inputs.h"
#include "bench_model.h"
#include "bench_overlap.h"
#include "bench_pool.h"
#include "bench_svg_scale.h"
#include "bench_timer.h"
#include "bf16.h"
#include "json.h"
#include "test_util.h"

static const lkv_bench_shape llama = {"Llama-3-8B", 32, 8, 128, LKV_DTYPE_F16};

/* ---- the roofline model (bench/bench_model.c), worked by hand ---- */

/* H200 (4.3 TB/s, 132 SMs, 0.8 us, four 16-byte loads in flight a split
 * thread), hq32/hkv8/d128 f16 at 32K slots. Split plan: one wave, 132 x 2
 * resident blocks = 264, 8 units (a block of 4 query heads per cache head),
 * so ceil(32768 x 8 / 264) = 993 -> 1024 slots a split, 32 splits, 256
 * blocks in one wave: launched cooperatively (256 <= 264), and a split of
 * 1024 slots fits the tile (4096 / 4 heads), so the blocks write the
 * probabilities: one launch, no logits in memory. They move K and V (2 x
 * 8 x 32768 x 128 x 2) and the probabilities (4 x 8 x 32768), 135266304
 * bytes; 256 blocks x 256 threads x 64 B / 0.8 us = 5.24 TB/s is past the
 * copy bandwidth, so at 4.3 TB/s: 31.46 us. The grid wait 1 us; the
 * combine: 4 x 128 outputs over 32 blocks = 16 each, 16 threads each
 * summing 2 of the 32 splits: 2 steps of 70 ns = 0.14 us. One launch 2 us
 * and the sync 3 us. In all 37.60 us; ideal 134250496 bytes / 4.3 TB/s. */
Test(bench_model, attend_probs_on_h200_is_the_hand_computed_time)
{
    const lkv_bench_gpu *g = lkv_bench_gpu_named("h200");
    cr_assert_not_null(g);
    lkv_bench_model m;
    lkv_bench_model_op(g, LKV_BENCH_ATTEND_PROBS, &llama, 32768, 16384, &m);
    cr_expect_eq(m.splits, 32);
    cr_expect_eq(m.blocks, 256);
    cr_expect_eq(m.waves, 1);
    cr_expect_eq(m.launches, 1);
    double split = 135266304.0 / 4.3e12;
    double want = split + 1e-6 + 2 * 70e-9 + 5e-6;
    cr_expect(fabs(m.seconds - want) < 1e-9, "%.9g s, want %.9g", m.seconds, want);
    cr_expect(fabs(m.seconds - 37.60e-6) < 0.05e-6, "%.9g s", m.seconds);
    double ideal = lkv_bench_op_bytes(LKV_BENCH_ATTEND_PROBS, &llama, 32768, 16384) / 4.3e12;
    cr_expect(fabs(m.ideal_s - ideal) < 1e-12);
}

/* The lazy observe fused into the same 32K attend: the split blocks read
 * and write last and mri (16 x 8 x 32768 bytes) where they wrote the
 * probabilities (4 x 8 x 32768): 138412032 bytes at 4.3 TB/s = 32.19 us,
 * plus the same wait, combine, launch and sync: 38.33 us, where attend +
 * probs and then observe take 37.60 + 6.33 us and two launches. */
Test(bench_model, attend_with_its_observe_fused_is_the_hand_computed_time)
{
    const lkv_bench_gpu *g = lkv_bench_gpu_named("h200");
    lkv_bench_model fused, probs, observe;
    lkv_bench_model_op(g, LKV_BENCH_ATTEND_OBSERVE, &llama, 32768, 16384, &fused);
    lkv_bench_model_op(g, LKV_BENCH_ATTEND_PROBS, &llama, 32768, 16384, &probs);
    lkv_bench_model_op(g, LKV_BENCH_OBSERVE, &llama, 32768, 16384, &observe);
    cr_expect_eq(fused.launches, 1);
    double want = 138412032.0 / 4.3e12 + 1e-6 + 2 * 70e-9 + 5e-6;
    cr_expect(fabs(fused.seconds - want) < 1e-9, "%.9g s, want %.9g", fused.seconds, want);
    cr_expect(fabs(fused.seconds - 38.33e-6) < 0.05e-6, "%.9g s", fused.seconds);
    cr_expect(probs.seconds + observe.seconds - fused.seconds > 5e-6,
              "fused %.3g s against %.3g + %.3g s", fused.seconds, probs.seconds,
              observe.seconds);
    cr_expect_float_eq(lkv_bench_op_bytes(LKV_BENCH_ATTEND_OBSERVE, &llama, 32768, 16384),
                       134217728.0 + 8.0 * 32 * 128 + 16.0 * 8 * 32768, 0.5);
}

/* At 64K the splits (2048 slots) pass the tile: cooperative still, one
 * launch, but the logits go out, back in the split's V pass and back once
 * more for the probabilities. */
Test(bench_model, attend_probs_past_the_tile_reads_its_logits_back)
{
    lkv_bench_model m;
    lkv_bench_model_op(lkv_bench_gpu_named("h200"), LKV_BENCH_ATTEND_PROBS, &llama, 65536, 32768,
                       &m);
    cr_expect_eq(m.splits, 32);
    cr_expect_eq(m.launches, 1);
    cr_expect_float_eq(m.bytes, 2.0 * 8 * 65536 * 128 * 2 + 3.0 * 4 * 32 * 65536 +
                                    4.0 * 8 * 65536 + 32.0 * 32 * 130 * 4, 1.0, "%.0f", m.bytes);
    cr_expect(m.ideal_s / m.seconds >= 0.80, "%.3f of copy", m.ideal_s / m.seconds);
}

/* select at 32K where a row's blocks fit the device at once: 32768 / 2048
 * = 16 blocks a row, 128 in all (<= 132 x 4 resident), each reading its
 * chunk once with 8 scores in flight a thread (128 x 256 x 32 B / 0.8 us =
 * 1.31 TB/s, under the copy bandwidth) and writing its kept slots: 4 x 8
 * x (32768 + 16384) bytes; 4 passes' block scans of 8 steps of 20 ns, one
 * more for the blocks' counts, 5 waits of 1 us for the row's blocks, one
 * launch and the sync: 12.0 us, where one block a row took 95. */
Test(bench_model, select_spreads_each_row_over_blocks_that_read_it_once)
{
    lkv_bench_model m;
    lkv_bench_model_op(lkv_bench_gpu_named("h200"), LKV_BENCH_SELECT, &llama, 32768, 16384, &m);
    double bytes = 4.0 * 8 * (32768 + 16384);
    double want = bytes / (128 * 256 * 32 / 0.8e-6) + 5 * 8 * 20e-9 + 5 * 1e-6 + 5e-6;
    cr_expect_eq(m.blocks, 128);
    cr_expect_float_eq(m.bytes, bytes, 0.5);
    cr_expect(fabs(m.seconds - want) < 1e-12, "%.9g s, want %.9g", m.seconds, want);
}

/* select at 160K: 80 blocks a row, 640 in all, do not fit at once (132 x
 * 4 = 528), so a block per row (8); four radix passes of 4-byte scores
 * with 8 loads in flight a thread (8 x 256 x 32 B / 0.8 us = 81.92 GB/s),
 * the last pass (the scores again and the kept slots) with 4 (40.96
 * GB/s), 4 passes' block scans of 8 steps of 20 ns, one launch and the
 * sync. */
Test(bench_model, select_past_one_wave_is_bound_by_its_eight_blocks)
{
    lkv_bench_model m;
    int32_t n = 163840, k = 81920;
    lkv_bench_model_op(lkv_bench_gpu_named("h200"), LKV_BENCH_SELECT, &llama, n, k, &m);
    double want = 4.0 * 4 * 8 * n / (8 * 256 * 32 / 0.8e-6) +
                  (4.0 * 8 * n + 4.0 * 8 * k) / (8 * 256 * 16 / 0.8e-6) + 32 * 20e-9 + 5e-6;
    cr_expect_eq(m.blocks, 8);
    cr_expect(fabs(m.seconds - want) < 1e-12, "%.9g s, want %.9g", m.seconds, want);
}

Test(bench_model, devices_are_found_by_name_only)
{
    cr_expect_not_null(lkv_bench_gpu_named("mi300x"));
    cr_expect_null(lkv_bench_gpu_named("h300"));
    cr_expect_null(lkv_bench_gpu_named(NULL));
}

/* ---- bytes model (bench/README.md) ---- */

Test(bench_bytes, attend_with_probs_reads_kv_once_and_writes_probs)
{
    /* K+V 2*8*1024*128*2 = 4194304, q+out 2*32*128*4 = 32768, probs 8*1024*4 = 32768 */
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_ATTEND_PROBS, &llama, 1024, 512), 4259840.0,
                       0.5);
}

Test(bench_bytes, plain_attend_has_no_probs)
{
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_ATTEND_PLAIN, &llama, 1024, 512), 4227072.0,
                       0.5);
}

Test(bench_bytes, f32_storage_doubles_the_kv_bytes)
{
    lkv_bench_shape s = {"toy", 9, 3, 64, LKV_DTYPE_F32};
    /* 2*3*100*64*4 = 153600, q+out 2*9*64*4 = 4608 */
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_ATTEND_PLAIN, &s, 100, 50), 158208.0, 0.5);
}

Test(bench_bytes, bf16_storage_moves_the_bytes_of_f16)
{
    lkv_bench_shape bf16 = llama;
    bf16.dtype = LKV_DTYPE_BF16;
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++)
        cr_expect_float_eq(lkv_bench_op_bytes((lkv_bench_op)op, &bf16, 1024, 512),
                           lkv_bench_op_bytes((lkv_bench_op)op, &llama, 1024, 512), 0.5, "%s",
                           lkv_bench_op_id((lkv_bench_op)op));
    /* the f16 figure worked out above: 2-byte elements, not 4 */
    cr_expect_float_eq(lkv_bench_op_bytes(LKV_BENCH_ATTEND_PROBS, &bf16, 1024, 512), 4259840.0,
                       0.5);
}

Test(bench_bytes, state_ops_count_their_int32_rows)
{
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_OBSERVE, &llama, 1024, 512), 163840.0, 0.5);
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_SCORE, &llama, 1024, 512), 98304.0, 0.5);
    /* scores 8*1024*4 + kept 8*512*4 */
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_SELECT, &llama, 1024, 512), 49152.0, 0.5);
}

Test(bench_bytes, compact_moves_every_kept_slot_once)
{
    /* 8 rows * 512 kept * (index 4 + K,V read+write 4*128*2 + 4 states read+write 32) */
    cr_assert_float_eq(lkv_bench_op_bytes(LKV_BENCH_COMPACT, &llama, 1024, 512), 4341760.0, 0.5);
}

Test(bench_bytes, keep_is_the_percentage_of_the_length)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 0);
    cr_assert_eq(lkv_bench_keep(&s, 131072), 65536);
    cr_assert_eq(lkv_bench_keep(&s, 1), 1, "at least one slot is kept");
}

/* ---- inputs ---- */

/* Every storage type holds the same draws: bf16 K/V are the f32 ones rounded
 * to bf16, element for element, and the rest is identical. */
Test(bench_inputs, bf16_inputs_are_the_f32_inputs_rounded_to_bf16)
{
    lkv_bench_shape f32 = {"toy", 4, 2, 33, LKV_DTYPE_F32}, bf16 = f32;
    bf16.dtype = LKV_DTYPE_BF16;
    lkv_bench_op_inputs a, b;
    TU_OK(lkv_bench_op_inputs_make(&f32, 50, 7, &a));
    TU_OK(lkv_bench_op_inputs_make(&bf16, 50, 7, &b));
    size_t n = 2 * 50 * 33;
    for (size_t i = 0; i < n; i++) {
        float k, v;
        uint16_t hk, hv;
        memcpy(&k, a.k + 4 * i, 4);
        memcpy(&v, a.v + 4 * i, 4);
        memcpy(&hk, b.k + 2 * i, 2);
        memcpy(&hv, b.v + 2 * i, 2);
        cr_assert_eq(hk, lkv_float_to_bf16(k), "k[%zu]: 0x%04x for %.9g", i, hk, (double)k);
        cr_assert_eq(hv, lkv_float_to_bf16(v), "v[%zu]: 0x%04x for %.9g", i, hv, (double)v);
    }
    cr_expect_eq(memcmp(a.q, b.q, sizeof(float) * 4 * 33), 0);
    cr_expect_eq(memcmp(a.last, b.last, sizeof(int32_t) * 2 * 50), 0);
    cr_expect_eq(memcmp(a.mri, b.mri, sizeof(int32_t) * 2 * 50), 0);
    lkv_bench_op_inputs_free(&a);
    lkv_bench_op_inputs_free(&b);
}

/* ---- formatting and statistics ---- */

static void expect_time(double s, const char *want)
{
    char buf[32];
    lkv_bench_format_time(s, buf, sizeof buf);
    cr_assert_str_eq(buf, want, "format_time(%g)", s);
}

Test(bench_format, times_have_three_significant_digits_and_a_unit)
{
    expect_time(812e-9, "812 ns");
    expect_time(12.34e-6, "12.3 us");
    expect_time(0.0012345, "1.23 ms");
    expect_time(999.7e-6, "1.00 ms");
    expect_time(1.5, "1.50 s");
    expect_time(0.0, "-");
}

Test(bench_format, bytes_and_lengths)
{
    char buf[32];
    lkv_bench_format_bytes(1536.0, buf, sizeof buf);
    cr_assert_str_eq(buf, "1.50 KiB");
    lkv_bench_format_bytes(256.0 * 1048576.0, buf, sizeof buf);
    cr_assert_str_eq(buf, "256 MiB");
    lkv_bench_format_length(131072, buf, sizeof buf);
    cr_assert_str_eq(buf, "128K");
    lkv_bench_format_length(1000, buf, sizeof buf);
    cr_assert_str_eq(buf, "1000");
}

Test(bench_stats, median_of_odd_and_even_counts)
{
    double odd[] = {3.0, 1.0, 2.0}, even[] = {4.0, 1.0, 3.0, 2.0};
    cr_assert_float_eq(lkv_bench_median(odd, 3), 2.0, 1e-12);
    cr_assert_float_eq(lkv_bench_median(even, 4), 2.5, 1e-12);
    cr_assert_float_eq(even[0], 1.0, 1e-12, "the samples are left sorted: [0] is the min");
}

/* ---- plot axes ---- */

Test(bench_svg_scale, log_axis_puts_each_decade_a_third_of_the_way)
{
    lkv_svg_axis a = {.lo = 1e-6, .hi = 1e-3, .log = 1, .px0 = 300.0, .px1 = 0.0};
    cr_assert_float_eq(lkv_svg_map(&a, 1e-5), 200.0, 1e-9);
    cr_assert_float_eq(lkv_svg_map(&a, 1e-4), 100.0, 1e-9);
    cr_assert_float_eq(lkv_svg_map(&a, 1.0), 0.0, 1e-9, "values beyond the range are clamped");
}

Test(bench_svg_scale, linear_axis_and_ranges)
{
    lkv_svg_axis a = {.lo = 0.0, .hi = 10.0, .log = 0, .px0 = 0.0, .px1 = 100.0};
    cr_assert_float_eq(lkv_svg_map(&a, 2.5), 25.0, 1e-9);
    double lo, hi, step;
    lkv_svg_log_range(3e-6, 2e-4, &lo, &hi);
    cr_assert_float_eq(lo, 1e-6, 1e-18);
    cr_assert_float_eq(hi, 1e-3, 1e-15);
    cr_assert_float_eq(lkv_svg_nice_step(1.0, 5), 0.2, 1e-12);
    cr_assert_float_eq(lkv_svg_nice_step(7.0, 5), 2.0, 1e-12);
    lkv_svg_linear_range(0.93, 1.07, 5, &lo, &hi, &step);
    cr_assert_float_eq(step, 0.05, 1e-12);
    cr_assert_float_eq(lo, 0.90, 1e-9);
    cr_assert_float_eq(hi, 1.10, 1e-9);
}

/* ---- JSON ---- */

/* Captures what `write` puts on a stream. Caller frees. */
static char *capture(int (*write)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(write(f, arg), 0, "the writer reported a failure");
    fclose(f);
    /* a copy, so no pointer into the text refers to the local that
     * open_memstream wrote through (gcc -O3 warns -Wdangling-pointer) */
    char *text = strdup(buf);
    free(buf);
    cr_assert_not_null(text);
    return text;
}

/* Results of a made-up run: 2 devices (cpu, a fake gpu), 1 shape, 2 lengths,
 * every op 1 ms except the gpu's plain attend at the first length, failed. */
static void fake_results(lkv_bench_results *r)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 1);
    s.n_shapes = 1;
    s.shapes[0] = llama;
    s.n_lengths = 2;
    s.lengths[0] = 1024;
    s.lengths[1] = 4096;
    TU_OK(lkv_bench_results_init(r, &s, 2));
    strcpy(r->devices[0].label, "cpu:0");
    strcpy(r->devices[0].backend, "cpu");
    strcpy(r->devices[0].name, "a<b & c");
    strcpy(r->devices[1].label, "gpu:0");
    strcpy(r->devices[1].backend, "gpu");
    for (int d = 0; d < 2; d++) {
        r->devices[d].copy = (lkv_bench_timing){.status = LKV_OK, .reps = 3, .median_s = 0.01,
                                                .min_s = 0.01};
        r->devices[d].copy_bytes_per_s = 1e10;
        for (int l = 0; l < 2; l++) {
            for (int op = 0; op < LKV_BENCH_OP_COUNT; op++)
                *lkv_bench_op_at(r, d, 0, l, (lkv_bench_op)op) = (lkv_bench_timing){
                    .status = LKV_OK, .reps = 5, .median_s = 1e-3, .min_s = 0.9e-3};
            *lkv_bench_decode_at(r, d, l) = (lkv_bench_decode){
                .status = LKV_OK, .length = s.lengths[l], .budget = s.lengths[l] / 2,
                .window = 101, .lazy_steps = 101, .full_steps = 8, .lazy_ms = 1.0,
                .lazy_max_ms = 2.0, .full_ms = 2.0, .full_max_ms = 2.5};
        }
    }
    /* batches of 1 and 8: the batched step 1 ms and 2 ms, n per-sequence
     * calls n ms; the cpu counts (3 launches whatever n), the gpu does not */
    for (int d = 0; d < 2; d++)
        for (int b = 0; b < s.n_batches; b++) {
            int32_t n = s.batches[b];
            lkv_bench_batch *bt = lkv_bench_batch_at(r, d, b);
            *bt = (lkv_bench_batch){.status = LKV_OK, .sequences = n, .slots = s.batch_slots,
                                    .counted = d == 0};
            bt->batched.step = (lkv_bench_timing){.status = LKV_OK, .reps = 3,
                                                  .median_s = b ? 2e-3 : 1e-3, .min_s = 1e-3};
            bt->per_sequence.step = (lkv_bench_timing){.status = LKV_OK, .reps = 3,
                                                       .median_s = n * 1e-3, .min_s = n * 1e-3};
            bt->batched.counters = (lkv_bench_batch_counters){3, 3, 2816.0 * n, 1, 2304.0 * n, 1};
            bt->per_sequence.counters = (lkv_bench_batch_counters){
                3.0 * n, 3.0 * n, 2816.0 * n, n, 2304.0 * n, n};
        }
    lkv_bench_timing *failed = lkv_bench_op_at(r, 1, 0, 0, LKV_BENCH_ATTEND_PLAIN);
    *failed = (lkv_bench_timing){.status = LKV_DEVICE_ERROR};
    strcpy(failed->error, "device lost");
}

static int write_json(FILE *f, const void *r) { return lkv_bench_write_json(f, r); }
static int write_svg(FILE *f, const void *r) { return lkv_bench_write_svg(f, r); }

static const lkv_json *member(const lkv_json *obj, const char *key)
{
    const lkv_json *v = lkv_json_get(obj, key);
    cr_assert_not_null(v, "JSON has no member '%s'", key);
    return v;
}

Test(bench_json, results_parse_back_with_bytes_bandwidth_and_roofline_share)
{
    lkv_bench_results r;
    fake_results(&r);
    char *text = capture(write_json, &r);
    lkv_json doc;
    char err[256];
    cr_assert_eq(lkv_json_parse(text, strlen(text), &doc, err, sizeof err), 0,
                 "not JSON: %s", err);
    const lkv_json *ops = member(&doc, "ops");
    cr_assert_eq(ops->count, 2 * 2 * LKV_BENCH_OP_COUNT, "one entry per device, length and op");
    const lkv_json *first = &ops->items[0]; /* cpu, 1K, attend + probs */
    cr_assert_str_eq(member(first, "op")->text, "attend_probs");
    cr_assert_float_eq(member(first, "bytes")->number, 4259840.0, 0.5);
    /* 4259840 B / 1 ms = 4.25984e9 B/s; of a 1e10 B/s roofline, 0.425984 */
    cr_assert_float_eq(member(first, "bandwidth_bytes_per_s")->number, 4.25984e9, 1e4);
    cr_assert_float_eq(member(first, "fraction_of_copy")->number, 0.425984, 1e-6);
    const lkv_json *bad = &ops->items[LKV_BENCH_OP_COUNT * 2 + LKV_BENCH_ATTEND_PLAIN];
    cr_assert_str_eq(member(bad, "status")->text, "DEVICE_ERROR");
    cr_assert_str_eq(member(bad, "error")->text, "device lost");
    const lkv_json *backends = member(&doc, "backends");
    cr_assert_str_eq(member(&backends->items[0], "name")->text, "a<b & c");
    cr_assert_float_eq(member(&backends->items[0], "copy_bandwidth_bytes_per_s")->number, 1e10,
                       1.0);
    const lkv_json *dec = &member(member(&doc, "decode"), "results")->items[0];
    cr_assert_float_eq(member(dec, "lazy_over_full")->number, 0.5, 1e-9);
    lkv_json_free(&doc);
    free(text);
    lkv_bench_results_free(&r);
}

Test(bench_json, batch_rows_carry_both_ways_their_ratio_and_the_counters)
{
    lkv_bench_results r;
    fake_results(&r);
    char *text = capture(write_json, &r);
    lkv_json doc;
    char err[256];
    cr_assert_eq(lkv_json_parse(text, strlen(text), &doc, err, sizeof err), 0,
                 "not JSON: %s", err);
    const lkv_json *batch = member(&doc, "batch");
    cr_assert_float_eq(member(batch, "slots")->number, 1024.0, 0.5, "the quick grid's slots");
    const lkv_json *rows = member(batch, "results");
    cr_assert_eq(rows->count, 2 * 2, "one entry per device and batch size");
    const lkv_json *eight = &rows->items[1]; /* cpu, 8 sequences */
    cr_assert_float_eq(member(eight, "sequences")->number, 8.0, 0.5);
    const lkv_json *b = member(eight, "batched"), *p = member(eight, "per_sequence");
    cr_assert_float_eq(member(b, "median_s")->number, 2e-3, 1e-12);
    cr_assert_float_eq(member(b, "median_per_sequence_s")->number, 2.5e-4, 1e-12);
    cr_assert_float_eq(member(p, "median_per_sequence_s")->number, 1e-3, 1e-12);
    cr_assert_float_eq(member(eight, "per_sequence_over_batched")->number, 4.0, 1e-9);
    const lkv_json *bc = member(b, "counters_per_step"), *pc = member(p, "counters_per_step");
    cr_assert_float_eq(member(bc, "launches")->number, 3.0, 1e-9);
    cr_assert_float_eq(member(pc, "launches")->number, 24.0, 1e-9);
    cr_assert_float_eq(member(bc, "h2d_bytes")->number, 22528.0, 1e-9);
    cr_assert_float_eq(member(bc, "syncs")->number, 1.0, 1e-9);
    const lkv_json *gpu = member(&rows->items[2], "batched");
    cr_assert_eq(member(gpu, "counters_per_step")->type, LKV_JSON_NULL,
                 "a backend without counters has none, not zeros");
    lkv_json_free(&doc);
    free(text);
    lkv_bench_results_free(&r);
}

static int write_table(FILE *f, const void *r)
{
    lkv_bench_print_table(f, r);
    return 0;
}

Test(bench_table, batch_table_has_a_row_per_device_and_size_and_the_ratio)
{
    lkv_bench_results r;
    fake_results(&r);
    char *text = capture(write_table, &r);
    const char *t = strstr(text, "batched decode step");
    cr_assert_not_null(t, "%s", text);
    cr_assert_not_null(strstr(t, "lkv_cache_decode_batch"));
    /* cpu at 8: 2.00 ms a step, 250 us a sequence; 8 calls 8.00 ms, 4x */
    const char *row = strstr(t, "cpu:0          8 |");
    cr_assert_not_null(row, "%s", t);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(row, "\n"), row);
    cr_assert_not_null(strstr(line, "2.00 ms"), "%s", line);
    cr_assert_not_null(strstr(line, "250 us"), "%s", line);
    cr_assert_not_null(strstr(line, " 22528 "), "h2d bytes per step: %s", line);
    cr_assert_not_null(strstr(line, "4.00x"), "%s", line);
    const char *gpu = strstr(t, "gpu:0          8 |");
    cr_assert_not_null(gpu);
    cr_assert_not_null(strstr(t, "keeps no device counters"), "the uncounted backend is noted");
    free(text);
    lkv_bench_results_free(&r);
}

Test(bench_json, a_bf16_shape_is_labelled_and_typed_bf16)
{
    lkv_bench_results r;
    fake_results(&r);
    r.settings.shapes[0].dtype = LKV_DTYPE_BF16;
    char *text = capture(write_json, &r);
    lkv_json doc;
    char err[256];
    cr_assert_eq(lkv_json_parse(text, strlen(text), &doc, err, sizeof err), 0,
                 "not JSON: %s", err);
    const lkv_json *shape = &member(&doc, "shapes")->items[0];
    cr_expect_str_eq(member(shape, "dtype")->text, "bf16");
    cr_expect_str_eq(member(shape, "label")->text, "hq32/hkv8/d128 bf16");
    const lkv_json *first = &member(&doc, "ops")->items[0];
    cr_expect_str_eq(member(first, "shape")->text, "hq32/hkv8/d128 bf16");
    cr_expect_float_eq(member(first, "bytes")->number, 4259840.0, 0.5);
    lkv_json_free(&doc);
    free(text);
    lkv_bench_results_free(&r);
}

/* ---- mixed lengths under one cache (bench_pool.c), worked by hand ---- */

/* 4 sequences, budget 64 and window 8 (capacity 72), the decode shape
 * 9/3/64 f16 (3 cache heads; a slot's K and V are 256 bytes): prompts of
 * 8 + 56 j / 3 = 8, 26, 45, 64 tokens; after the 8 steps the rows hold 16,
 * 34, 53 and 72 slots (the longest reaches B + W at its eighth step and
 * evicts back to 64 after storing). Compacting reserves every row at
 * capacity: 4 x 3 x 72 x 256 = 221184 bytes. Paged holds ceil(len / 16)
 * blocks a row at the peak, 1 + 3 + 4 + 5 = 13 a cache head, 39 blocks of
 * 16 x 256 bytes = 159744; live, 175 slots a head: 3 x 175 x 256 = 134400.
 * A pool of exactly 39 blocks serves the same run. */
Test(bench_pool, memory_is_the_hand_counted_rows_and_blocks)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 1);
    s.batch_slots = 64;
    s.window = 8;
    s.n_batches = 1;
    s.batches[0] = 4;
    cr_assert_eq(lkv_bench_pool_prompt(0, 4, 64), 8);
    cr_assert_eq(lkv_bench_pool_prompt(1, 4, 64), 26);
    cr_assert_eq(lkv_bench_pool_prompt(2, 4, 64), 45);
    cr_assert_eq(lkv_bench_pool_prompt(3, 4, 64), 64);
    cr_assert_eq(lkv_bench_pool_prompt(0, 1, 64), 64, "one sequence: the longest");
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    lkv_bench_decode_inputs in;
    TU_OK(lkv_bench_decode_inputs_make(&s.decode_shape, s.batch_slots, lkv_bench_batch_tokens(&s),
                                       s.seed, &in));
    lkv_bench_pool p;
    lkv_bench_pool_run(rt, &s, &in, 4, &p);
    cr_assert_eq(p.status, LKV_OK, "%s", p.error);
    cr_expect_eq(p.compact_kv_bytes, 221184);
    cr_expect_eq(p.peak_blocks, 39);
    cr_expect_eq(p.paged_kv_bytes, 159744);
    cr_expect_eq(p.live_kv_bytes, 134400);
    cr_expect(p.sized_ok, "a pool of the peak blocks serves the run");
    cr_expect(p.compact_step_s > 0.0 && p.paged_step_s > 0.0);
    lkv_bench_decode_inputs_free(&in);
    lkv_runtime_close(rt);
}

/* The overlap run on the cpu backend: the eviction found at the window's
 * last step (the run fails otherwise), the helper thread named, the share
 * hidden computed from the three times, larger batches left out. */
Test(bench_overlap, the_cpu_runs_it_on_the_helper_thread)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 1);
    s.batch_slots = 96;
    s.n_batches = 1;
    s.batches[0] = 3;
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    lkv_bench_decode_inputs in;
    TU_OK(lkv_bench_decode_inputs_make(&s.decode_shape, s.batch_slots, lkv_bench_batch_tokens(&s),
                                       s.seed, &in));
    lkv_bench_overlap o;
    lkv_bench_overlap_run(rt, &s, &in, 3, &o);
    cr_assert_eq(o.status, LKV_OK, "%s", o.error);
    cr_expect_eq(o.layers, LKV_BENCH_OVERLAP_LAYERS);
    cr_expect_eq(o.lane, 0, "the cpu backend has no lanes");
    cr_expect(o.inline_s > 0.0 && o.background_s > 0.0);
    if (o.evict_s > 0.0)
        cr_expect_float_eq(o.hidden, (o.inline_s - o.background_s) / o.evict_s, 1e-12);
    else
        cr_expect_eq(o.hidden, 0.0, "no eviction cost: nothing to hide");
    lkv_bench_overlap_run(rt, &s, &in, LKV_BENCH_OVERLAP_MAX_SEQUENCES + 1, &o);
    cr_expect_eq(o.status, LKV_UNSUPPORTED);
    cr_expect(strstr(o.error, "up to 8 sequences"), "%s", o.error);
    lkv_bench_decode_inputs_free(&in);
    lkv_runtime_close(rt);
}

/* ---- the batched decode step on the cpu oracle ---- */

/* Both ways at each size, 128 slots a sequence, few steps: only the counters
 * are looked at, and on the cpu backend they are exact. */
static void cpu_batches(const int32_t *sizes, int n, lkv_bench_batch *out)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 1);
    s.n_batches = n;
    memcpy(s.batches, sizes, sizeof *sizes * (size_t)n);
    s.batch_slots = 128;
    s.max_warmup = 1;
    s.min_reps = s.max_reps = 3;
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    lkv_bench_decode_inputs in;
    TU_OK(lkv_bench_decode_inputs_make(&s.decode_shape, s.batch_slots, lkv_bench_batch_tokens(&s),
                                       s.seed, &in));
    lkv_bench_progress p;
    lkv_bench_progress_start(&p, 0, 2 * n);
    for (int i = 0; i < n; i++) {
        lkv_bench_batch_run(rt, &s, &in, sizes[i], "cpu", &p, &out[i]);
        cr_assert_eq(out[i].status, LKV_OK, "batch of %d: %s", sizes[i], out[i].error);
        cr_assert(out[i].counted, "the cpu backend keeps counters");
    }
    lkv_bench_decode_inputs_free(&in);
    lkv_runtime_close(rt);
}

Test(bench_batch, a_batched_step_costs_the_launches_and_syncs_of_a_batch_of_one)
{
    const int32_t sizes[] = {1, 5};
    lkv_bench_batch b[2];
    cpu_batches(sizes, 2, b);
    const lkv_bench_batch_counters *one = &b[0].batched.counters, *five = &b[1].batched.counters;
    cr_assert(one->launches >= 3.0, "store, attend, observe: %g", one->launches);
    cr_assert_eq(five->launches, one->launches);
    cr_assert_eq(five->syncs, one->syncs);
    cr_assert_eq(five->h2d_copies, one->h2d_copies, "q, k and v staged once each");
    cr_assert_eq(five->d2h_copies, one->d2h_copies, "the outputs read back once");
    cr_assert_eq(one->h2d_copies, 3.0);
    cr_assert_eq(one->d2h_copies, 1.0);
}

Test(bench_batch, per_sequence_calls_cost_n_times_a_batch_of_one)
{
    const int32_t sizes[] = {1, 5};
    lkv_bench_batch b[2];
    cpu_batches(sizes, 2, b);
    const lkv_bench_batch_counters *one = &b[0].per_sequence.counters;
    const lkv_bench_batch_counters *five = &b[1].per_sequence.counters;
    const lkv_bench_batch_counters *batched = &b[0].batched.counters;
    cr_assert_eq(one->launches, batched->launches, "a per-sequence call is the batch of one");
    cr_assert_eq(one->syncs, batched->syncs);
    cr_assert_eq(five->launches, 5.0 * one->launches);
    cr_assert_eq(five->syncs, 5.0 * one->syncs);
    cr_assert_eq(five->h2d_copies, 5.0 * one->h2d_copies);
    cr_assert_eq(five->d2h_copies, 5.0 * one->d2h_copies);
}

Test(bench_batch, both_ways_move_the_bytes_of_the_step_rows)
{
    const int32_t sizes[] = {1, 5};
    lkv_bench_batch b[2];
    cpu_batches(sizes, 2, b);
    /* hq9/hkv3/d64: q 9*64, k and v 3*64 each, f32 in and out */
    double in_row = (9 * 64 + 2 * 3 * 64) * 4.0, out_row = 9 * 64 * 4.0;
    for (int i = 0; i < 2; i++) {
        const lkv_bench_batch_side *sides[] = {&b[i].batched, &b[i].per_sequence};
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(sides[k]->counters.h2d_bytes, sizes[i] * in_row, "%d sequences, %s",
                         sizes[i], k ? "per-sequence" : "batched");
            cr_assert_eq(sides[k]->counters.d2h_bytes, sizes[i] * out_row);
            cr_assert_eq(sides[k]->step.status, LKV_OK);
            cr_assert_eq(sides[k]->step.reps, 3);
        }
    }
}

/* ---- SVG ---- */

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(bench_svg, one_marker_per_measured_point_and_a_gap_for_the_failure)
{
    lkv_bench_results r;
    fake_results(&r);
    char *svg = capture(write_svg, &r);
    cr_assert(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "</svg>\n"), "not a whole SVG file");
    /* Circles: op panels 7 x 2 devices x 2 lengths - 1 failed = 27; decode
     * lazy 2 x 2 = 4; observation ratio 4 - 1 (its plain attend failed) = 3;
     * roofline panel 4; legends: 2 backends, 1 shape, 1 decode "lazy" = 4. */
    cr_assert_eq(count(svg, "<circle"), 27 + 4 + 3 + 4 + 4);
    /* Squares: decode full 2 x 2 and its legend entry. */
    cr_assert_eq(count(svg, "<rect x"), 2 * 2 + 1 + 10, "squares plus the 10 panel frames");
    free(svg);
    lkv_bench_results_free(&r);
}

Test(bench_svg, device_names_are_escaped)
{
    lkv_bench_results r;
    fake_results(&r);
    char *svg = capture(write_svg, &r);
    cr_assert_not_null(strstr(svg, "a&lt;b &amp; c"));
    cr_assert_null(strstr(svg, "a<b"));
    free(svg);
    lkv_bench_results_free(&r);
}

/* ---- the command line ---- */

static int run(const char *args, char *out, size_t len)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 </dev/null", cli, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(bench_cli, help_prints_usage)
{
    char out[8192];
    cr_assert_eq(run("bench --help", out, sizeof out), 0);
    cr_assert_not_null(strstr(out, "usage: lazykv bench"));
}

Test(bench_cli, a_bad_length_is_one_line_naming_it)
{
    char out[8192];
    cr_assert_eq(run("bench --lengths 1024,7", out, sizeof out), 2);
    cr_assert_not_null(strstr(out, "'7'"), "%s", out);
    cr_assert_eq(count(out, "\n"), 1, "%s", out);
}

Test(bench_cli, a_bad_batch_size_is_one_line_naming_it)
{
    char out[8192];
    cr_assert_eq(run("bench --batches 1,x", out, sizeof out), 2);
    cr_assert_not_null(strstr(out, "'x'"), "%s", out);
    cr_assert_eq(count(out, "\n"), 1, "%s", out);
}

Test(bench_cli, an_unknown_backend_is_an_error_not_a_fallback)
{
    char out[8192];
    cr_assert_eq(run("bench --backends nosuch --quick", out, sizeof out), 2);
    cr_assert_not_null(strstr(out, "nosuch"), "%s", out);
}

Test(bench_cli, an_unknown_model_device_is_one_line_naming_it)
{
    char out[8192];
    cr_assert_eq(run("bench --model h200,h300", out, sizeof out), 2);
    cr_assert(strstr(out, "'h300'") && strstr(out, "mi300x"), "%s", out);
    cr_assert_eq(count(out, "\n"), 1, "%s", out);
}

/* The model alone (no --backends): the hand-computed 37.6 us of
 * bench_model/attend_probs_on_h200_is_the_hand_computed_time, labelled. */
Test(bench_cli, the_model_alone_prints_its_table_labelled)
{
    char out[65536];
    cr_assert_eq(run("bench --model h200 --lengths 32K", out, sizeof out), 0);
    cr_assert_not_null(strstr(out, "MODEL (estimates"), "%s", out);
    cr_assert_not_null(strstr(out, "attend + probs      32K |    37.6 us"), "%s", out);
    cr_assert_null(strstr(out, "copy roofline"), "measured something: %s", out);
}

/* ---- the decode step's evicting step ---- */

/* One period of W timed steps holds exactly one eviction: the bench finds
 * that step by the cache's eviction count and times it alone, with the
 * budget the option set. */
Test(bench_decode, the_evicting_step_is_found_and_timed_alone)
{
    lkv_bench_settings s;
    lkv_bench_settings_init(&s, 1);
    s.window = 16;
    s.decode_budget = 48;
    s.full_steps = 2;
    lkv_runtime *rt = NULL;
    TU_OK(lkv_runtime_open("cpu", &rt));
    lkv_bench_decode_inputs in;
    TU_OK(lkv_bench_decode_inputs_make(&s.decode_shape, 64, lkv_bench_decode_steps(&s), s.seed,
                                       &in));
    lkv_bench_progress p;
    lkv_bench_progress_start(&p, 0, 2);
    lkv_bench_decode d;
    lkv_bench_decode_run(rt, &s, &in, 64, "cpu", &p, &d);
    cr_assert_eq(d.status, LKV_OK, "%s", d.error);
    cr_expect_eq(d.budget, 48);
    cr_expect_gt(d.lazy_evict_ms, 0.0, "no evicting step was found in a period of W steps");
    cr_expect_leq(d.lazy_evict_ms, d.lazy_max_ms, "the evicting step is slower than the slowest");
    /* a budget above the length skips the decode step, saying why */
    s.decode_budget = 65;
    lkv_bench_decode_run(rt, &s, &in, 64, "cpu", &p, &d);
    cr_expect_eq(d.status, LKV_UNSUPPORTED);
    cr_expect(strstr(d.error, "budget 65"), "%s", d.error);
    lkv_bench_decode_inputs_free(&in);
    lkv_runtime_close(rt);
}
