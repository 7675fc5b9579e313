/* Heap use of the code under test, for the tests that hold a reader to
 * bounded memory (tests/test_hostile.c). A test binary linked with
 * alloc_meter.c and -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=free routes every allocation that lazykv's objects and the test's
 * own make through it; allocations made inside libc (strdup, getline) are
 * not seen. Counting is exact and does not depend on the machine, unlike a
 * resident-set size. */
#ifndef LKV_ALLOC_METER_H
#define LKV_ALLOC_METER_H

#include <stddef.h>

/* Starts a measurement: the peak becomes what is live now. */
void tu_meter_reset(void);
/* The most bytes live at once since the reset (requested sizes). */
size_t tu_meter_peak(void);
/* Bytes requested since the reset, freed or not: the allocation work done. */
size_t tu_meter_requested(void);
/* The largest single request since the reset. */
size_t tu_meter_largest(void);
/* Whether every live block since the start fitted in the meter's table. */
int tu_meter_complete(void);

#endif
