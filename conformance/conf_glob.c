/* Case-name patterns: '*' matches any run of characters, '|' separates
 * alternatives. Case names are full of commas and parentheses, so neither
 * can serve as a separator. */
#include <string.h>

#include "conf_internal.h"

static int match_one(const char *pat, const char *end, const char *s)
{
    if (pat == end)
        return *s == '\0';
    if (*pat == '*')
        return match_one(pat + 1, end, s) || (*s && match_one(pat, end, s + 1));
    return *s == *pat && match_one(pat + 1, end, s + 1);
}

int conf_glob_match(const char *patterns, const char *name)
{
    for (const char *p = patterns;;) {
        const char *bar = strchr(p, '|');
        const char *end = bar ? bar : p + strlen(p);
        if (match_one(p, end, name))
            return 1;
        if (!bar)
            return 0;
        p = bar + 1;
    }
}
