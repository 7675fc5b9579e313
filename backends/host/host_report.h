/* The probe's report for a GPU backend that has no device to offer. */
#ifndef LKV_HOST_REPORT_H
#define LKV_HOST_REPORT_H

#include "lazykv.h"

/* One report (device -1, not available) saying why, written when cap
 * allows; the count is 1 either way. */
void lkv_host_report_unavailable(lkv_device_report *out, int cap, int *out_count,
                                 const char *backend, const char *why);

#endif /* LKV_HOST_REPORT_H */
