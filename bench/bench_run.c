/* The whole benchmark: open the devices, measure each one's copy roofline,
 * time the ops per shape and length on inputs made once per shape, then the
 * public-API decode step and the batched decode step, each on inputs made
 * once for all devices, and the engine-owned path at the batch sizes. */
#include <string.h>

#include "bench.h"
#include "bench_batch.h"
#include "bench_copy.h"
#include "bench_decode.h"
#include "bench_engine.h"
#include "bench_devices.h"
#include "bench_inputs.h"
#include "bench_machine.h"
#include "bench_ops.h"
#include "bench_progress.h"
#include "bench_timer.h"
#include "clock.h"

/* Progress steps: per device the copy, per (shape, length) an upload and the
 * ops, per length the two decode runs, per batch size its two ways, the
 * mixed lengths, the eviction overlap and the engine-owned run. */
static int progress_total(const lkv_bench_settings *s, int n_devices)
{
    int per_device = 1 + s->n_shapes * s->n_lengths * (1 + LKV_BENCH_OP_COUNT) + 2 * s->n_lengths +
                     5 * s->n_batches;
    return n_devices * per_device;
}

static lkv_status run_ops(lkv_runtime **rts, lkv_bench_results *r, lkv_bench_progress *p)
{
    const lkv_bench_settings *s = &r->settings;
    int32_t max_len = s->lengths[s->n_lengths - 1];
    for (int sh = 0; sh < s->n_shapes; sh++) {
        char shape[48];
        lkv_bench_shape_label(&s->shapes[sh], shape, sizeof shape);
        lkv_bench_progress_note(p, "making inputs for %s", shape);
        lkv_bench_op_inputs in;
        lkv_status st = lkv_bench_op_inputs_make(&s->shapes[sh], max_len, s->seed, &in);
        if (st != LKV_OK)
            return st;
        for (int d = 0; d < r->n_devices; d++) {
            char label[96];
            snprintf(label, sizeof label, "%s %s", r->devices[d].label, shape);
            for (int l = 0; l < s->n_lengths; l++)
                lkv_bench_ops_run(rts[d], s, &in, s->lengths[l], label, p,
                                  lkv_bench_op_at(r, d, sh, l, 0));
        }
        lkv_bench_op_inputs_free(&in);
    }
    return LKV_OK;
}

static lkv_status run_decode(lkv_runtime **rts, lkv_bench_results *r, lkv_bench_progress *p)
{
    const lkv_bench_settings *s = &r->settings;
    lkv_bench_decode_inputs in;
    lkv_bench_progress_note(p, "making decode inputs");
    lkv_status st = lkv_bench_decode_inputs_make(&s->decode_shape, s->lengths[s->n_lengths - 1],
                                                 lkv_bench_decode_steps(s), s->seed, &in);
    if (st != LKV_OK)
        return st;
    for (int d = 0; d < r->n_devices; d++)
        for (int l = 0; l < s->n_lengths; l++)
            lkv_bench_decode_run(rts[d], s, &in, s->lengths[l], r->devices[d].label, p,
                                 lkv_bench_decode_at(r, d, l));
    lkv_bench_decode_inputs_free(&in);
    return LKV_OK;
}

static void run_engine(lkv_runtime **rts, lkv_bench_results *r, lkv_bench_progress *p)
{
    const lkv_bench_settings *s = &r->settings;
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            lkv_bench_engine_run(rts[d], s, s->batches[b], r->devices[d].label, p,
                                 lkv_bench_engine_at(r, d, b));
}

static lkv_status run_batch(lkv_runtime **rts, lkv_bench_results *r, lkv_bench_progress *p)
{
    const lkv_bench_settings *s = &r->settings;
    if (s->n_batches == 0)
        return LKV_OK;
    lkv_bench_decode_inputs in;
    lkv_bench_progress_note(p, "making batch inputs");
    lkv_status st = lkv_bench_decode_inputs_make(&s->decode_shape, s->batch_slots,
                                                 lkv_bench_batch_tokens(s), s->seed, &in);
    if (st != LKV_OK)
        return st;
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            lkv_bench_batch_run(rts[d], s, &in, s->batches[b], r->devices[d].label, p,
                                lkv_bench_batch_at(r, d, b));
    lkv_bench_decode_inputs_free(&in);
    return LKV_OK;
}

lkv_status lkv_bench_run(const lkv_bench_settings *s, lkv_bench_results *out)
{
    double t0 = lkv_clock_seconds();
    lkv_runtime *rts[LKV_BENCH_MAX_DEVICES];
    lkv_bench_device devs[LKV_BENCH_MAX_DEVICES];
    int n = 0;
    lkv_status st = lkv_bench_devices_open(s, rts, devs, &n);
    if (st != LKV_OK)
        return st;
    if ((st = lkv_bench_results_init(out, s, n)) != LKV_OK) {
        lkv_bench_devices_close(rts, n);
        return st;
    }
    lkv_bench_machine_probe(&out->machine);
    lkv_bench_progress p;
    lkv_bench_progress_start(&p, s->progress, progress_total(s, n));
    for (int d = 0; d < n; d++) {
        out->devices[d] = devs[d];
        lkv_bench_progress_step(&p, "%s copy bandwidth", devs[d].label);
        lkv_bench_copy_run(rts[d], s, &out->devices[d]);
    }
    st = run_ops(rts, out, &p);
    if (st == LKV_OK)
        st = run_decode(rts, out, &p);
    if (st == LKV_OK)
        st = run_batch(rts, out, &p);
    if (st == LKV_OK)
        run_engine(rts, out, &p);
    lkv_bench_progress_end(&p);
    lkv_bench_devices_close(rts, n);
    out->peak_rss_bytes = lkv_bench_peak_rss();
    out->wall_s = lkv_clock_seconds() - t0;
    if (st != LKV_OK)
        lkv_bench_results_free(out);
    return st;
}
