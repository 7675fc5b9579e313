/* The probe's report for a GPU backend that has no device to offer. */
#include <stdio.h>
#include <string.h>

#include "host_report.h"

void lkv_host_report_unavailable(lkv_device_report *out, int cap, int *out_count,
                                 const char *backend, const char *why)
{
    *out_count = 1;
    if (cap < 1)
        return;
    memset(&out[0], 0, sizeof out[0]);
    snprintf(out[0].backend, sizeof out[0].backend, "%s", backend);
    out[0].device = -1;
    snprintf(out[0].reason, sizeof out[0].reason, "%s", why);
}
