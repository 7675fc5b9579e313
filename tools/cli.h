/* Shared helpers of the `lazykv` subcommands: one-line errors, strict
 * number parsing, file reading. */
#ifndef LKV_CLI_H
#define LKV_CLI_H

#include <stdint.h>

#include "lazykv.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Prints "lazykv <cmd>: error: ..." on stderr; returns the exit code 2. */
int cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Same for a failed library call: status name and lkv_last_error(). */
int cli_lib_error(const char *cmd, lkv_status st);

int cli_int(const char *cmd, const char *flag, const char *text, long lo, long hi, int32_t *out);
int cli_real(const char *cmd, const char *flag, const char *text, double lo, double hi,
             double *out);

/* Reads a whole file ("-" is standard input) into a NUL-terminated buffer. */
int cli_read_file(const char *cmd, const char *path, char **out_text);

int cmd_devices(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);

#endif
