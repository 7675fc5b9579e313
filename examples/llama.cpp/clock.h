/* Wall-clock seconds for the example's timings (a monotonic clock). */
#ifndef LKV_LLAMA_CLOCK_H
#define LKV_LLAMA_CLOCK_H

#include <time.h>

static inline double clock_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
