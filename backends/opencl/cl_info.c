/* What lazykv reads of an OpenCL device, and whether it can run the
 * kernels. Identity (UUID, PCI address) comes from whichever extension the
 * driver has, so the same GPU seen through Vulkan or CUDA can be matched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "host/host_text.h"

/* A string answer, cut to fit `buf`: OpenCL refuses to write a string
 * into a buffer too small for all of it, so a long one is read whole first. */
static void text(const lkv_cl_lib *lib, cl_device_id dev, cl_device_info what, char *buf, size_t len)
{
    size_t size = 0;
    buf[0] = '\0';
    if (lib->fn.clGetDeviceInfo(dev, what, 0, NULL, &size) != LKV_CL_SUCCESS || size == 0)
        return;
    char *whole = size > len ? malloc(size) : buf;
    if (whole && lib->fn.clGetDeviceInfo(dev, what, size, whole, NULL) == LKV_CL_SUCCESS) {
        if (whole != buf)
            memcpy(buf, whole, len - 1);
        buf[len - 1] = '\0'; /* a string that fit ends on its own NUL */
    } else {
        buf[0] = '\0';
    }
    if (whole != buf)
        free(whole);
}

/* A fixed-size answer; zero, and 0 returned, where the device has none. */
static int value(const lkv_cl_lib *lib, cl_device_id dev, cl_device_info what, void *out, size_t size)
{
    if (lib->fn.clGetDeviceInfo(dev, what, size, out, NULL) == LKV_CL_SUCCESS)
        return 1;
    memset(out, 0, size);
    return 0;
}

static int has_extension(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = strstr(list, name); at; at = strstr(at + 1, name))
        if ((at == list || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0'))
            return 1;
    return 0;
}

/* The PCI address as "dddd:bb:dd.f", from cl_khr_pci_bus_info, else
 * NVIDIA's own queries; "" when neither answers. AMD's topology query is
 * left out on purpose: it has no PCI domain, and a guessed domain could
 * link two different GPUs (AMD devices still link by UUID). */
static void pci_address(const lkv_cl_lib *lib, cl_device_id dev, const char *ext, char *buf, size_t len)
{
    buf[0] = '\0';
    if (has_extension(ext, "cl_khr_pci_bus_info")) {
        lkv_cl_pci_bus_info p;
        if (lib->fn.clGetDeviceInfo(dev, LKV_CL_DEVICE_PCI_BUS_INFO_KHR, sizeof p, &p, NULL) ==
            LKV_CL_SUCCESS)
            snprintf(buf, len, "%04x:%02x:%02x.%x", p.domain, p.bus & 0xff, p.device & 0x1f,
                     p.function & 7);
    } else if (has_extension(ext, "cl_nv_device_attribute_query")) {
        cl_uint bus = 0, slot = 0, domain = 0;
        /* Drivers older than the domain query are on domain 0. */
        if (value(lib, dev, LKV_CL_DEVICE_PCI_BUS_ID_NV, &bus, sizeof bus) &&
            value(lib, dev, LKV_CL_DEVICE_PCI_SLOT_ID_NV, &slot, sizeof slot)) {
            value(lib, dev, LKV_CL_DEVICE_PCI_DOMAIN_ID_NV, &domain, sizeof domain);
            snprintf(buf, len, "%04x:%02x:%02x.%x", domain, bus & 0xff, (slot >> 3) & 0x1f,
                     slot & 7);
        }
    }
}

void lkv_cl_read_info(const lkv_cl_lib *lib, int i, lkv_cl_info *out)
{
    cl_device_id dev = lib->devs[i];
    memset(out, 0, sizeof *out);
    text(lib, dev, LKV_CL_DEVICE_NAME, out->name, sizeof out->name);
    text(lib, dev, LKV_CL_DEVICE_VERSION, out->version, sizeof out->version);
    text(lib, dev, LKV_CL_DEVICE_OPENCL_C_VERSION, out->c_version, sizeof out->c_version);
    text(lib, dev, LKV_CL_DRIVER_VERSION, out->driver, sizeof out->driver);
    if (lib->fn.clGetPlatformInfo(lib->dev_platform[i], LKV_CL_PLATFORM_NAME,
                                  sizeof out->platform - 1, out->platform, NULL) != LKV_CL_SUCCESS)
        out->platform[0] = '\0';
    if (lib->fn.clGetPlatformInfo(lib->dev_platform[i], LKV_CL_PLATFORM_VERSION,
                                  sizeof out->platform_version - 1, out->platform_version, NULL) !=
        LKV_CL_SUCCESS)
        out->platform_version[0] = '\0';
    value(lib, dev, LKV_CL_DEVICE_TYPE, &out->type, sizeof out->type);
    value(lib, dev, LKV_CL_DEVICE_VENDOR_ID, &out->vendor_id, sizeof out->vendor_id);
    value(lib, dev, LKV_CL_DEVICE_MAX_COMPUTE_UNITS, &out->compute_units, sizeof out->compute_units);
    value(lib, dev, LKV_CL_DEVICE_MAX_WORK_GROUP_SIZE, &out->max_wg, sizeof out->max_wg);
    /* Work-groups are one-dimensional, so dimension 0's limit applies too. */
    size_t items[3] = {0, 0, 0};
    if (lib->fn.clGetDeviceInfo(dev, LKV_CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) ==
            LKV_CL_SUCCESS && items[0] > 0 && items[0] < out->max_wg)
        out->max_wg = items[0];
    value(lib, dev, LKV_CL_DEVICE_GLOBAL_MEM_SIZE, &out->global_mem, sizeof out->global_mem);
    value(lib, dev, LKV_CL_DEVICE_MAX_MEM_ALLOC_SIZE, &out->max_alloc, sizeof out->max_alloc);
    value(lib, dev, LKV_CL_DEVICE_LOCAL_MEM_SIZE, &out->local_mem, sizeof out->local_mem);
    value(lib, dev, LKV_CL_DEVICE_AVAILABLE, &out->available, sizeof out->available);
    value(lib, dev, LKV_CL_DEVICE_COMPILER_AVAILABLE, &out->compiler, sizeof out->compiler);
    char e[8192];
    text(lib, dev, LKV_CL_DEVICE_EXTENSIONS, e, sizeof e);
    out->has_f64 = has_extension(e, "cl_khr_fp64");
    if (has_extension(e, "cl_khr_device_uuid")) {
        unsigned char u[16];
        if (lib->fn.clGetDeviceInfo(dev, LKV_CL_DEVICE_UUID_KHR, sizeof u, u, NULL) == LKV_CL_SUCCESS)
            lkv_host_uuid_text(u, out->uuid, sizeof out->uuid);
    }
    pci_address(lib, dev, e, out->pci, sizeof out->pci);
}

/* "OpenCL 1.2 ..." / "OpenCL C 1.2 ...": the major and minor version. */
static int version_at_least(const char *v, const char *prefix, int major, int minor)
{
    int ma = 0, mi = 0;
    size_t n = strlen(prefix);
    if (strncmp(v, prefix, n) != 0 || sscanf(v + n, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

int lkv_cl_usable(const lkv_cl_info *info, char *why, size_t why_len)
{
    if (!info->available)
        snprintf(why, why_len, "the driver reports the device as not available");
    else if (!info->compiler)
        snprintf(why, why_len, "the driver has no OpenCL C compiler for it (lazykv builds its "
                 "kernels from source)");
    else if (!version_at_least(info->version, "OpenCL ", 1, 2))
        snprintf(why, why_len, "needs OpenCL 1.2, the device has '%s'", info->version);
    else if (!version_at_least(info->c_version, "OpenCL C ", 1, 2))
        snprintf(why, why_len, "needs OpenCL C 1.2, the device compiles '%s'", info->c_version);
    else if (info->max_wg < 32)
        snprintf(why, why_len, "work-groups of at most %zu work-items (lazykv needs 32)", info->max_wg);
    else
        return 1;
    return 0;
}
