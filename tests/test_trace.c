/* The golden toy trace of spec/policies.md replays exactly, through the API
 * and through the `lazykv replay` command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

Test(trace, toy_trace_replays_exactly_through_the_api)
{
    char *trace = tu_read_file(tu_shared_path("spec/lazy-toy-trace.jsonl"));
    char *expected = tu_read_file(tu_shared_path("spec/lazy-toy-trace.expected.jsonl"));
    cr_assert_not_null(trace, "cannot read %s", tu_shared_path("spec/lazy-toy-trace.jsonl"));
    cr_assert_not_null(expected);
    lkv_status st;
    char *got = tu_replay(trace, NULL, &st);
    cr_assert_not_null(got, "replay failed: %s", lkv_last_error());
    cr_assert_str_eq(got, expected);
    free(got);
    free(trace);
    free(expected);
}

Test(trace, toy_trace_replays_exactly_through_the_cli)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' replay '%s'", cli, tu_shared_path("spec/lazy-toy-trace.jsonl"));
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char got[8192] = {0};
    size_t n = fread(got, 1, sizeof got - 1, p);
    got[n] = '\0';
    cr_assert_eq(pclose(p), 0, "lazykv replay failed");
    char *expected = tu_read_file(tu_shared_path("spec/lazy-toy-trace.expected.jsonl"));
    cr_assert_not_null(expected);
    cr_assert_str_eq(got, expected);
    free(expected);
}

/* The same toy trace spread over two heads, the second a mirror image that
 * attends differently: each head keeps its own slots. */
Test(trace, heads_evict_independently)
{
    const char *trace =
        "{\"prompt\": 2, \"heads\": 2, \"budget\": 2, \"window\": 1, \"alpha\": 0.1}\n"
        "{\"t\": 1, \"p\": [[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]}\n";
    char *got = tu_replay(trace, NULL, NULL);
    cr_assert_not_null(got, "%s", lkv_last_error());
    cr_assert_str_eq(got, "{\"t\": 1, \"heads\": [{\"ids\": [0, 2], \"last\": [1, 1], \"mri\": [1, 1]}, "
                          "{\"ids\": [1, 2], \"last\": [1, 1], \"mri\": [1, 1]}]}\n");
    free(got);
}
