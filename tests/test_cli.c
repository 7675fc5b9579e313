/* The `lazykv` command as a user meets it: every subcommand explains itself
 * with --help, every mistake costs one line on stderr that starts "lazykv"
 * and a non-zero exit, and `devices` says which backends work and why the
 * others do not. The binary is $LKV_CLI (set by ctest); files a test needs go
 * to a fresh temporary directory, never into the repository. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "test_util.h"

#define CLI_TOY_TRACE                                                                            \
    "{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\": 2, \"alpha\": 0.1}\n"             \
    "{\"t\": 1, \"p\": [0.5, 0.2, 0.05, 0.05, 0.2]}\n"

/* Each test runs in its own process, so one scratch directory per test. */
static char scratch[4096];

static void scratch_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", scratch, name);
}

static void make_scratch(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/lazykv-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(scratch), "mkdtemp failed in %s", scratch);
}

/* Only the files this suite writes, so a mistake cannot delete more. */
static void remove_scratch(void)
{
    static const char *const files[] = {"stdout", "stderr", "trace.jsonl"};
    char path[4200];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        scratch_path(path, sizeof path, files[i]);
        unlink(path);
    }
    rmdir(scratch);
}

TestSuite(cli, .init = make_scratch, .fini = remove_scratch);

/* ---- running the command ---- */

typedef struct cli_result {
    int status;     /* exit status, -1 if it did not exit normally */
    char out[16384];
    char err[4096];
} cli_result;

static void read_capture(const char *name, char *buf, size_t len)
{
    char path[4200];
    scratch_path(path, sizeof path, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs `[env] lazykv args` through the shell, stdout and stderr to files. */
static cli_result run_cli(const char *env, const char *args)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s/stdout' 2>'%s/stderr' </dev/null", env ? env : "",
             cli, args, scratch, scratch);
    int rc = system(cmd);
    cli_result r = {.status = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1};
    read_capture("stdout", r.out, sizeof r.out);
    read_capture("stderr", r.err, sizeof r.err);
    return r;
}

/* Writes `text` as trace.jsonl in the scratch directory; returns its path. */
static const char *write_trace(const char *text)
{
    static char path[4200];
    scratch_path(path, sizeof path, "trace.jsonl");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    int ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    cr_assert(ok, "cannot write %s", path);
    return path;
}

/* ---- expectations ---- */

static void expect_usage(const char *args)
{
    cli_result r = run_cli(NULL, args);
    cr_assert_eq(r.status, 0, "lazykv %s exited %d; stderr: %s", args, r.status, r.err);
    cr_assert_not_null(strstr(r.out, "usage:"), "lazykv %s printed no usage: '%s'", args, r.out);
}

/* A mistake: non-zero exit and exactly one stderr line, starting "lazykv",
 * that mentions `needle`, so a script's log says what went wrong. */
static void expect_one_line_error(const cli_result *r, const char *what, const char *needle)
{
    cr_assert(r->status != 0, "%s exited 0", what);
    cr_assert_eq(strncmp(r->err, "lazykv", 6), 0, "%s: stderr does not start with 'lazykv': '%s'",
                 what, r->err);
    const char *nl = strchr(r->err, '\n');
    cr_assert(nl && nl[1] == '\0', "%s: stderr is not exactly one line: '%s'", what, r->err);
    cr_assert_not_null(strstr(r->err, needle), "%s: stderr does not mention '%s': '%s'", what,
                       needle, r->err);
}

/* ---- --help ---- */

Test(cli, devices_help_prints_usage) { expect_usage("devices --help"); }

Test(cli, replay_help_prints_usage) { expect_usage("replay --help"); }

Test(cli, simulate_help_prints_usage) { expect_usage("simulate --help"); }

/* ---- mistakes ---- */

Test(cli, unknown_subcommand_fails_with_one_line)
{
    cli_result r = run_cli(NULL, "frobnicate");
    expect_one_line_error(&r, "lazykv frobnicate", "frobnicate");
}

Test(cli, unknown_option_fails_with_one_line)
{
    char args[4400];
    snprintf(args, sizeof args, "replay --frobnicate '%s'", write_trace(CLI_TOY_TRACE));
    cli_result r = run_cli(NULL, args);
    expect_one_line_error(&r, "lazykv replay --frobnicate", "--frobnicate");
}

Test(cli, missing_trace_file_fails_with_one_line)
{
    char args[4400];
    snprintf(args, sizeof args, "replay '%s/no-such-trace.jsonl'", scratch);
    cli_result r = run_cli(NULL, args);
    expect_one_line_error(&r, "lazykv replay <missing file>", "no-such-trace.jsonl");
}

/* The JSON of line 2 is cut short; the error must point at that line. */
Test(cli, malformed_trace_fails_with_one_line)
{
    char args[4400];
    snprintf(args, sizeof args, "replay '%s'",
             write_trace("{\"prompt\": 4, \"heads\": 1, \"budget\": 6, \"window\": 2}\n"
                         "{\"t\": 1, \"p\": [0.5, 0.2,\n"));
    cli_result r = run_cli(NULL, args);
    expect_one_line_error(&r, "lazykv replay <malformed trace>", "line 2");
}

/* ---- backends ---- */

/* The status column of `backend`'s first line in `lazykv devices` output,
 * and the reason after it. */
static void device_line(const char *out, const char *backend, char *status, size_t status_len,
                        const char **reason)
{
    size_t n = strlen(backend);
    for (const char *line = out; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, backend, n) != 0 || line[n] != ' ')
            continue;
        char name[32], dev[32], st[32];
        int used = 0;
        cr_assert_eq(sscanf(line, "%31s %31s %31s %n", name, dev, st, &used), 3,
                     "cannot read the %s line of: %s", backend, out);
        snprintf(status, status_len, "%s", st);
        *reason = line + used;
        return;
    }
    cr_assert_fail("lazykv devices lists no %s line: %s", backend, out);
}

/* "LAZYKV_<NAME>_LIBRARY=/nonexistent/lib<name>.so " for every backend of
 * the registry but cpu: each GPU backend takes its driver library from that
 * variable when it is set. */
static void without_drivers(char *env, size_t len)
{
    size_t at = 0;
    env[0] = '\0';
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        const char *name = lkv_backend_registry[i].name;
        if (!strcmp(name, "cpu") || !strcmp(name, "ref"))
            continue;
        at += (size_t)snprintf(env + at, len - at, "LAZYKV_");
        for (const char *c = name; *c && at + 1 < len; c++)
            env[at++] = (char)toupper((unsigned char)*c);
        at += (size_t)snprintf(env + at, len - at, "_LIBRARY=/nonexistent/lib%s.so ", name);
        cr_assert_lt(at, len, "the environment for %d backends does not fit", i);
    }
}

/* Without its drivers (named libraries that do not exist), every GPU
 * backend of the registry is FAIL with the reason, built in or not, and cpu
 * and ref are PASS (auto takes cpu, never the oracle). */
Test(cli, devices_passes_cpu_and_fails_gpu_backends_without_drivers_with_reason)
{
    char env[1024];
    without_drivers(env, sizeof env);
    cli_result r = run_cli(env, "devices");
    cr_assert_eq(r.status, 0, "lazykv devices exited %d; stderr: %s", r.status, r.err);
    char status[32];
    const char *reason;
    device_line(r.out, "cpu", status, sizeof status, &reason);
    cr_assert_str_eq(status, "PASS", "cpu is not PASS: %s", r.out);
    device_line(r.out, "ref", status, sizeof status, &reason);
    cr_assert_str_eq(status, "PASS", "ref is not PASS: %s", r.out);
    int gpus = 0;
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        const char *name = lkv_backend_registry[i].name;
        if (!strcmp(name, "cpu") || !strcmp(name, "ref"))
            continue;
        gpus++;
        device_line(r.out, name, status, sizeof status, &reason);
        cr_assert_str_eq(status, "FAIL", "%s is not FAIL: %s", name, r.out);
        cr_assert(strstr(reason, "not built into this lazykv") || strstr(reason, "/nonexistent/"),
                  "the %s FAIL line does not say why: %s", name, r.out);
    }
    cr_assert_geq(gpus, 4, "the registry lists %d GPU backends, not cuda, hip, vulkan, opencl", gpus);
    cr_assert(strstr(r.out, "default: auto chose cpu:0"), "%s", r.out);
}

/* Vulkan is built in but its loader may be missing: then its line says so
 * and everything else is as before, auto on the cpu included. */
Test(cli, devices_without_a_vulkan_loader_fail_vulkan_with_the_reason)
{
    cli_result r = run_cli("LAZYKV_VULKAN_LIBRARY=/nonexistent/libvulkan.so.1", "devices");
    cr_assert_eq(r.status, 0, "lazykv devices exited %d; stderr: %s", r.status, r.err);
    char status[32];
    const char *reason;
    device_line(r.out, "vulkan", status, sizeof status, &reason);
    if (strstr(reason, "not built into this lazykv"))
        cr_skip_test("this lazykv was built without Vulkan");
    cr_assert_str_eq(status, "FAIL", "vulkan without a loader is not FAIL: %s", r.out);
    cr_assert(strstr(reason, "no Vulkan loader"), "no reason on the vulkan line: %s", r.out);
    device_line(r.out, "cpu", status, sizeof status, &reason);
    cr_assert_str_eq(status, "PASS");
    cr_assert(strstr(r.out, "default: auto chose cpu:0"), "%s", r.out);
}

/* Naming a backend that is not there is an error, never a quiet cpu run. */
Test(cli, replay_on_an_unavailable_backend_fails_naming_it)
{
    char args[4400];
    snprintf(args, sizeof args, "replay --backend cuda '%s'", write_trace(CLI_TOY_TRACE));
    cli_result r = run_cli(NULL, args);
    expect_one_line_error(&r, "lazykv replay --backend cuda", "cuda");
    cr_assert_eq(r.out[0], '\0', "a replay that failed to open its backend printed: %s", r.out);
}

/* The same through the environment: LAZYKV_BACKEND is a request, not a hint. */
Test(cli, replay_with_LAZYKV_BACKEND_naming_an_unavailable_backend_fails_naming_it)
{
    char args[4400];
    snprintf(args, sizeof args, "replay '%s'", write_trace(CLI_TOY_TRACE));
    cli_result r = run_cli("LAZYKV_BACKEND=cuda", args);
    expect_one_line_error(&r, "LAZYKV_BACKEND=cuda lazykv replay", "cuda");
    cr_assert_eq(r.out[0], '\0', "a replay that failed to open its backend printed: %s", r.out);
}
