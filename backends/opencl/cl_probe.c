/* Listing OpenCL devices: every device of every platform, with platform,
 * driver, memory, UUID and PCI address where the driver says them, whether
 * it runs on the CPU (PoCL, Intel's CPU runtime), and whether lazykv can use
 * it. Never aborts: a missing loader or driver is one unavailable report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"
#include "host/host_report.h"

/* "OpenCL 3.0 PoCL HSTR: ..." is kept to "OpenCL 3.0". */
static int version_words(const char *v)
{
    const char *space = strchr(v, ' ');
    space = space ? strchr(space + 1, ' ') : NULL;
    return space ? (int)(space - v) : (int)strlen(v);
}

static void report(const lkv_cl_lib *lib, int i, lkv_device_report *rep)
{
    lkv_cl_info info;
    lkv_cl_read_info(lib, i, &info);
    memset(rep, 0, sizeof *rep);
    snprintf(rep->backend, sizeof rep->backend, "opencl");
    rep->device = i;
    snprintf(rep->name, sizeof rep->name, "%s", info.name);
    snprintf(rep->driver, sizeof rep->driver, "%.60s %.60s", info.platform, info.driver);
    snprintf(rep->uuid, sizeof rep->uuid, "%s", info.uuid);
    snprintf(rep->pci, sizeof rep->pci, "%s", info.pci);
    rep->memory_bytes = info.global_mem;
    /* Only a GPU is worth more than the cpu backend: CPU devices (PoCL) and
     * accelerators that are emulations on the CPU (Intel's FPGA emulator)
     * are not. */
    rep->emulated = (info.type & LKV_CL_DEVICE_TYPE_GPU) == 0;
    char why[200];
    rep->available = lkv_cl_usable(&info, why, sizeof why);
    if (rep->available)
        snprintf(rep->reason, sizeof rep->reason, "%.*s, %.60s, %s scores", version_words(info.version),
                 info.version, info.platform, lkv_bind_f64_scores("LAZYKV_OPENCL_F64", info.has_f64) ? "f64" : "f32");
    else
        snprintf(rep->reason, sizeof rep->reason, "%.100s: %.150s", info.name, why);
}

lkv_status lkv_cl_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_cl_lib lib;
    if (lkv_cl_load(&lib) != LKV_OK) {
        lkv_host_report_unavailable(out, cap, out_count, "opencl", lkv_last_error());
        return LKV_OK;
    }
    *out_count = lib.n_devs;
    for (int i = 0; i < lib.n_devs && i < cap; i++)
        report(&lib, i, &out[i]);
    lkv_cl_unload(&lib);
    return LKV_OK;
}
