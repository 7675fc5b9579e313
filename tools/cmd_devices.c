/* `lazykv devices`: every backend lazykv knows, built in or not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: lazykv devices\n\n"
    "Lists every backend lazykv knows with its devices: PASS (usable) or FAIL\n"
    "with the reason (not built in, no driver, no device). Then says which\n"
    "device the default spec ($LAZYKV_BACKEND, else auto) selects. A GPU\n"
    "reached through several APIs (CUDA, Vulkan, OpenCL) is listed under each,\n"
    "with the others named (matched by PCI address, else UUID); auto tries it\n"
    "once, through the first API that opens it.\n";

/* Driver, memory and UUID under the device's line, where the API has them. */
static void print_identity(const lkv_device_report *r)
{
    printf("%-22s driver %s", "", r->driver[0] ? r->driver : "unknown");
    if (r->memory_bytes)
        printf(", memory %.1f GiB", (double)r->memory_bytes / (1024.0 * 1024.0 * 1024.0));
    if (r->uuid[0])
        printf(", uuid %s", r->uuid);
    if (r->pci[0])
        printf(", pci %s", r->pci);
    putchar('\n');
    if (r->same_as[0])
        printf("%-22s the same device as %s\n", "", r->same_as);
}

int cmd_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return 0;
        }
        return cli_error("devices", "unexpected argument '%s' (see --help)", argv[i]);
    }
    int count = 0;
    lkv_status st = lkv_list_devices(NULL, 0, &count);
    lkv_device_report *reps = st == LKV_OK ? calloc((size_t)count + 1, sizeof *reps) : NULL;
    if (st != LKV_OK || !reps || lkv_list_devices(reps, count, &count) != LKV_OK) {
        free(reps);
        return cli_lib_error("devices", st != LKV_OK ? st : LKV_OUT_OF_MEMORY);
    }
    printf("%-8s %-6s %-6s %s\n", "BACKEND", "DEVICE", "STATUS", "DEVICE / REASON");
    for (int i = 0; i < count; i++) {
        char dev[16] = "-";
        if (reps[i].device >= 0)
            snprintf(dev, sizeof dev, "%d", reps[i].device);
        if (reps[i].available)
            printf("%-8s %-6s %-6s %s (%s%s)\n", reps[i].backend, dev, "PASS", reps[i].name,
                   reps[i].emulated ? "emulated on the CPU, " : "", reps[i].reason);
        else
            printf("%-8s %-6s %-6s %s\n", reps[i].backend, dev, "FAIL", reps[i].reason);
        if (reps[i].device >= 0)
            print_identity(&reps[i]);
    }
    free(reps);
    lkv_runtime *rt = NULL;
    st = lkv_runtime_open(NULL, &rt);
    if (st != LKV_OK)
        return cli_lib_error("devices", st);
    lkv_runtime_info info;
    lkv_runtime_get_info(rt, &info);
    printf("\ndefault: %s\n", info.selection);
    lkv_runtime_close(rt);
    return 0;
}
