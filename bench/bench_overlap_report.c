/* The eviction overlap section of the bench table and JSON (bench_overlap.h). */
#include <stdio.h>

#include "bench_overlap.h"

static void print_row(FILE *f, const char *label, const lkv_bench_batch *b)
{
    const lkv_bench_overlap *o = &b->overlap;
    if (b->status != LKV_OK || o->status == LKV_UNSUPPORTED)
        return; /* noted (a failed batch), or past the sizes measured */
    fprintf(f, "%-10s %5d |", label, b->sequences);
    if (o->status != LKV_OK) {
        fprintf(f, " FAIL (see notes)\n");
        return;
    }
    char in[16], bg[16], ev[16];
    lkv_bench_format_time(o->inline_s, in, sizeof in);
    lkv_bench_format_time(o->background_s, bg, sizeof bg);
    lkv_bench_format_time(o->evict_s, ev, sizeof ev);
    fprintf(f, " %-6s | %9s %9s %9s | %7.0f%%\n", o->lane ? "lane" : "thread", in, bg, ev,
            100.0 * o->hidden);
}

void lkv_bench_print_overlap(FILE *f, const lkv_bench_results *r)
{
    const lkv_bench_settings *s = &r->settings;
    if (s->n_batches == 0)
        return;
    fprintf(f, "\neviction overlap: n sequences of %d layers at %d slots, lazy at budget %d, window "
               "%d: the\nevicting step (the %d-th), the step after it and the drain, each step "
               "synced, inline against\nbackground (lane: a second queue, each layer evicted "
               "beside the later layers; thread: the\nhelper thread), median of runs on fresh "
               "caches; evict: inline, the evicting step less the\nmean earlier step; hidden: "
               "(inline - background) / evict, the share of the eviction taken\noff the steps "
               "(noise moves it by tens of %%). Up to %d sequences.\n",
            LKV_BENCH_OVERLAP_LAYERS, s->batch_slots, s->batch_slots, LKV_BENCH_OVERLAP_WINDOW,
            LKV_BENCH_OVERLAP_WINDOW, LKV_BENCH_OVERLAP_MAX_SEQUENCES);
    fprintf(f, "%-16s | %-6s | %9s %9s %9s | %8s\n", "backend     seqs", "how", "inline",
            "backgr.", "evict", "hidden");
    for (int d = 0; d < r->n_devices; d++)
        for (int b = 0; b < s->n_batches; b++)
            print_row(f, r->devices[d].label, lkv_bench_batch_at(r, d, b));
}

void lkv_bench_json_overlap(lkv_jw *w, const lkv_bench_batch *b)
{
    const lkv_bench_overlap *o = &b->overlap;
    lkv_jw_begin_object(w, "eviction_overlap", 0);
    lkv_jw_int(w, "layers", o->layers);
    lkv_jw_string(w, "status", lkv_status_name(o->status));
    if (o->status != LKV_OK) {
        lkv_jw_string(w, "error", o->error);
    } else {
        lkv_jw_string(w, "background", o->lane ? "lane" : "thread");
        lkv_jw_number(w, "inline_s", o->inline_s);
        lkv_jw_number(w, "background_s", o->background_s);
        lkv_jw_number(w, "eviction_s", o->evict_s);
        lkv_jw_number(w, "hidden", o->hidden);
    }
    lkv_jw_end_object(w);
}

void lkv_bench_note_overlap(FILE *f, const lkv_bench_batch *b, const char *label, int *count)
{
    if (b->status != LKV_OK || b->overlap.status == LKV_OK ||
        b->overlap.status == LKV_UNSUPPORTED)
        return;
    char what[96];
    snprintf(what, sizeof what, "%s eviction overlap, %d sequences", label, b->sequences);
    lkv_bench_note(f, count, what, b->overlap.status, b->overlap.error);
}
