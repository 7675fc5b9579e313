/* Hostile input stays bounded: each reader is fed what an attacker (or a
 * slip of the keyboard) would give it, and the test measures what that
 * costs: the heap bytes live at once (alloc_meter.h), the comparisons made,
 * or the child's peak resident set. Never wall time. Each case failed
 * before its fix: the numbers in the comments are what it cost then. */
#define _DEFAULT_SOURCE /* wait4 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_meter.h"
#include "eval.h"
#include "json.h"
#include "test_util.h"

#define MIB ((size_t)1 << 20)

static int discard_line(void *user, const char *line)
{
    (void)user;
    (void)line;
    return 0;
}

/* Replays `trace`, expecting INVALID_ARGUMENT with `needle` in the message
 * (NULL: success), and returns the peak heap bytes of the replay. */
static size_t replay_peak(const char *trace, const char *needle)
{
    lkv_runtime *rt = tu_runtime();
    tu_meter_reset();
    lkv_status st = lkv_trace_replay(rt, trace, NULL, discard_line, NULL);
    size_t peak = tu_meter_peak();
    cr_assert(tu_meter_complete(), "the meter's table overflowed");
    cr_log_info("replay of %zu bytes: heap peak %zu bytes", strlen(trace), peak);
    if (needle) {
        cr_assert_eq(st, LKV_INVALID_ARGUMENT, "%s: %s", lkv_status_name(st), lkv_last_error());
        cr_expect(strstr(lkv_last_error(), needle), "message '%s' lacks '%s'", lkv_last_error(),
                  needle);
    } else {
        cr_assert_eq(st, LKV_OK, "%s: %s", lkv_status_name(st), lkv_last_error());
    }
    return peak;
}

/* ---- trace headers --------------------------------------------------------- */

/* 58 bytes declaring a prompt of 16M tokens prefilled 1.8 GB before the
 * step line was found too short. */
Test(hostile, trace_header_with_a_huge_prompt_allocates_nothing_before_its_steps)
{
    const char *trace = "{\"prompt\":16777216,\"heads\":1,\"budget\":64,\"window\":2}\n{\"t\":1,\"p\":[0]}\n";
    size_t peak = replay_peak(trace, "must list 16777217 values");
    cr_expect_lt(peak, MIB, "peak %zu bytes for a %zu-byte trace", peak, strlen(trace));
}

Test(hostile, trace_header_with_huge_prompt_times_heads_allocates_nothing)
{
    const char *trace = "{\"prompt\": 16777216, \"heads\": 1024, \"budget\": 64, \"window\": 2}\n"
                        "{\"t\": 1, \"p\": [[0.5]]}\n";
    size_t peak = replay_peak(trace, "must hold 1024 per-head lists");
    cr_expect_lt(peak, MIB, "peak %zu bytes", peak);
    /* a prompt's votes are checked before anything is sized by them too */
    trace = "{\"prompt\": 16777216, \"heads\": 1024, \"policy\": \"snapkv\", \"budget\": 64}\n"
            "{\"prefill\": [[0.5]]}\n";
    peak = replay_peak(trace, "must hold 1024 per-head lists");
    cr_expect_lt(peak, MIB, "peak %zu bytes", peak);
}

/* A budget far beyond what the trace holds costs no memory: slots past the
 * trace's tokens are never allocated. */
Test(hostile, trace_with_a_huge_budget_holds_only_its_tokens)
{
    char trace[4096];
    int n = snprintf(trace, sizeof trace,
                     "{\"prompt\": 2, \"heads\": 64, \"budget\": 16000000, \"window\": 1}\n"
                     "{\"t\": 1, \"p\": [");
    for (int h = 0; h < 64; h++)
        n += snprintf(trace + n, sizeof trace - (size_t)n, "%s[0.2, 0.3, 0.5]", h ? ", " : "");
    snprintf(trace + n, sizeof trace - (size_t)n, "]}\n");
    size_t peak = replay_peak(trace, NULL);
    cr_expect_lt(peak, 4 * MIB, "peak %zu bytes for 64 heads x 3 tokens", peak);
}

/* ---- the JSON reader --------------------------------------------------------- */

/* A line of `count` copies of `unit` between `head` and `tail`. */
static char *line_of(const char *head, const char *unit, size_t count, const char *tail)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *s = malloc(h + u * count + t + 1);
    cr_assert_not_null(s);
    memcpy(s, head, h);
    for (size_t i = 0; i < count; i++)
        memcpy(s + h + i * u, unit, u);
    memcpy(s + h + u * count, tail, t + 1);
    s[h + u * count - 1] = s[h + u * count - 1] == ',' ? ' ' : s[h + u * count - 1];
    return s;
}

/* A 1 MB line of short strings reached 1 GB: each string was given a
 * buffer the size of the rest of the line. */
Test(hostile, json_strings_cost_their_own_length)
{
    char *text = line_of("[", "\"ab\",", 200000, "]");
    size_t len = strlen(text);
    lkv_json v;
    char err[160];
    tu_meter_reset();
    cr_assert_eq(lkv_json_parse(text, len, &v, err, sizeof err), 0, "%s", err);
    size_t peak = tu_meter_peak();
    cr_log_info("%zu-byte line of strings: heap peak %zu bytes", len, peak);
    cr_expect_eq(v.count, 200000);
    cr_expect_str_eq(v.items[199999].text, "ab");
    /* 200k values of 48 bytes each and their 3-byte strings: ~12 MB */
    cr_expect_lt(peak, 24 * len, "peak %zu bytes for a %zu-byte line", peak, len);
    lkv_json_free(&v);
    free(text);
}

/* The same line where a trace wants numbers is a type error, named as one,
 * not "out of memory". */
Test(hostile, a_line_of_strings_where_numbers_belong_is_a_type_error)
{
    char *step = line_of("{\"prompt\": 199999, \"heads\": 1, \"budget\": 6, \"window\": 2}\n"
                         "{\"t\": 1, \"p\": [", "\"ab\",", 200000, "]}\n");
    size_t peak = replay_peak(step, "not a number");
    cr_expect_lt(peak, 24 * strlen(step), "peak %zu bytes", peak);
    free(step);
}

/* 20k keys took 1.2 s: each was compared with every key before it. */
Test(hostile, duplicate_keys_are_found_without_comparing_every_pair)
{
    enum { KEYS = 20000 };
    char *text = malloc((size_t)KEYS * 16 + 64);
    cr_assert_not_null(text);
    size_t n = 0;
    text[n++] = '{';
    for (int i = 0; i < KEYS; i++)
        n += (size_t)sprintf(text + n, "%s\"k%d\": 0", i ? ", " : "", i);
    size_t open_len = n;
    strcpy(text + n, "}");
    lkv_json v;
    char err[160];
    size_t before = lkv_json_key_compares;
    cr_assert_eq(lkv_json_parse(text, strlen(text), &v, err, sizeof err), 0, "%s", err);
    size_t compares = lkv_json_key_compares - before;
    cr_log_info("%d keys: %zu comparisons", KEYS, compares);
    cr_expect_eq(v.count, KEYS);
    lkv_json_free(&v);
    /* n log2 n is 286k; every pair would be 200M */
    cr_expect_lt(compares, (size_t)KEYS * 32, "%zu key comparisons for %d keys", compares, KEYS);

    strcpy(text + open_len, ", \"k12345\": 1}");
    cr_expect_eq(lkv_json_parse(text, strlen(text), &v, err, sizeof err), -1);
    cr_expect(strstr(err, "key \"k12345\" appears twice"), "%s", err);
    free(text);
}

/* ---- eval prompt files --------------------------------------------------------- */

Test(hostile, eval_prompt_line_of_strings_is_named_and_bounded)
{
    char *text = line_of("{\"question\": [", "\"ab\",", 200000, "]}\n");
    lkv_eval_prompts p = {0};
    tu_meter_reset();
    /* the record is refused before the tokenizer is needed: any non-NULL
     * pointer serves, and none is ever read */
    lkv_status st = lkv_eval_prompts_from_jsonl(text, 0, 1, (const lkv_tokenizer *)text, NULL, &p);
    size_t peak = tu_meter_peak();
    cr_expect_eq(st, LKV_INVALID_ARGUMENT, "%s", lkv_last_error());
    cr_expect(strstr(lkv_last_error(), "no \"question\" string"), "%s", lkv_last_error());
    cr_expect_lt(peak, 24 * strlen(text), "peak %zu bytes", peak);
    free(text);
}

/* ---- files the CLI reads -------------------------------------------------------- */

typedef struct child_result {
    int exit_code; /* -1 when killed by a signal */
    long max_rss_kib;
    char err[2048];
} child_result;

/* Runs the CLI with argv, stdin from `in` (NULL: /dev/null), a guard alarm
 * that kills a child that blocks, and returns its exit, stderr and peak RSS. */
static child_result run_cli(const char *const *args, const char *in, const char *limit_mb)
{
    const char *cli = getenv("LKV_CLI");
    cr_assert(cli && *cli, "LKV_CLI is not set (run through ctest)");
    char err_path[] = "/tmp/lkv_hostile_err_XXXXXX";
    int err_fd = mkstemp(err_path);
    cr_assert_geq(err_fd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int in_fd = open(in ? in : "/dev/null", O_RDONLY);
        dup2(in_fd, 0);
        dup2(err_fd, 2);
        int out_fd = open("/dev/null", O_WRONLY);
        dup2(out_fd, 1);
        if (limit_mb)
            setenv("LAZYKV_MAX_TEXT_MB", limit_mb, 1);
        setenv("LAZYKV_BACKEND", "cpu", 1);
        alarm(120); /* a reader that blocks is killed, and fails below */
        const char *argv[16] = {cli};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    cr_assert_eq(wait4(pid, &status, 0, &ru), pid);
    child_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ru.ru_maxrss, ""};
    ssize_t got = pread(err_fd, r.err, sizeof r.err - 1, 0);
    r.err[got > 0 ? got : 0] = '\0';
    close(err_fd);
    unlink(err_path);
    return r;
}

static void expect_refused(child_result r, const char *needle)
{
    cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, needle), "stderr '%s' lacks '%s'", r.err, needle);
}

/* `replay /dev/zero` grew past 8 GB. */
Test(hostile, replay_of_a_device_is_refused)
{
    child_result r = run_cli((const char *const[]){"replay", "/dev/zero", NULL}, NULL, NULL);
    expect_refused(r, "'/dev/zero' is a device");
    cr_expect_lt(r.max_rss_kib, 512 * 1024, "peak RSS %ld KiB", r.max_rss_kib);
}

/* A FIFO with no writer blocked forever in open. */
Test(hostile, replay_of_a_fifo_is_refused_without_blocking)
{
    char dir[] = "/tmp/lkv_fifo_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/trace", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    child_result r = run_cli((const char *const[]){"replay", fifo, NULL}, NULL, NULL);
    expect_refused(r, "is a FIFO");
    r = run_cli((const char *const[]){"generate", "--model", tu_shared_path("models/stories260K/stories260K.bin"),
                                      "--prompt-file", fifo, NULL},
                NULL, NULL);
    expect_refused(r, "is a FIFO");
    unlink(fifo);
    rmdir(dir);
}

/* A file past the limit is refused by its size, before a byte is read: a
 * sparse 1 GiB file costs nothing to make and, read whole, cost 2 GB. */
Test(hostile, a_file_past_the_size_limit_is_refused_unread)
{
    char path[] = "/tmp/lkv_big_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)1 << 30), 0);
    close(fd);
    child_result r = run_cli((const char *const[]){"replay", path, NULL}, NULL, "64");
    expect_refused(r, "over the limit of 64 MiB");
    cr_expect_lt(r.max_rss_kib, 512 * 1024, "peak RSS %ld KiB", r.max_rss_kib);
    /* standard input has no size to check first: reading stops at the limit */
    r = run_cli((const char *const[]){"replay", "-", NULL}, path, "64");
    expect_refused(r, "more than the limit of 64 MiB");
    cr_expect_lt(r.max_rss_kib, 512 * 1024, "peak RSS %ld KiB", r.max_rss_kib);
    unlink(path);
}

Test(hostile, a_bad_size_limit_knob_is_named)
{
    child_result r = run_cli((const char *const[]){"replay", "-", NULL}, NULL, "0");
    expect_refused(r, "LAZYKV_MAX_TEXT_MB '0' is not an integer in 1..65536");
}
