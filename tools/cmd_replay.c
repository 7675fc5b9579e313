/* `lazykv replay`: a recorded attention trace through a policy, JSONL out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: lazykv replay [--policy NAME] [--backend SPEC] TRACE.jsonl\n\n"
    "Feeds the per-step attention of a JSONL trace (spec/policies.md, section 4)\n"
    "to a policy and prints one JSONL line per step after that step's eviction:\n"
    "each head's surviving token ids and the policy's per-slot state.\n\n"
    "  TRACE            trace file, or - for standard input\n"
    "  --policy NAME    lazy (default), full, streaming, h2o, tova, snapkv, nacl, rkv;\n"
    "                   the header's \"policy\" key, if any, must agree\n"
    "  --backend SPEC   backend to run on (default $LAZYKV_BACKEND, else auto)\n\n"
    "Policy parameters come from the header (budget, window, alpha, ...); a key\n"
    "the policy does not take is an error. snapkv and nacl evict the prompt by\n"
    "votes given on a {\"prefill\": [[...]]} line after the header.\n";

static int write_stdout(void *user, const char *line)
{
    (void)user;
    return puts(line) < 0 ? -1 : 0;
}

int cmd_replay(int argc, char **argv)
{
    const char *policy = NULL, *backend = NULL, *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 0;
        }
        if (!strcmp(a, "--policy") || !strcmp(a, "--backend")) {
            if (i + 1 >= argc)
                return cli_error("replay", "%s needs a value", a);
            *(!strcmp(a, "--policy") ? &policy : &backend) = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return cli_error("replay", "unknown option '%s' (see --help)", a);
        } else if (path) {
            return cli_error("replay", "one trace at a time: got '%s' and '%s'", path, a);
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_error("replay", "no trace file given (see --help)");
    if (policy) {
        lkv_policy_kind kind;
        if (lkv_policy_from_name(policy, &kind) != LKV_OK)
            return cli_error("replay", "%s", lkv_last_error());
    }
    char *text = NULL;
    if (cli_read_file("replay", path, &text) != 0)
        return 2;
    lkv_runtime *rt = NULL;
    lkv_status st = lkv_runtime_open(backend, &rt);
    if (st == LKV_OK)
        st = lkv_trace_replay(rt, text, policy, write_stdout, NULL);
    int rc = st == LKV_OK ? 0 : cli_lib_error("replay", st);
    lkv_runtime_close(rt);
    free(text);
    if (fflush(stdout) != 0 && rc == 0)
        rc = cli_error("replay", "cannot write the output");
    return rc;
}
