/* Known deviations: the cases a backend is expected to fail, which the
 * backend itself lists (lkv_backend_ops.deviations, with the reason in
 * words). An entry turns that backend's FAIL into XFAIL (still listed, never
 * hidden), and a case that passes despite its entry says so, so the list
 * does not outlive the limitation it records. An entry with a trait applies
 * only to devices whose lkv_list_devices reason names it. */
#include <string.h>

#include "conf_internal.h"

const char *conf_xfail_reason(const lkv_backend_ops *ops, const char *traits,
                              const char *case_name)
{
    for (const lkv_backend_deviation *d = ops->deviations; d && d->cases; d++) {
        if (!conf_glob_match(d->cases, case_name))
            continue;
        if (!d->trait || (traits && strstr(traits, d->trait)))
            return d->reason;
    }
    return NULL;
}
