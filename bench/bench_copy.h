/* Each backend's own device copy bandwidth: the roofline of the ops. */
#ifndef LKV_BENCH_COPY_H
#define LKV_BENCH_COPY_H

#include "bench.h"
#include "runtime.h"

/* Times ops->copy of settings->copy_bytes between two device buffers into
 * dev->copy and dev->copy_bytes_per_s (read + write bytes per second). */
void lkv_bench_copy_run(lkv_runtime *rt, const lkv_bench_settings *s, lkv_bench_device *dev);

#endif
