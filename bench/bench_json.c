/* The results as JSON (`lazykv bench --json FILE`): the machine, every
 * backend with its device and copy roofline, and every measurement with the
 * bytes model's figure beside it, so a script can redo any ratio. Times are
 * in seconds, except the decode step's, in milliseconds as in the table. */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "bench_overlap.h"
#include "bench_pool.h"
#include "bench_engine.h"
#include "json_writer.h"

static void write_timing(lkv_jw *w, const lkv_bench_timing *t)
{
    lkv_jw_string(w, "status", lkv_status_name(t->status));
    if (t->status != LKV_OK) {
        lkv_jw_string(w, "error", t->error);
        return;
    }
    lkv_jw_number(w, "median_s", t->median_s);
    lkv_jw_number(w, "min_s", t->min_s);
    lkv_jw_int(w, "reps", t->reps);
}

static void write_shape(lkv_jw *w, const char *key, const lkv_bench_shape *s)
{
    char label[48];
    lkv_bench_shape_label(s, label, sizeof label);
    lkv_jw_begin_object(w, key, 1);
    lkv_jw_string(w, "label", label);
    lkv_jw_string(w, "like", s->like);
    lkv_jw_int(w, "q_heads", s->q_heads);
    lkv_jw_int(w, "kv_heads", s->kv_heads);
    lkv_jw_int(w, "head_dim", s->head_dim);
    lkv_jw_string(w, "dtype", lkv_dtype_name(s->dtype));
    lkv_jw_end_object(w);
}

static void write_machine(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_machine *m = &r->machine;
    lkv_jw_begin_object(w, "machine", 0);
    lkv_jw_string(w, "cpu", m->cpu);
    lkv_jw_int(w, "cores", m->cores);
    lkv_jw_int(w, "memory_bytes", (int64_t)m->memory_bytes);
    lkv_jw_string(w, "os", m->os);
    lkv_jw_string(w, "date", m->date);
    lkv_jw_int(w, "peak_rss_bytes", r->peak_rss_bytes);
    lkv_jw_number(w, "wall_s", r->wall_s);
    lkv_jw_end_object(w);
}

static void write_settings(lkv_jw *w, const lkv_bench_settings *s)
{
    lkv_jw_begin_object(w, "settings", 0);
    lkv_jw_bool(w, "quick", s->quick);
    lkv_jw_begin_array(w, "lengths", 1);
    for (int l = 0; l < s->n_lengths; l++)
        lkv_jw_int(w, NULL, s->lengths[l]);
    lkv_jw_end_array(w);
    lkv_jw_int(w, "keep_percent", s->keep_percent);
    lkv_jw_int(w, "max_warmup", s->max_warmup);
    lkv_jw_int(w, "min_reps", s->min_reps);
    lkv_jw_int(w, "max_reps", s->max_reps);
    lkv_jw_number(w, "target_s", s->target_s);
    lkv_jw_int(w, "copy_bytes", (int64_t)s->copy_bytes);
    lkv_jw_int(w, "seed", (int64_t)s->seed);
    lkv_jw_begin_array(w, "batches", 1);
    for (int b = 0; b < s->n_batches; b++)
        lkv_jw_int(w, NULL, s->batches[b]);
    lkv_jw_end_array(w);
    lkv_jw_int(w, "batch_slots", s->batch_slots);
    lkv_jw_string(w, "timing", "host-observed: monotonic clock around (issue the op, sync)");
    lkv_jw_string(w, "unit", "one layer of one sequence: cache rows = kv_heads");
    lkv_jw_end_object(w);
}

static void write_bytes_model(lkv_jw *w)
{
    lkv_jw_begin_object(w, "bytes_model", 0);
    lkv_jw_string(w, "legend", LKV_BENCH_BYTES_LEGEND);
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++)
        lkv_jw_string(w, lkv_bench_op_id((lkv_bench_op)op), lkv_bench_op_formula((lkv_bench_op)op));
    lkv_jw_end_object(w);
}

static void write_backends(lkv_jw *w, const lkv_bench_results *r)
{
    lkv_jw_begin_array(w, "backends", 0);
    for (int d = 0; d < r->n_devices; d++) {
        const lkv_bench_device *dv = &r->devices[d];
        lkv_jw_begin_object(w, NULL, 0);
        lkv_jw_string(w, "label", dv->label);
        lkv_jw_string(w, "backend", dv->backend);
        lkv_jw_int(w, "device", dv->device);
        lkv_jw_string(w, "name", dv->name);
        lkv_jw_string(w, "driver", dv->driver);
        lkv_jw_bool(w, "emulated", dv->emulated);
        lkv_jw_begin_object(w, "copy", 1);
        lkv_jw_int(w, "buffer_bytes", (int64_t)r->settings.copy_bytes);
        lkv_jw_int(w, "bytes_moved", 2 * (int64_t)r->settings.copy_bytes);
        write_timing(w, &dv->copy);
        lkv_jw_end_object(w);
        lkv_jw_number(w, "copy_bandwidth_bytes_per_s", dv->copy_bytes_per_s);
        lkv_jw_end_object(w);
    }
    lkv_jw_end_array(w);
}

static void write_op(lkv_jw *w, const lkv_bench_results *r, int d, int sh, int l, lkv_bench_op op)
{
    const lkv_bench_settings *s = &r->settings;
    const lkv_bench_timing *t = lkv_bench_op_at(r, d, sh, l, op);
    int32_t len = s->lengths[l], keep = lkv_bench_keep(s, len);
    double bytes = lkv_bench_op_bytes(op, &s->shapes[sh], len, keep);
    char shape[48];
    lkv_bench_shape_label(&s->shapes[sh], shape, sizeof shape);
    lkv_jw_begin_object(w, NULL, 1);
    lkv_jw_string(w, "backend", r->devices[d].label);
    lkv_jw_string(w, "shape", shape);
    lkv_jw_string(w, "op", lkv_bench_op_id(op));
    lkv_jw_int(w, "length", len);
    lkv_jw_int(w, "keep", keep);
    lkv_jw_int(w, "rows", s->shapes[sh].kv_heads);
    lkv_jw_int(w, "bytes", (int64_t)llround(bytes)); /* the model gives whole bytes */
    write_timing(w, t);
    if (t->status == LKV_OK && t->median_s > 0.0) {
        double bw = bytes / t->median_s, roof = r->devices[d].copy_bytes_per_s;
        lkv_jw_number(w, "bandwidth_bytes_per_s", bw);
        if (roof > 0.0)
            lkv_jw_number(w, "fraction_of_copy", bw / roof);
        else
            lkv_jw_null(w, "fraction_of_copy");
    }
    lkv_jw_end_object(w);
}

static void write_ops(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    lkv_jw_begin_array(w, "ops", 0);
    for (int d = 0; d < r->n_devices; d++)
        for (int sh = 0; sh < s->n_shapes; sh++)
            for (int l = 0; l < s->n_lengths; l++)
                for (int op = 0; op < LKV_BENCH_OP_COUNT; op++)
                    write_op(w, r, d, sh, l, (lkv_bench_op)op);
    lkv_jw_end_array(w);
}

static void write_observation(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    lkv_jw_begin_array(w, "observation_cost", 0);
    for (int d = 0; d < r->n_devices; d++)
        for (int sh = 0; sh < s->n_shapes; sh++)
            for (int l = 0; l < s->n_lengths; l++) {
                const lkv_bench_timing *p = lkv_bench_op_at(r, d, sh, l, LKV_BENCH_ATTEND_PROBS);
                const lkv_bench_timing *q = lkv_bench_op_at(r, d, sh, l, LKV_BENCH_ATTEND_PLAIN);
                char shape[48];
                lkv_bench_shape_label(&s->shapes[sh], shape, sizeof shape);
                lkv_jw_begin_object(w, NULL, 1);
                lkv_jw_string(w, "backend", r->devices[d].label);
                lkv_jw_string(w, "shape", shape);
                lkv_jw_int(w, "length", s->lengths[l]);
                if (p->status == LKV_OK && q->status == LKV_OK && q->median_s > 0.0)
                    lkv_jw_number(w, "probs_over_plain", p->median_s / q->median_s);
                else
                    lkv_jw_null(w, "probs_over_plain");
                lkv_jw_end_object(w);
            }
    lkv_jw_end_array(w);
}

static void write_decode_side(lkv_jw *w, const char *key, double ms, double max_ms, int steps,
                              int64_t peak, int64_t reserved)
{
    lkv_jw_begin_object(w, key, 1);
    lkv_jw_number(w, "ms_per_step", ms);
    lkv_jw_number(w, "max_step_ms", max_ms);
    lkv_jw_int(w, "steps", steps);
    lkv_jw_int(w, "kv_bytes_peak", peak);
    lkv_jw_int(w, "kv_bytes_reserved", reserved);
    lkv_jw_end_object(w);
}

static void write_decode(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    lkv_jw_begin_object(w, "decode", 0);
    write_shape(w, "shape", &s->decode_shape);
    lkv_jw_int(w, "layers", 1);
    lkv_jw_string(w, "policy", "lazy");
    lkv_jw_int(w, "budget_percent", s->keep_percent);
    lkv_jw_int(w, "window", s->window);
    lkv_jw_begin_array(w, "results", 0);
    for (int d = 0; d < r->n_devices; d++)
        for (int l = 0; l < s->n_lengths; l++) {
            const lkv_bench_decode *dc = lkv_bench_decode_at(r, d, l);
            lkv_jw_begin_object(w, NULL, 0);
            lkv_jw_string(w, "backend", r->devices[d].label);
            lkv_jw_int(w, "length", dc->length ? dc->length : s->lengths[l]);
            lkv_jw_string(w, "status", lkv_status_name(dc->status));
            if (dc->status != LKV_OK) {
                lkv_jw_string(w, "error", dc->error);
                lkv_jw_end_object(w);
                continue;
            }
            lkv_jw_int(w, "budget", dc->budget);
            write_decode_side(w, "lazy", dc->lazy_ms, dc->lazy_max_ms, dc->lazy_steps,
                              dc->lazy_kv_peak, dc->lazy_kv_reserved);
            write_decode_side(w, "full", dc->full_ms, dc->full_max_ms, dc->full_steps,
                              dc->full_kv_peak, dc->full_kv_reserved);
            lkv_jw_number(w, "lazy_evicting_step_ms", dc->lazy_evict_ms);
            lkv_jw_number(w, "background_evicting_call_ms", dc->bg_evict_call_ms);
            lkv_jw_number(w, "background_eviction_ms", dc->bg_eviction_ms);
            lkv_jw_number(w, "holes_ms_per_step", dc->holes_ms);
            lkv_jw_number(w, "holes_evicting_step_ms", dc->holes_evict_ms);
            lkv_jw_number(w, "holes_background_evicting_call_ms", dc->holes_bg_call_ms);
            lkv_jw_number(w, "paged_evicting_step_ms", dc->paged_evict_ms);
            lkv_jw_int(w, "paged_kv_bytes_peak", dc->paged_kv_peak);
            lkv_jw_number(w, "lazy_over_full", dc->lazy_ms / dc->full_ms);
            lkv_jw_end_object(w);
        }
    lkv_jw_end_array(w);
    lkv_jw_end_object(w);
}

static void write_counters(lkv_jw *w, const lkv_bench_batch_counters *c)
{
    lkv_jw_begin_object(w, "counters_per_step", 1);
    lkv_jw_number(w, "launches", c->launches);
    lkv_jw_number(w, "h2d_copies", c->h2d_copies);
    lkv_jw_number(w, "h2d_bytes", c->h2d_bytes);
    lkv_jw_number(w, "d2h_copies", c->d2h_copies);
    lkv_jw_number(w, "d2h_bytes", c->d2h_bytes);
    lkv_jw_number(w, "syncs", c->syncs);
    lkv_jw_end_object(w);
}

static void write_batch_side(lkv_jw *w, const char *key, const lkv_bench_batch *b,
                             const lkv_bench_batch_side *side)
{
    lkv_jw_begin_object(w, key, 0);
    write_timing(w, &side->step);
    lkv_jw_number(w, "median_per_sequence_s", side->step.median_s / b->sequences);
    if (b->counted)
        write_counters(w, &side->counters);
    else
        lkv_jw_null(w, "counters_per_step");
    lkv_jw_end_object(w);
}

/* The same batch at mixed lengths (bench_pool.h), compacting vs paged. */
static void write_pool(lkv_jw *w, const lkv_bench_settings *s, const lkv_bench_batch *b)
{
    const lkv_bench_pool *p = &b->pool;
    lkv_jw_begin_object(w, "mixed_lengths", 0);
    lkv_jw_int(w, "shortest_prompt", lkv_bench_pool_prompt(0, b->sequences, s->batch_slots));
    lkv_jw_int(w, "longest_prompt", s->batch_slots);
    lkv_jw_int(w, "budget", s->batch_slots);
    lkv_jw_int(w, "capacity", s->batch_slots + s->window);
    lkv_jw_int(w, "block_size", LKV_BENCH_POOL_BLOCK);
    lkv_jw_string(w, "status", lkv_status_name(p->status));
    if (p->status != LKV_OK) {
        lkv_jw_string(w, "error", p->error);
    } else {
        lkv_jw_int(w, "compact_kv_bytes", p->compact_kv_bytes);
        lkv_jw_int(w, "paged_kv_bytes", p->paged_kv_bytes);
        lkv_jw_int(w, "live_kv_bytes", p->live_kv_bytes);
        lkv_jw_int(w, "paged_peak_blocks", p->peak_blocks);
        lkv_jw_number(w, "compact_step_s", p->compact_step_s);
        lkv_jw_number(w, "paged_step_s", p->paged_step_s);
        lkv_jw_bool(w, "peak_pool_served", p->sized_ok);
    }
    lkv_jw_end_object(w);
}

static void write_batch(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    lkv_jw_begin_object(w, "batch", 0);
    write_shape(w, "shape", &s->decode_shape);
    lkv_jw_int(w, "layers", 1);
    lkv_jw_string(w, "policy", "lazy");
    lkv_jw_int(w, "slots", s->batch_slots);
    lkv_jw_int(w, "budget", s->batch_slots);
    lkv_jw_int(w, "window", s->window);
    lkv_jw_begin_array(w, "results", 0);
    for (int d = 0; d < r->n_devices; d++)
        for (int i = 0; i < s->n_batches; i++) {
            const lkv_bench_batch *b = lkv_bench_batch_at(r, d, i);
            lkv_jw_begin_object(w, NULL, 0);
            lkv_jw_string(w, "backend", r->devices[d].label);
            lkv_jw_int(w, "sequences", s->batches[i]);
            lkv_jw_string(w, "status", lkv_status_name(b->status));
            if (b->status != LKV_OK) {
                lkv_jw_string(w, "error", b->error);
                lkv_jw_end_object(w);
                continue;
            }
            lkv_jw_bool(w, "counted", b->counted);
            write_batch_side(w, "batched", b, &b->batched);
            write_batch_side(w, "per_sequence", b, &b->per_sequence);
            lkv_jw_number(w, "per_sequence_over_batched",
                          b->per_sequence.step.median_s / b->batched.step.median_s);
            write_pool(w, s, b);
            lkv_bench_json_overlap(w, b);
            lkv_jw_end_object(w);
        }
    lkv_jw_end_array(w);
    lkv_jw_end_object(w);
}

int lkv_bench_write_json(FILE *f, const lkv_bench_results *r)
{
    lkv_jw w;
    lkv_jw_init(&w, f);
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_string(&w, "tool", "lazykv bench");
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", LKV_VERSION_MAJOR, LKV_VERSION_MINOR,
             LKV_VERSION_PATCH);
    lkv_jw_string(&w, "version", version);
    write_machine(&w, r);
    write_settings(&w, &r->settings);
    write_backends(&w, r);
    write_bytes_model(&w);
    lkv_jw_begin_array(&w, "shapes", 0);
    for (int sh = 0; sh < r->settings.n_shapes; sh++)
        write_shape(&w, NULL, &r->settings.shapes[sh]);
    lkv_jw_end_array(&w);
    write_ops(&w, r);
    write_observation(&w, r);
    write_decode(&w, r);
    write_batch(&w, r);
    lkv_bench_json_engine(&w, r);
    lkv_jw_end_object(&w);
    return lkv_jw_finish(&w);
}
