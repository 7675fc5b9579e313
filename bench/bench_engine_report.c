/* The engine-owned section of the bench table and JSON (bench_engine.h). */
#include <stdio.h>

#include "bench_engine.h"

static void print_row(FILE *f, const char *label, const lkv_bench_engine *e,
                      const lkv_bench_batch *owned)
{
    fprintf(f, "%-10s %5d |", label, e->sequences);
    if (e->status != LKV_OK) {
        fprintf(f, " %s\n", e->status == LKV_UNSUPPORTED ? "skipped (see notes)" : "FAIL (see notes)");
        return;
    }
    char obs[16], qk[16], qd[16] = "-", ev[16], cp[16], ld[16] = "-", ho[16], ad[16], ah[16];
    lkv_bench_format_time(e->observe_s, obs, sizeof obs);
    lkv_bench_format_time(e->observe_qk_s, qk, sizeof qk);
    if (e->observe_qk_dev_s >= 0)
        lkv_bench_format_time(e->observe_qk_dev_s, qd, sizeof qd);
    if (e->apply_lists_s >= 0)
        lkv_bench_format_time(e->apply_lists_s, ld, sizeof ld);
    lkv_bench_format_time(e->evict_s, ev, sizeof ev);
    lkv_bench_format_time(e->compact_s, cp, sizeof cp);
    lkv_bench_format_time(e->holes_s, ho, sizeof ho);
    lkv_bench_format_time(e->attend_dense_s, ad, sizeof ad);
    lkv_bench_format_time(e->attend_holes_s, ah, sizeof ah);
    fprintf(f, " %9s", obs);
    if (owned && owned->status == LKV_OK && owned->batched.step.median_s > 0)
        fprintf(f, " %7.2fx", e->observe_s / owned->batched.step.median_s);
    else
        fprintf(f, " %8s", "-");
    fprintf(f, " %9s %9s %9s | %9s %9s %9s %7.1fx %9lld | %6d %6d %5.0f%% | %9s %9s %6.2fx\n",
            qk, qd, ev, cp, ld, ho,
            e->holes_s > 0 ? e->compact_s / e->holes_s : 0.0, (long long)e->moved_slots,
            e->blocks_compact, e->blocks_holes, 100.0 * e->live_holes, ad, ah,
            e->attend_dense_s > 0 ? e->attend_holes_s / e->attend_dense_s : 0.0);
}

void lkv_bench_print_engine(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    if (s->n_batches == 0)
        return;
    char shape[48], len[16];
    lkv_bench_shape_label(&s->decode_shape, shape, sizeof shape);
    lkv_bench_format_length(s->batch_slots, len, sizeof len);
    fprintf(f, "\nengine-owned K/V (observe and plan), %s, 1 layer, %s slots per sequence, "
               "lazy W=%d:\nsteps: lkv_cache_observe_batch with host probabilities (observe: "
               "mean of W-1 steps; vs owned: that over the\nbatched step above, where lazykv "
               "also attends; from qk: an observe step\nhanded q and the engine's paged K "
               "instead, no lse; qk dev: the same on device arrays with an lse,\nwhere device "
               "memory is host memory; evict: the step that plans); the plan on the\nengine's "
               "paged f16 K/V, host, blocks of %d slots: compaction (lkv_plan_apply; lists: "
               "the\nsame moves from the cache's kept lists, lkv_cache_apply_plan_device) vs "
               "holes\n"
               "(lkv_slot_map_apply), blocks held after it, live share of the holes' cells; "
               "the engine's\nhost attention over the kept slots, compacted vs through the "
               "hole map (one thread)\n",
            shape, len, s->window, LKV_BENCH_ENGINE_BLOCK);
    fprintf(f, "%-16s | %-48s | %-57s | %-20s | %-27s\n", "", "steps", "apply the plan",
            "blocks held", "attention after");
    fprintf(f, "%-16s | %9s %8s %9s %9s %9s | %9s %9s %9s %8s %9s | %6s %6s %6s | %9s %9s %7s\n",
            "backend     seqs", "observe", "vs owned", "from qk", "qk dev", "evict", "compact",
            "lists", "holes", "ratio",
            "moved", "compct", "holes", "live", "compact", "holes", "ratio");
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            print_row(f, r->devices[d].label, lkv_bench_engine_at(r, d, b),
                      lkv_bench_batch_at(r, d, b));
}

void lkv_bench_note_engine(FILE *f, const lkv_bench_results *r, int device, int *count)
{
    for (int b = 0; b < r->settings.n_batches; b++) {
        const lkv_bench_engine *e = lkv_bench_engine_at(r, device, b);
        char what[96];
        snprintf(what, sizeof what, "%s engine-owned batch of %d", r->devices[device].label,
                 r->settings.batches[b]);
        if (e->status != LKV_OK)
            lkv_bench_note(f, count, what, e->status, e->error);
    }
}

static void write_result(lkv_jw *w, const char *backend, int32_t sequences,
                         const lkv_bench_engine *e)
{
    lkv_jw_begin_object(w, NULL, 0);
    lkv_jw_string(w, "backend", backend);
    lkv_jw_int(w, "sequences", sequences);
    lkv_jw_string(w, "status", lkv_status_name(e->status));
    if (e->status != LKV_OK) {
        lkv_jw_string(w, "error", e->error);
        lkv_jw_end_object(w);
        return;
    }
    lkv_jw_number(w, "observe_step_s", e->observe_s);
    lkv_jw_number(w, "observe_qk_step_s", e->observe_qk_s);
    if (e->observe_qk_dev_s >= 0)
        lkv_jw_number(w, "observe_qk_device_step_s", e->observe_qk_dev_s);
    if (e->apply_lists_s >= 0)
        lkv_jw_number(w, "apply_from_kept_lists_s", e->apply_lists_s);
    lkv_jw_number(w, "evicting_step_s", e->evict_s);
    lkv_jw_number(w, "compact_s", e->compact_s);
    lkv_jw_number(w, "holes_s", e->holes_s);
    lkv_jw_int(w, "moved_head_slots", e->moved_slots);
    lkv_jw_int(w, "blocks_compact", e->blocks_compact);
    lkv_jw_int(w, "blocks_holes", e->blocks_holes);
    lkv_jw_number(w, "live_share_holes", e->live_holes);
    lkv_jw_number(w, "attend_compact_s", e->attend_dense_s);
    lkv_jw_number(w, "attend_holes_s", e->attend_holes_s);
    lkv_jw_end_object(w);
}

void lkv_bench_json_engine(lkv_jw *w, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    char shape[48];
    lkv_bench_shape_label(&s->decode_shape, shape, sizeof shape);
    lkv_jw_begin_object(w, "engine", 0);
    lkv_jw_string(w, "shape", shape);
    lkv_jw_int(w, "layers", 1);
    lkv_jw_string(w, "policy", "lazy");
    lkv_jw_int(w, "slots", s->batch_slots);
    lkv_jw_int(w, "window", s->window);
    lkv_jw_int(w, "block_size", LKV_BENCH_ENGINE_BLOCK);
    lkv_jw_string(w, "engine_kv", "f16, host");
    lkv_jw_begin_array(w, "results", 0);
    for (int d = 0; d < r->n_devices; d++)
        for (int i = 0; i < s->n_batches; i++)
            write_result(w, r->devices[d].label, s->batches[i], lkv_bench_engine_at(r, d, i));
    lkv_jw_end_array(w);
    lkv_jw_end_object(w);
}
