/* The trace reader: lkv_trace_replay over any text.
 *
 * Input: one selector byte, then the trace. The selector's low nibble picks
 * the policy override (none, one of the seven policies, or a name that is
 * not a policy); its high nibble, when not zero, makes the writer refuse
 * that line number, so the early stop is taken too. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

typedef struct sink {
    int lines, stop_at;
    size_t bytes;
} sink;

static int write_line(void *user, const char *line)
{
    sink *s = user;
    s->lines++;
    s->bytes += strlen(line);
    return s->stop_at && s->lines >= s->stop_at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const overrides[] = {NULL,   "full",   "lazy",  "streaming", "h2o",
                                            "tova", "snapkv", "nacl",  "LAZY"};
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const char *policy = overrides[(sel & 15) % (sizeof overrides / sizeof overrides[0])];
    char *text = fz_strndup(data + 1, size - 1);
    sink s = {0, sel >> 4, 0};
    lkv_status st = lkv_trace_replay(fz_runtime(), text, policy, write_line, &s);
    if (st != LKV_OK && !lkv_last_error()[0])
        abort(); /* every failure says why */
    free(text);
    return 0;
}
