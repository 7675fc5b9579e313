/* Listing CUDA devices: name, driver, memory, UUID, compute capability, and
 * whether the embedded kernels can run there. Decided from the fatbin's
 * entries and the driver's version alone, without creating a context, so
 * probing is cheap and never touches a device another process is using;
 * open loads the kernels and reports a refusal in the same words. Never
 * aborts: a missing driver is one unavailable report with the reason. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "error.h"
#include "host/host_report.h"
#include "host/host_text.h"

lkv_status lkv_cu_embedded_fatbin(lkv_fatbin_info *out)
{
    if (lkv_fatbin_parse(lkv_cuda_fatbin, lkv_cuda_fatbin_size, out) != LKV_OK)
        return lkv_fail_context(LKV_INTERNAL,
                                "the CUDA kernels built into this lazykv are damaged");
    return LKV_OK;
}

/* The first Linux driver branch of each CUDA release (CUDA Toolkit release
 * notes, "CUDA Toolkit and Corresponding Driver Versions"). */
static const struct {
    int cuda;
    int branch;
} driver_branches[] = {
    {12000, 525}, {12010, 530}, {12020, 535}, {12030, 545}, {12040, 550},
    {12050, 555}, {12060, 560}, {12080, 570}, {12090, 575}, {13000, 580},
};

static int branch_for(int cuda)
{
    int n = (int)(sizeof driver_branches / sizeof driver_branches[0]);
    for (int i = 0; i < n; i++)
        if (driver_branches[i].cuda >= cuda)
            return driver_branches[i].cuda / 1000 == cuda / 1000 ? driver_branches[i].branch : 0;
    return 0;
}

void lkv_cu_driver_advice(int toolkit, int needed, int driver_version, char *buf, size_t len)
{
    char have[24], built[24], need[24];
    lkv_cu_version_text(driver_version, have, sizeof have);
    lkv_cu_version_text(toolkit, built, sizeof built);
    lkv_cu_version_text(needed, need, sizeof need);
    int branch = branch_for(needed);
    if (driver_version >= needed)
        snprintf(buf, len, "the driver (%s) refused kernels built by %s: update the NVIDIA driver",
                 have, built);
    else if (branch)
        snprintf(buf, len, "driver supports %s but the kernels were built by %s: update the NVIDIA "
                 "driver to %d or newer", have, built, branch);
    else
        snprintf(buf, len, "driver supports %s but the kernels were built by %s: update the NVIDIA "
                 "driver to one for %s or newer", have, built, need);
}

/* "a Turing or newer GPU" for the first architecture of a generation. */
static void needs_phrase(int arch, char *buf, size_t len)
{
    static const struct {
        int arch;
        const char *name;
    } generations[] = {{50, "a Maxwell"}, {60, "a Pascal"},  {70, "a Volta"},
                       {75, "a Turing"},  {80, "an Ampere"}, {89, "an Ada"},
                       {90, "a Hopper"},  {100, "a Blackwell"}};
    for (size_t i = 0; i < sizeof generations / sizeof generations[0]; i++)
        if (generations[i].arch == arch) {
            snprintf(buf, len, "%s or newer GPU", generations[i].name);
            return;
        }
    snprintf(buf, len, "a GPU of compute capability %d.%d or newer", arch / 10, arch % 10);
}

static void no_code_words(const lkv_fatbin_info *fb, int cc_major, int cc_minor, char *why,
                          size_t why_len)
{
    char carried[96], needs[64];
    lkv_fatbin_summary(fb, carried, sizeof carried);
    int cc = cc_major * 10 + cc_minor, lowest = lkv_fatbin_lowest_arch(fb);
    if (cc < lowest) {
        needs_phrase(lowest, needs, sizeof needs);
        snprintf(why, why_len, "compute capability %d.%d (sm_%d): this lazykv carries %s; needs %s",
                 cc_major, cc_minor, cc, carried, needs);
    } else {
        snprintf(why, why_len, "compute capability %d.%d (sm_%d): this lazykv carries %s; rebuild "
                 "it with sm_%d or PTX in LAZYKV_CUDA_TARGETS", cc_major, cc_minor, cc, carried,
                 cc);
    }
}

int lkv_cu_can_run(const lkv_fatbin_info *fb, int toolkit, int driver_version, int cc_major,
                   int cc_minor, char *how, size_t how_len, char *why, size_t why_len)
{
    const lkv_fatbin_entry *elf = lkv_fatbin_best_elf(fb, cc_major, cc_minor);
    const lkv_fatbin_entry *ptx = lkv_fatbin_best_ptx(fb, cc_major, cc_minor);
    /* Machine code loads on any driver of the toolkit's major version (CUDA
     * minor version compatibility); PTX needs a driver whose JIT knows the
     * toolkit's PTX ISA, so one at least as new as the toolkit. */
    int major_only = toolkit / 1000 * 1000;
    char name[48];
    if (elf && driver_version >= major_only) {
        lkv_fatbin_entry_name(elf, name, sizeof name);
        snprintf(how, how_len, "%s machine code", name);
        return 1;
    }
    if (ptx && driver_version >= toolkit) {
        lkv_fatbin_entry_name(ptx, name, sizeof name);
        snprintf(how, how_len, "PTX %s, compiled by the driver", name);
        return 1;
    }
    if (!elf && !ptx)
        no_code_words(fb, cc_major, cc_minor, why, why_len);
    else
        lkv_cu_driver_advice(toolkit, elf ? major_only : toolkit, driver_version, why, why_len);
    return 0;
}

lkv_status lkv_cu_attribute(const lkv_cu_lib *lib, CUdevice dev, CUdevice_attribute attr,
                            const char *name, int *out)
{
    char what[80];
    snprintf(what, sizeof what, "cuDeviceGetAttribute(%s)", name);
    return lkv_cu_check(lib, lib->fn.cuDeviceGetAttribute(out, attr, dev), what);
}

lkv_status lkv_cu_identify(const lkv_cu_lib *lib, CUdevice dev, lkv_cu_identity *out)
{
    lkv_cu_identity id;
    memset(&id, 0, sizeof id);
    lkv_status st = lkv_cu_check(lib, lib->fn.cuDeviceGetName(id.name, (int)sizeof id.name, dev),
                                 "cuDeviceGetName");
    if (st == LKV_OK)
        st = lkv_cu_attribute(lib, dev, LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              "COMPUTE_CAPABILITY_MAJOR", &id.cc_major);
    if (st == LKV_OK)
        st = lkv_cu_attribute(lib, dev, LKV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              "COMPUTE_CAPABILITY_MINOR", &id.cc_minor);
    if (st == LKV_OK)
        st = lkv_cu_attribute(lib, dev, LKV_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              "MULTIPROCESSOR_COUNT", &id.multiprocessors);
    if (st != LKV_OK)
        return st;
    id.name[sizeof id.name - 1] = '\0'; /* the driver truncates without a terminator */
    *out = id;
    return LKV_OK;
}

static void uuid_text(const lkv_cu_lib *lib, CUdevice dev, char *buf, size_t len)
{
    CUuuid u;
    CUresult r = -1;
    if (lib->fn.cuDeviceGetUuid_v2)
        r = lib->fn.cuDeviceGetUuid_v2(&u, dev);
    else if (lib->fn.cuDeviceGetUuid)
        r = lib->fn.cuDeviceGetUuid(&u, dev);
    if (r != LKV_CUDA_SUCCESS)
        buf[0] = '\0';
    else
        lkv_host_uuid_text((const unsigned char *)u.bytes, buf, len);
}

static void report_device(const lkv_cu_lib *lib, const lkv_fatbin_info *fb, int ordinal,
                          lkv_device_report *rep)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->backend, sizeof rep->backend, "cuda");
    rep->device = ordinal;
    snprintf(rep->driver, sizeof rep->driver, "CUDA driver %d.%d", lib->driver_version / 1000,
             lib->driver_version % 1000 / 10);
    CUdevice dev = 0;
    lkv_cu_identity id;
    lkv_status st = lkv_cu_check(lib, lib->fn.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    if (st == LKV_OK)
        st = lkv_cu_identify(lib, dev, &id);
    if (st != LKV_OK) {
        snprintf(rep->reason, sizeof rep->reason, "%s", lkv_last_error());
        return;
    }
    snprintf(rep->name, sizeof rep->name, "%s", id.name);
    size_t bytes = 0;
    if (lib->fn.cuDeviceTotalMem_v2(&bytes, dev) == LKV_CUDA_SUCCESS)
        rep->memory_bytes = bytes;
    uuid_text(lib, dev, rep->uuid, sizeof rep->uuid);
    char pci[32];
    if (lib->fn.cuDeviceGetPCIBusId && lib->fn.cuDeviceGetPCIBusId(pci, (int)sizeof pci, dev) == LKV_CUDA_SUCCESS)
        lkv_host_pci_text(pci, rep->pci, sizeof rep->pci);
    char how[96], why[200];
    rep->available = lkv_cu_can_run(fb, lkv_cuda_fatbin_toolkit, lib->driver_version, id.cc_major,
                                    id.cc_minor, how, sizeof how, why, sizeof why);
    if (rep->available)
        snprintf(rep->reason, sizeof rep->reason, "compute capability %d.%d, %d SMs, %s",
                 id.cc_major, id.cc_minor, id.multiprocessors, how);
    else
        snprintf(rep->reason, sizeof rep->reason, "%.50s: %.200s", id.name, why);
}

static void unavailable(lkv_device_report *out, int cap, int *out_count, const char *why)
{
    lkv_host_report_unavailable(out, cap, out_count, "cuda", why);
}

lkv_status lkv_cu_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_fatbin_info fb;
    if (lkv_cu_embedded_fatbin(&fb) != LKV_OK) {
        unavailable(out, cap, out_count, lkv_last_error());
        return LKV_OK;
    }
    lkv_cu_lib lib;
    if (lkv_cu_load(&lib) != LKV_OK) {
        unavailable(out, cap, out_count, lkv_last_error());
        return LKV_OK;
    }
    int n = 0;
    CUresult r = lib.fn.cuDeviceGetCount(&n);
    if (r != LKV_CUDA_SUCCESS || n < 1) {
        char text[200] = "0 devices";
        if (r != LKV_CUDA_SUCCESS)
            lkv_cu_error_text(&lib, r, text, sizeof text);
        char why[256];
        snprintf(why, sizeof why, "no CUDA device: cuDeviceGetCount reports %s", text);
        unavailable(out, cap, out_count, why);
        lkv_cu_unload(&lib);
        return LKV_OK;
    }
    *out_count = n;
    for (int i = 0; i < n && i < cap; i++)
        report_device(&lib, &fb, i, &out[i]);
    lkv_cu_unload(&lib);
    return LKV_OK;
}
