/* What an engine that keeps its own K/V pays for LazyEviction: the
 * observe-and-plan calls of an engine-owned cache on each backend, and the
 * plan applied on the host to paged K/V by compaction (lkv_plan_apply) and
 * as holes (lkv_slot_map), with the memory each leaves held and the cost of
 * attention through the hole map against compacted rows. */
#ifndef LKV_BENCH_ENGINE_H
#define LKV_BENCH_ENGINE_H

#include "bench.h"
#include "bench_progress.h"
#include "json_writer.h"
#include "runtime.h"

/* `sequences` sequences of settings->batch_slots slots each on `rt`.
 * Failures are recorded in *out. */
void lkv_bench_engine_run(lkv_runtime *rt, const lkv_bench_settings *s, int32_t sequences,
                          const char *label, lkv_bench_progress *progress, lkv_bench_engine *out);

/* The table section: per backend and batch size the observe and evicting
 * steps (and the observe step against the owned cache's batched step of the
 * same batch, where it ran), the plan applied both ways, the blocks each
 * holds and attention through the hole map against compacted rows. */
void lkv_bench_print_engine(FILE *f, const lkv_bench_results *r);

/* The section's JSON object "engine". */
void lkv_bench_json_engine(lkv_jw *w, const lkv_bench_results *r);

/* Notes for the engine-owned runs that have no figure. */
void lkv_bench_note_engine(FILE *f, const lkv_bench_results *r, int device, int *count);

#endif
