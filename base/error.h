/* Per-thread error messages. Every failing path sets one with lkv_fail, which
 * returns the status so a check reads `return lkv_fail(LKV_..., "...")`. */
#ifndef LKV_ERROR_H
#define LKV_ERROR_H

#include "lazykv.h"

#if defined(__GNUC__)
#define LKV_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LKV_PRINTF(a, b)
#endif

lkv_status lkv_fail(lkv_status status, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Prefixes the current message with a formatted context ("trace line 3"),
 * joined by ": ", and returns the status. */
lkv_status lkv_fail_context(lkv_status status, const char *fmt, ...) LKV_PRINTF(2, 3);

/* Fails with INVALID_ARGUMENT naming a NULL argument as the public header
 * names it: "lkv_cache_get_plan: out_plan is NULL". */
lkv_status lkv_fail_null(const char *call, const char *arg);

/* Clears the message; called on entry to public calls that can fail. */
void lkv_clear_error(void);

#endif
