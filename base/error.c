#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

lkv_status lkv_fail(lkv_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

lkv_status lkv_fail_context(lkv_status status, const char *fmt, ...)
{
    char inner[sizeof last_error];
    memcpy(inner, last_error, sizeof inner); /* we are about to overwrite it */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    /* Append ": inner", cut to fit (by hand: the cut is intended). */
    size_t at = n < 0 ? 0 : (size_t)n, room = sizeof last_error - 1;
    const char *parts[2] = {": ", inner};
    for (int p = 0; p < 2; p++)
        for (const char *c = parts[p]; *c && at < room; c++)
            last_error[at++] = *c;
    last_error[at < room ? at : room] = '\0';
    return status;
}

lkv_status lkv_fail_null(const char *call, const char *arg)
{
    return lkv_fail(LKV_INVALID_ARGUMENT, "%s: %s is NULL", call, arg);
}

void lkv_clear_error(void) { last_error[0] = '\0'; }

const char *lkv_last_error(void) { return last_error; }

const char *lkv_status_name(lkv_status status)
{
    switch (status) {
    case LKV_OK: return "OK";
    case LKV_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case LKV_UNAVAILABLE: return "UNAVAILABLE";
    case LKV_INCOMPATIBLE: return "INCOMPATIBLE";
    case LKV_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case LKV_DEVICE_ERROR: return "DEVICE_ERROR";
    case LKV_UNSUPPORTED: return "UNSUPPORTED";
    case LKV_INTERNAL: return "INTERNAL";
    }
    return "UNKNOWN_STATUS";
}
