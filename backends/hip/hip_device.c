/* What lazykv needs to know of a HIP device: its architecture, read before
 * any module is loaded so a missing target is a clear INCOMPATIBLE, and its
 * name, memory, identity and launch limits.
 *
 * The architecture (gcnArchName, "gfx90a:sramecc+:xnack-") exists only in
 * hipDeviceProp_t, whose layout changed in ROCm 6. ROCm 6 and 7 export
 * hipGetDevicePropertiesR0600 (new layout) next to the plain
 * hipGetDeviceProperties (kept with the ROCm 5 layout for old binaries);
 * ROCm 5 exports only the plain one. So: R0600 when the runtime has it,
 * reading gcnArchName at its R0600 offset, else the plain call at the ROCm 5
 * offset (hip_api.h). Either way the call writes into a zeroed buffer larger
 * than both layouts, and the name must be a NUL-terminated "gfx..." string;
 * if the R0600 read fails that check, the plain call is tried before giving
 * up, so a runtime that disagrees with its symbol's layout is caught rather
 * than misread. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "hip_internal.h"
#include "host/host_text.h"

static int arch_name_ok(const char *a)
{
    if (!memchr(a, '\0', LKV_HIP_PROPS_ARCH_LEN) || strncmp(a, "gfx", 3) != 0 || !a[3])
        return 0;
    for (const char *c = a; *c; c++)
        if (*c <= ' ' || *c > '~')
            return 0;
    return 1;
}

/* A printable copy of what was found, for the message. */
static void printable(const char *a, char *out, size_t cap)
{
    size_t i = 0;
    for (; i + 1 < cap && i < 32 && a[i]; i++)
        out[i] = (a[i] > ' ' && a[i] <= '~') ? a[i] : '?';
    out[i] = '\0';
}

static lkv_status arch_from(const lkv_hip_lib *lib, hipError_t (*get)(void *, int),
                            const char *fname, size_t offset, int ordinal, char *out, size_t cap)
{
    _Alignas(16) unsigned char props[LKV_HIP_PROPS_BUFFER];
    memset(props, 0, sizeof props);
    char what[96];
    snprintf(what, sizeof what, "%s(device %d)", fname, ordinal);
    lkv_status st = lkv_hip_check(lib, get(props, ordinal), what);
    if (st != LKV_OK)
        return st;
    const char *arch = (const char *)props + offset;
    if (!arch_name_ok(arch)) {
        char seen[40];
        printable(arch, seen, sizeof seen);
        return lkv_fail(LKV_DEVICE_ERROR, "hip device %d: %s gave no gfx architecture name at "
                        "byte %zu of its properties (found '%s')", ordinal, fname, offset, seen);
    }
    snprintf(out, cap, "%s", arch);
    return LKV_OK;
}

lkv_status lkv_hip_device_arch(const lkv_hip_lib *lib, int ordinal, char *out, size_t cap)
{
    lkv_status st = LKV_INTERNAL;
    if (lib->fn.hipGetDevicePropertiesR0600) {
        st = arch_from(lib, lib->fn.hipGetDevicePropertiesR0600, "hipGetDevicePropertiesR0600",
                       LKV_HIP_PROPS_R0600_ARCH_OFFSET, ordinal, out, cap);
        if (st == LKV_OK)
            return st;
    }
    if (lib->fn.hipGetDeviceProperties)
        st = arch_from(lib, lib->fn.hipGetDeviceProperties, "hipGetDeviceProperties",
                       LKV_HIP_PROPS_R0000_ARCH_OFFSET, ordinal, out, cap);
    return st;
}

static lkv_status attribute(const lkv_hip_lib *lib, int ordinal, hipDeviceAttribute_t attr,
                            const char *attr_name, int *out)
{
    char what[96];
    snprintf(what, sizeof what, "hipDeviceGetAttribute(%s, device %d)", attr_name, ordinal);
    *out = 0;
    return lkv_hip_check(lib, lib->fn.hipDeviceGetAttribute(out, attr, ordinal), what);
}

static lkv_status limits(const lkv_hip_lib *lib, int ordinal, lkv_hip_device_info *out)
{
    int warp, cus, gy, gz;
    lkv_status st = attribute(lib, ordinal, hipDeviceAttributeWarpSize, "WarpSize", &warp);
    if (st == LKV_OK)
        st = attribute(lib, ordinal, hipDeviceAttributeMultiprocessorCount,
                       "MultiprocessorCount", &cus);
    if (st == LKV_OK)
        st = attribute(lib, ordinal, hipDeviceAttributeMaxGridDimY, "MaxGridDimY", &gy);
    if (st == LKV_OK)
        st = attribute(lib, ordinal, hipDeviceAttributeMaxGridDimZ, "MaxGridDimZ", &gz);
    if (st == LKV_OK)
        st = attribute(lib, ordinal, hipDeviceAttributeMaxThreadsPerBlock, "MaxThreadsPerBlock",
                       &out->max_block);
    if (st != LKV_OK)
        return st;
    /* 64 on GCN/CDNA (gfx9), 32 on RDNA (gfx10+) as hipcc builds for it;
     * the kernels ask lkv_warp() and the host plans with this. */
    if (warp != 32 && warp != 64)
        return lkv_fail(LKV_INCOMPATIBLE, "hip device %d (%s): wavefront size %d; the kernels "
                        "need 32 or 64", ordinal, out->arch, warp);
    if (out->max_block < LKV_BLOCK_MAX)
        return lkv_fail(LKV_INCOMPATIBLE, "hip device %d (%s): at most %d threads per block; the "
                        "kernels launch %d", ordinal, out->arch, out->max_block, LKV_BLOCK_MAX);
    out->lim.warp = warp;
    out->lim.multiprocessors = cus;
    out->lim.max_grid_y = gy > 0 ? (uint32_t)gy : 0;
    out->lim.max_grid_z = gz > 0 ? (uint32_t)gz : 0;
    return LKV_OK;
}

/* HIP_VERSION numbers: major * 10^7 + minor * 10^5 + patch. */
static void version_text(int v, char *out, size_t cap)
{
    if (v >= 10000000)
        snprintf(out, cap, "%d.%d.%d", v / 10000000, v / 100000 % 100, v % 100000);
    else
        snprintf(out, cap, "%d", v);
}

static void identity(const lkv_hip_lib *lib, hipDevice_t dev, lkv_hip_device_info *out)
{
    int rt = 0, drv = 0;
    char rt_text[32] = "unknown", drv_text[32] = "unknown";
    if (lib->fn.hipRuntimeGetVersion(&rt) == hipSuccess)
        version_text(rt, rt_text, sizeof rt_text);
    if (lib->fn.hipDriverGetVersion(&drv) == hipSuccess)
        version_text(drv, drv_text, sizeof drv_text);
    snprintf(out->driver, sizeof out->driver, "HIP runtime %s, driver %s", rt_text, drv_text);
    hipUUID id;
    memset(&id, 0, sizeof id);
    if (lib->fn.hipDeviceGetUuid && lib->fn.hipDeviceGetUuid(&id, dev) == hipSuccess)
        lkv_host_uuid_text((const unsigned char *)id.bytes, out->uuid, sizeof out->uuid);
    char pci[32];
    if (lib->fn.hipDeviceGetPCIBusId && lib->fn.hipDeviceGetPCIBusId(pci, (int)sizeof pci, dev) == hipSuccess)
        lkv_host_pci_text(pci, out->pci, sizeof out->pci);
}

lkv_status lkv_hip_device_query(const lkv_hip_lib *lib, int ordinal, lkv_hip_device_info *out)
{
    memset(out, 0, sizeof *out);
    lkv_status st = lkv_hip_device_arch(lib, ordinal, out->arch, sizeof out->arch);
    if (st != LKV_OK)
        return st;
    hipDevice_t dev = 0;
    char what[64];
    snprintf(what, sizeof what, "hipDeviceGet(%d)", ordinal);
    st = lkv_hip_check(lib, lib->fn.hipDeviceGet(&dev, ordinal), what);
    if (st == LKV_OK) {
        snprintf(what, sizeof what, "hipDeviceGetName(device %d)", ordinal);
        st = lkv_hip_check(lib, lib->fn.hipDeviceGetName(out->name, (int)sizeof out->name, dev),
                           what);
        out->name[sizeof out->name - 1] = '\0';
    }
    if (st == LKV_OK) {
        snprintf(what, sizeof what, "hipDeviceTotalMem(device %d)", ordinal);
        st = lkv_hip_check(lib, lib->fn.hipDeviceTotalMem(&out->memory, dev), what);
    }
    if (st == LKV_OK)
        st = limits(lib, ordinal, out);
    if (st == LKV_OK)
        identity(lib, dev, out);
    return st;
}
