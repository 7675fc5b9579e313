/* The `lazykv` command: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"devices", cmd_devices, "list every backend and device, PASS or FAIL with the reason"},
    {"replay", cmd_replay, "replay a JSONL attention trace through a policy"},
    {"simulate", cmd_simulate, "synthetic decode with eviction vs the full cache"},
    {"conformance", cmd_conformance, "check every backend's ops against the cpu oracle"},
    {"bench", cmd_bench, "time every backend's ops side by side on the same inputs"},
    {"generate", cmd_generate, "run a real model with eviction: text in, text out, memory saved"},
    {"eval", cmd_eval, "fidelity of each policy and budget against the full cache on a model"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lazykv <command> [options]\n\n"
               "lazykv %d.%d.%d: lagged KV-cache eviction (LazyEviction) for LLM decoding.\n\n"
               "commands:\n",
            LKV_VERSION_MAJOR, LKV_VERSION_MINOR, LKV_VERSION_PATCH);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'lazykv <command> --help' describes a command's options.\n"
               "LAZYKV_BACKEND sets the default backend (auto, cpu, cuda, vulkan:1, ...).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("lazykv %d.%d.%d\n", LKV_VERSION_MAJOR, LKV_VERSION_MINOR, LKV_VERSION_PATCH);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "lazykv: error: unknown command '%s' (try 'lazykv --help')\n", cmd);
    return 2;
}
