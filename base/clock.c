#include "clock.h"

#include <time.h>

double lkv_clock_seconds(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail with a valid timespec on Linux; were it
     * to, a zero reading makes every interval 0 rather than garbage. */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
