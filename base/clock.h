/* One monotonic clock for everything that times or paces work (bench,
 * eval, conformance, the model's generate loop), so their figures agree. */
#ifndef LKV_CLOCK_H
#define LKV_CLOCK_H

/* Seconds on a monotonic clock from an arbitrary origin: only differences
 * mean anything. */
double lkv_clock_seconds(void);

#endif
