/* The terminal report: machine and rooflines, one ops table per shape with a
 * column group per backend, the observation cost, the decode step, the
 * batched decode step, notes on anything that failed. Plain ASCII, fixed
 * widths, so it reads in a log. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_overlap.h"
#include "bench_pool.h"
#include "bench_engine.h"
#include "table.h"

#define CELL_WIDTH 33 /* "   median       min   GB/s %copy" */

/* A backend's column group in the ops table, and the row labels before it. */
static const lkv_table_column group_cols[] = {{9, 0}, {9, 0}, {6, 0}, {5, 0}};
static const lkv_table_column op_cols[] = {{15, 1}, {6, 0}};
static const lkv_table_column shape_cols[] = {{20, 1}, {6, 0}};

/* " median min GB/s %copy |", each cell right-aligned in its column. */
static void print_group(FILE *f, const char *med, const char *min, const char *bw,
                        const char *pct)
{
    const char *cells[] = {med, min, bw, pct};
    fputc(' ', f);
    lkv_table_cells(f, group_cols, 4, cells);
    fputs(" |", f);
}

/* "op     slots |": the op named on its first length only. */
static void print_op_label(FILE *f, const char *op, const char *len)
{
    const char *cells[] = {op, len};
    lkv_table_cells(f, op_cols, 2, cells);
    fputs(" |", f);
}

static void gbps(double bytes_per_s, char *buf, size_t len)
{
    double g = bytes_per_s / 1e9;
    snprintf(buf, len, g < 10.0 ? "%.2f" : g < 100.0 ? "%.1f" : "%.0f", g);
}

static void print_devices(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_machine *m = &r->machine;
    char mem[32], copy[32];
    lkv_bench_format_bytes((double)m->memory_bytes, mem, sizeof mem);
    lkv_bench_format_bytes((double)r->settings.copy_bytes, copy, sizeof copy);
    fprintf(f, "machine   %s, %d cores, %s, %s, %s\n", m->cpu, m->cores, mem, m->os, m->date);
    for (int d = 0; d < r->n_devices; d++) {
        const lkv_bench_device *dv = &r->devices[d];
        char bw[32] = "not measured";
        if (dv->copy_bytes_per_s > 0.0) {
            gbps(dv->copy_bytes_per_s, bw, sizeof bw);
            strcat(bw, " GB/s");
        }
        fprintf(f, "%-9s %-10s %s%s\n          %10s copy roofline %s (%s buffer, read + write)\n",
                d == 0 ? "backends" : "", dv->label, dv->name, dv->emulated ? " (emulated on the CPU)" : "",
                "", bw, copy);
    }
}

static void print_cell(FILE *f, const lkv_bench_timing *t, double bytes, double roof)
{
    if (t->status != LKV_OK) {
        fprintf(f, " %9s %*s|", t->status == LKV_UNSUPPORTED ? "n/a" : "FAIL", CELL_WIDTH - 11, "");
        return;
    }
    char med[16], min[16], bw[16], pct[16] = "-";
    lkv_bench_format_time(t->median_s, med, sizeof med);
    lkv_bench_format_time(t->min_s, min, sizeof min);
    gbps(bytes / t->median_s, bw, sizeof bw);
    if (roof > 0.0)
        snprintf(pct, sizeof pct, "%.0f%%", 100.0 * bytes / t->median_s / roof);
    print_group(f, med, min, bw, pct);
}

static void print_speedups(FILE *f, const lkv_bench_results *r, int sh, int l, lkv_bench_op op)
{
    int cpu = lkv_bench_cpu_index(r);
    if (cpu < 0)
        return;
    const lkv_bench_timing *base = lkv_bench_op_at(r, cpu, sh, l, op);
    for (int d = 0; d < r->n_devices; d++) {
        if (d == cpu)
            continue;
        const lkv_bench_timing *t = lkv_bench_op_at(r, d, sh, l, op);
        if (base->status == LKV_OK && t->status == LKV_OK && t->median_s > 0.0)
            fprintf(f, " %8.2fx", base->median_s / t->median_s);
        else
            fprintf(f, " %9s", "-");
    }
}

static void print_ops_header(FILE *f, const lkv_bench_results *r, int sh)
{
    const lkv_bench_shape *s = &r->settings.shapes[sh];
    char label[48];
    lkv_bench_shape_label(s, label, sizeof label);
    fprintf(f, "\nops on %s (%s attention), one layer of one sequence: %d cache rows; "
               "select/compact keep %d%%\n",
            label, s->like, s->kv_heads, r->settings.keep_percent);
    int cpu = lkv_bench_cpu_index(r);
    fprintf(f, "%-23s|", "");
    for (int d = 0; d < r->n_devices; d++)
        fprintf(f, " %-*s|", CELL_WIDTH - 1, r->devices[d].label);
    for (int d = 0; d < r->n_devices && cpu >= 0; d++)
        if (d != cpu)
            fprintf(f, " %9s", r->devices[d].label);
    fputc('\n', f);
    print_op_label(f, "op", "slots");
    for (int d = 0; d < r->n_devices; d++)
        print_group(f, "median", "min", "GB/s", "%copy");
    for (int d = 0; d < r->n_devices && cpu >= 0; d++)
        if (d != cpu)
            fprintf(f, " %9s", "vs cpu");
    fputc('\n', f);
}

static void print_ops(FILE *f, const lkv_bench_results *r, int sh)
{
    const lkv_bench_settings *s = &r->settings;
    print_ops_header(f, r, sh);
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++) {
        for (int l = 0; l < s->n_lengths; l++) {
            char len[16];
            lkv_bench_format_length(s->lengths[l], len, sizeof len);
            print_op_label(f, l == 0 ? lkv_bench_op_label((lkv_bench_op)op) : "", len);
            double bytes = lkv_bench_op_bytes((lkv_bench_op)op, &s->shapes[sh], s->lengths[l],
                                              lkv_bench_keep(s, s->lengths[l]));
            for (int d = 0; d < r->n_devices; d++)
                print_cell(f, lkv_bench_op_at(r, d, sh, l, (lkv_bench_op)op), bytes,
                           r->devices[d].copy_bytes_per_s);
            print_speedups(f, r, sh, l, (lkv_bench_op)op);
            fputc('\n', f);
        }
    }
}

static void print_observation(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    fprintf(f, "\nobservation cost: attend + probs time / plain attend time (medians)\n");
    lkv_table_cells(f, shape_cols, 2, (const char *const[]){"shape", "slots"});
    for (int d = 0; d < r->n_devices; d++)
        fprintf(f, " %10s", r->devices[d].label);
    fputc('\n', f);
    for (int sh = 0; sh < s->n_shapes; sh++) {
        char label[48];
        lkv_bench_shape_label(&s->shapes[sh], label, sizeof label);
        for (int l = 0; l < s->n_lengths; l++) {
            char len[16];
            lkv_bench_format_length(s->lengths[l], len, sizeof len);
            lkv_table_cells(f, shape_cols, 2, (const char *const[]){l == 0 ? label : "", len});
            for (int d = 0; d < r->n_devices; d++) {
                const lkv_bench_timing *p = lkv_bench_op_at(r, d, sh, l, LKV_BENCH_ATTEND_PROBS);
                const lkv_bench_timing *q = lkv_bench_op_at(r, d, sh, l, LKV_BENCH_ATTEND_PLAIN);
                if (p->status == LKV_OK && q->status == LKV_OK && q->median_s > 0.0)
                    fprintf(f, " %9.2fx", p->median_s / q->median_s);
                else
                    fprintf(f, " %10s", "-");
            }
            fputc('\n', f);
        }
    }
}

static void print_decode_row(FILE *f, const char *label, const char *len,
                             const lkv_bench_decode *dc)
{
    fprintf(f, "%-10s %7s |", label, len);
    if (dc->status != LKV_OK) {
        fprintf(f, " %s\n", dc->status == LKV_UNSUPPORTED ? "skipped (see notes)" : "FAIL (see notes)");
        return;
    }
    char lp[16], lr[16], fp[16], fr[16];
    lkv_bench_format_bytes((double)dc->lazy_kv_peak, lp, sizeof lp);
    lkv_bench_format_bytes((double)dc->lazy_kv_reserved, lr, sizeof lr);
    lkv_bench_format_bytes((double)dc->full_kv_peak, fp, sizeof fp);
    lkv_bench_format_bytes((double)dc->full_kv_reserved, fr, sizeof fr);
    fprintf(f, " %8.3f %8.3f | %8.3f %8.3f | %8.2fx | %10s %10s | %10s %10s | %8.3f %8.3f %8.3f",
            dc->lazy_ms, dc->lazy_max_ms, dc->full_ms, dc->full_max_ms, dc->lazy_ms / dc->full_ms,
            lp, lr, fp, fr, dc->lazy_evict_ms, dc->bg_evict_call_ms, dc->bg_eviction_ms);
    if (dc->holes_evict_ms > 0.0)
        fprintf(f, " %8.3f %8.3f", dc->holes_evict_ms, dc->holes_bg_call_ms);
    else
        fprintf(f, " %8s %8s", "-", "-");
    char gp[16] = "-";
    if (dc->paged_kv_peak > 0)
        lkv_bench_format_bytes((double)dc->paged_kv_peak, gp, sizeof gp);
    if (dc->paged_evict_ms > 0.0)
        fprintf(f, " %8.3f %10s\n", dc->paged_evict_ms, gp);
    else
        fprintf(f, " %8s %10s\n", "-", "-");
}

static void print_decode(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    char shape[48];
    lkv_bench_shape_label(&s->decode_shape, shape, sizeof shape);
    char budget[48];
    if (s->decode_budget > 0)
        snprintf(budget, sizeof budget, "%d slots", s->decode_budget);
    else
        snprintf(budget, sizeof budget, "%d%% of the sequence", s->keep_percent);
    fprintf(f, "\ndecode step through the public API (lkv_cache_decode + sync), %s, 1 layer:\n"
               "lazy at budget %s, window %d (mean over one eviction period; max: the "
               "evicting step) vs the full cache; the evicting step inline vs with eviction =\n"
               "background: its call, and the eviction the helper thread runs off the step;\n"
               "holes: the evicting step with placement = holes (no K/V moves), inline and its\n"
               "call in the background; paged: the same in a pool of 16-slot blocks, inline, and\n"
               "the K/V bytes of the blocks it held at most (where the backend has a pool)\n",
            shape, budget, s->window);
    fprintf(f, "%-18s | %-17s | %-17s | %9s | %-21s | %-21s | %s\n", "", "lazy ms/step",
            "full ms/step", "", "lazy KV bytes", "full KV bytes", "evicting step ms");
    fprintf(f, "%-10s %7s | %8s %8s | %8s %8s | %9s | %10s %10s | %10s %10s | %8s %8s %8s %8s %8s "
               "%8s %10s\n",
            "backend", "seq len", "mean", "max", "mean", "max", "lazy/full", "peak", "reserved",
            "peak", "reserved", "inline", "bg call", "bg evict", "holes", "holes bg", "paged",
            "paged KV");
    for (int d = 0; d < r->n_devices; d++)
        for (int l = 0; l < s->n_lengths; l++) {
            char len[16];
            lkv_bench_format_length(s->lengths[l], len, sizeof len);
            print_decode_row(f, r->devices[d].label, len, lkv_bench_decode_at(r, d, l));
        }
}

/* A counter per step: whole when every step cost the same, as they do. */
static void print_count(FILE *f, int width, double v, int counted)
{
    if (!counted)
        fprintf(f, " %*s", width, "-");
    else if (v == (double)(int64_t)v)
        fprintf(f, " %*lld", width, (long long)v);
    else
        fprintf(f, " %*.1f", width, v);
}

/* " step  per-seq  launches  h2d B  d2h B  syncs |" */
static void print_batch_side(FILE *f, const lkv_bench_batch_side *side, int32_t n, int counted)
{
    char step[16], per[16];
    lkv_bench_format_time(side->step.median_s, step, sizeof step);
    lkv_bench_format_time(side->step.median_s / n, per, sizeof per);
    fprintf(f, " %9s %9s", step, per);
    const lkv_bench_batch_counters *c = &side->counters;
    print_count(f, 8, c->launches, counted);
    print_count(f, 9, c->h2d_bytes, counted);
    print_count(f, 9, c->d2h_bytes, counted);
    print_count(f, 5, c->syncs, counted);
    fputs(" |", f);
}

static void print_batch_row(FILE *f, const char *label, const lkv_bench_batch *b)
{
    fprintf(f, "%-10s %5d |", label, b->sequences);
    if (b->status != LKV_OK) {
        fprintf(f, " %s\n", b->status == LKV_UNSUPPORTED ? "skipped (see notes)" : "FAIL (see notes)");
        return;
    }
    print_batch_side(f, &b->batched, b->sequences, b->counted);
    print_batch_side(f, &b->per_sequence, b->sequences, b->counted);
    fprintf(f, " %7.2fx\n", b->per_sequence.step.median_s / b->batched.step.median_s);
}

static void print_batch(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    if (s->n_batches == 0)
        return;
    char shape[48], len[16];
    lkv_bench_shape_label(&s->decode_shape, shape, sizeof shape);
    lkv_bench_format_length(s->batch_slots, len, sizeof len);
    fprintf(f, "\nbatched decode step, %s, 1 layer, %s slots per sequence, lazy with no eviction "
               "due:\none lkv_cache_decode_batch call per step vs one lkv_cache_decode per "
               "sequence (+ sync, median);\ncounters per step from lkv_runtime_get_counters "
               "(launches, host->device bytes, device->host bytes, host syncs)\n",
            shape, len);
    fprintf(f, "%-16s | %-54s | %-54s |\n", "", "batched: 1 call per step",
            "per-sequence: n calls per step");
    for (int side = 0; side < 2; side++)
        fprintf(f, "%s %9s %9s %8s %9s %9s %5s", side ? " |" : "backend     seqs |", "step",
                "per seq", "launches", "h2d B", "d2h B", "syncs");
    fprintf(f, " | %8s\n", "speedup");
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            print_batch_row(f, r->devices[d].label, lkv_bench_batch_at(r, d, b));
}

static void print_pool_row(FILE *f, const char *label, const lkv_bench_batch *b)
{
    const lkv_bench_pool *p = &b->pool;
    fprintf(f, "%-10s %5d |", label, b->sequences);
    if (p->status != LKV_OK) {
        fprintf(f, " %s\n", p->status == LKV_UNSUPPORTED ? "skipped (see notes)" : "FAIL (see notes)");
        return;
    }
    char ck[16], pk[16], lk[16], cs[16], ps[16];
    lkv_bench_format_bytes((double)p->compact_kv_bytes, ck, sizeof ck);
    lkv_bench_format_bytes((double)p->paged_kv_bytes, pk, sizeof pk);
    lkv_bench_format_bytes((double)p->live_kv_bytes, lk, sizeof lk);
    lkv_bench_format_time(p->compact_step_s, cs, sizeof cs);
    lkv_bench_format_time(p->paged_step_s, ps, sizeof ps);
    fprintf(f, " %10s %10s %10s %8.2fx | %9s %9s | %s\n", ck, pk, lk,
            p->compact_kv_bytes ? (double)p->paged_kv_bytes / (double)p->compact_kv_bytes : 0.0,
            cs, ps, p->sized_ok ? "yes" : "no");
}

static void print_pool(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    if (s->n_batches == 0)
        return;
    char shape[48], lo[16], hi[16];
    lkv_bench_shape_label(&s->decode_shape, shape, sizeof shape);
    lkv_bench_format_length(lkv_bench_pool_prompt(0, 2, s->batch_slots), lo, sizeof lo);
    lkv_bench_format_length(s->batch_slots, hi, sizeof hi);
    fprintf(f, "\nmixed lengths under one cache, %s, 1 layer: n sequences prefilled with %s .. %s "
               "tokens\n(one: %s), lazy at budget %d, window %d, capacity %d; then %d batched "
               "steps (one eviction period).\nK/V memory: compacting reserves every row at "
               "capacity; paged holds blocks of %d slots (the peak);\nlive: the most valid "
               "slots at once; step: mean per sequence-step; the paged run again in a pool of\n"
               "exactly its peak blocks: served?\n",
            shape, lo, hi, hi, s->batch_slots, s->window, s->batch_slots + s->window,
            s->window, LKV_BENCH_POOL_BLOCK);
    fprintf(f, "%-16s | %10s %10s %10s %9s | %9s %9s | %s\n", "backend     seqs", "compact KV",
            "paged KV", "live KV", "paged/cmp", "compact", "paged", "peak pool");
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            print_pool_row(f, r->devices[d].label, lkv_bench_batch_at(r, d, b));
}

void lkv_bench_note(FILE *f, int *count, const char *what, lkv_status st, const char *error)
{
    fprintf(f, "%s%s: %s: %s\n", (*count)++ ? "" : "\nnotes\n", what, lkv_status_name(st), error);
}

static void print_notes(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    int count = 0;
    char what[160];
    for (int d = 0; d < r->n_devices; d++) {
        const lkv_bench_device *dv = &r->devices[d];
        snprintf(what, sizeof what, "%s copy", dv->label);
        if (dv->copy.status != LKV_OK)
            lkv_bench_note(f, &count, what, dv->copy.status, dv->copy.error);
        for (int sh = 0; sh < s->n_shapes; sh++) {
            char shape[48];
            lkv_bench_shape_label(&s->shapes[sh], shape, sizeof shape);
            for (int l = 0; l < s->n_lengths; l++)
                for (int op = 0; op < LKV_BENCH_OP_COUNT; op++) {
                    const lkv_bench_timing *t = lkv_bench_op_at(r, d, sh, l, (lkv_bench_op)op);
                    snprintf(what, sizeof what, "%s %s %d slots %s", dv->label, shape,
                             s->lengths[l], lkv_bench_op_label((lkv_bench_op)op));
                    if (t->status != LKV_OK)
                        lkv_bench_note(f, &count, what, t->status, t->error);
                }
        }
        for (int l = 0; l < s->n_lengths; l++) {
            const lkv_bench_decode *dc = lkv_bench_decode_at(r, d, l);
            snprintf(what, sizeof what, "%s decode step at %d", dv->label, s->lengths[l]);
            if (dc->status != LKV_OK)
                lkv_bench_note(f, &count, what, dc->status, dc->error);
        }
        for (int b = 0; b < s->n_batches; b++) {
            const lkv_bench_batch *bt = lkv_bench_batch_at(r, d, b);
            snprintf(what, sizeof what, "%s batch of %d", dv->label, bt->sequences ? bt->sequences
                                                                                  : s->batches[b]);
            if (bt->status != LKV_OK)
                lkv_bench_note(f, &count, what, bt->status, bt->error);
            snprintf(what, sizeof what, "%s mixed lengths, %d sequences", dv->label,
                     bt->sequences ? bt->sequences : s->batches[b]);
            if (bt->status == LKV_OK && bt->pool.status != LKV_OK)
                lkv_bench_note(f, &count, what, bt->pool.status, bt->pool.error);
            else if (!bt->counted && b == 0)
                lkv_bench_note(f, &count, what, LKV_UNSUPPORTED, "the backend keeps no device counters "
                     "(lkv_runtime_get_counters reads 0): counters shown as -");
            lkv_bench_note_overlap(f, bt, dv->label, &count);
        }
        lkv_bench_note_engine(f, r, d, &count);
    }
}

void lkv_bench_print_table(FILE *f, const lkv_bench_results *r)
{
    fprintf(f, "lazykv bench: %d backend(s) on the same inputs. Times are host-observed "
               "(issue the op, then sync),\nmedian and min of the timed runs after warm-up; "
               "GB/s = modelled bytes / median (bench/README.md);\n%%copy = that as a share "
               "of the backend's own device copy bandwidth.\n\n",
            r->n_devices);
    print_devices(f, r);
    for (int sh = 0; sh < r->settings.n_shapes; sh++)
        print_ops(f, r, sh);
    print_observation(f, r);
    print_decode(f, r);
    print_batch(f, r);
    print_pool(f, r);
    lkv_bench_print_overlap(f, r);
    lkv_bench_print_engine(f, r);
    print_notes(f, r);
    char rss[32];
    lkv_bench_format_bytes((double)r->peak_rss_bytes, rss, sizeof rss);
    fprintf(f, "\nprocess peak RSS %s (host memory; an emulated device's buffers count here); "
               "run took %.1f s\n", rss, r->wall_s);
}
