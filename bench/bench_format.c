/* Numbers for people: times, sizes and lengths with their units. */
#include <stdio.h>

#include "bench.h"

/* Three significant digits of v (>= 1 and < 1000) and a unit. */
static void three_digits(double v, const char *unit, char *buf, size_t len)
{
    if (v >= 99.95)
        snprintf(buf, len, "%.0f %s", v, unit);
    else if (v >= 9.995)
        snprintf(buf, len, "%.1f %s", v, unit);
    else
        snprintf(buf, len, "%.2f %s", v, unit);
}

void lkv_bench_format_time(double s, char *buf, size_t len)
{
    if (!(s > 0.0)) /* also NaN */
        snprintf(buf, len, "-");
    else if (s < 999.5e-9)
        three_digits(s * 1e9, "ns", buf, len);
    else if (s < 999.5e-6)
        three_digits(s * 1e6, "us", buf, len);
    else if (s < 999.5e-3)
        three_digits(s * 1e3, "ms", buf, len);
    else
        three_digits(s, "s", buf, len);
}

void lkv_bench_format_bytes(double b, char *buf, size_t len)
{
    if (b < 1024.0)
        snprintf(buf, len, "%.0f B", b);
    else if (b < 1023.95 * 1024.0)
        three_digits(b / 1024.0, "KiB", buf, len);
    else if (b < 1023.95 * 1048576.0)
        three_digits(b / 1048576.0, "MiB", buf, len);
    else
        three_digits(b / 1073741824.0, "GiB", buf, len);
}

void lkv_bench_format_length(int32_t length, char *buf, size_t len)
{
    if (length >= 1024 && length % 1024 == 0)
        snprintf(buf, len, "%dK", length / 1024);
    else
        snprintf(buf, len, "%d", length);
}
