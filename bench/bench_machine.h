/* What the benchmark ran on, for the JSON and the table header. */
#ifndef LKV_BENCH_MACHINE_H
#define LKV_BENCH_MACHINE_H

#include "bench.h"

void lkv_bench_machine_probe(lkv_bench_machine *out);

/* The process's peak resident set so far, in bytes (0 when unknown). Device
 * memory of a discrete GPU is not in it; an emulated device's is. */
int64_t lkv_bench_peak_rss(void);

#endif
