/* Which backends the benchmark runs: the named specs, or every available
 * device, emulated ones included, with cpu first as the reference. */
#ifndef LKV_BENCH_DEVICES_H
#define LKV_BENCH_DEVICES_H

#include "bench.h"
#include "runtime.h"

/* Opens every device into rts[] and describes it in devs[]; *out_n gets the
 * count. On failure nothing stays open and lkv_last_error() says which spec. */
lkv_status lkv_bench_devices_open(const lkv_bench_settings *s,
                                  lkv_runtime *rts[LKV_BENCH_MAX_DEVICES],
                                  lkv_bench_device devs[LKV_BENCH_MAX_DEVICES], int *out_n);

void lkv_bench_devices_close(lkv_runtime **rts, int n);

#endif
