/* Known deviations: cases a backend is expected to fail, each with the reason
 * in words. An entry turns that backend's FAIL into XFAIL (still listed, never
 * hidden), and a case that passes despite its entry says so, so the table
 * does not outlive the bug it records.
 *
 * `pattern` is a case name where '*' matches any run of characters and '|'
 * separates alternatives (conf_glob.c), e.g.
 * {"vulkan", "score(kind=noisy,*", "Gumbel noise drawn in f32: ..."}.
 * Keep the list empty unless the deviation is understood and accepted. */
#include <string.h>

#include "conf_internal.h"

typedef struct conf_xfail {
    const char *backend;
    const char *pattern;
    const char *reason;
} conf_xfail;

static const conf_xfail known[] = {
    {NULL, NULL, NULL}, /* none yet */
};

const char *conf_xfail_reason(const char *backend, const char *case_name)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].backend && strcmp(known[i].backend, backend) == 0 &&
            conf_glob_match(known[i].pattern, case_name))
            return known[i].reason;
    return NULL;
}
