/* Shared helpers of the `lazykv` subcommands: one-line errors, strict
 * number parsing, an option table, file reading, the default model file. */
#ifndef LKV_CLI_H
#define LKV_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* The model `lazykv generate` and `lazykv eval` use when --model is not given
 * (scripts/fetch-model.sh fetches it). */
#define CLI_DEFAULT_MODEL "SmolLM2-135M-Instruct.Q4_1.gguf"

/* The most threads the forward pass's pool starts (model/pool.c). */
#define CLI_MAX_THREADS 256

/* Prints "lazykv <cmd>: error: ..." on stderr; returns the exit code 2. */
int cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Same for a failed library call: status name and lkv_last_error(). */
int cli_lib_error(const char *cmd, lkv_status st);

int cli_int(const char *cmd, const char *flag, const char *text, long lo, long hi, int32_t *out);
int cli_real(const char *cmd, const char *flag, const char *text, double lo, double hi,
             double *out);
/* A K/V storage type by its name (f32, f16, bf16). */
int cli_dtype(const char *cmd, const char *flag, const char *text, lkv_dtype *out);

/* One option of a command: where its value goes in the command's options
 * struct (`at`, an offsetof) and how it is read. */
typedef enum cli_kind {
    CLI_SWITCH, /* no value: sets an int to 1 */
    CLI_TEXT,   /* const char *, pointing into argv */
    CLI_INT,    /* int32_t in lo..hi */
    CLI_REAL,   /* double in [lo, hi] */
    CLI_CALL    /* call(opts, flag, value) reads it; 0 or the exit code */
} cli_kind;

typedef struct cli_option {
    const char *flag;
    cli_kind kind;
    size_t at;
    double lo, hi;
    int (*call)(void *opts, const char *flag, const char *value);
} cli_option;

/* Reads argv[1..] into `opts` by `table` [n]. Returns 0 to run, 1 after
 * --help (`help` printed on stdout), else 2 with the bad option named. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_option *table, size_t n,
              void *opts, const char *help);

/* The most a text input (trace, prompt, eval prompts) may hold, in MiB,
 * unless LAZYKV_MAX_TEXT_MB says otherwise. */
#define CLI_MAX_TEXT_MB 256

/* Reads a whole file ("-" is standard input) into a NUL-terminated buffer.
 * Only a regular file is opened (a FIFO would block, a device never ends),
 * and no more than the size limit above is read. A NUL byte in it is an
 * error saying the file is not `what` ("a text trace"). */
int cli_read_text(const char *cmd, const char *path, const char *what, char **out_text);
/* cli_read_text of a trace. */
int cli_read_file(const char *cmd, const char *path, char **out_text);

/* The model file into buf: `given`, else CLI_DEFAULT_MODEL in
 * $LAZYKV_MODEL_DIR, $XDG_CACHE_HOME/lazykv/models or ~/.cache/lazykv/models.
 * It must be a regular file; a missing one's message says how to fetch it. */
int cli_model_path(const char *cmd, const char *given, char *buf, size_t len);

/* "1.50 MiB" or "12.0 KiB". */
void cli_format_bytes(double bytes, char *buf, size_t len);

int cmd_devices(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);

#endif
