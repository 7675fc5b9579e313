/* Loading the OpenCL ICD loader at run time: lazykv links no OpenCL
 * library, so a machine without one still runs it, and this backend then
 * says in words why it is unavailable. LAZYKV_OPENCL_LIBRARY names another
 * library (a vendor's own libOpenCL, or a test's stand-in). Every device of
 * every platform is listed, in platform order. */
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"
#include "host/host_library.h"
#include "host/host_symbols.h"
#include "host/host_text.h"

static const lkv_host_symbol cl_symbols[] = {
#define LKV_SYM(group, need, ret, name, params) LKV_HOST_SYMBOL(lkv_cl_fns, group, need, name)
#include "cl_symbols.h"
#undef LKV_SYM
};

static const char *const cl_names[] = {"libOpenCL.so.1", "libOpenCL.so"};

/* Codes a user may see, by name; the rest print as numbers. */
const char *lkv_cl_error_name(cl_int err)
{
    switch (err) {
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -53: return "CL_INVALID_WORK_DIMENSION";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return NULL;
    }
}

lkv_status lkv_cl_check(cl_int err, const char *what)
{
    if (err == LKV_CL_SUCCESS)
        return LKV_OK;
    int memory = err == LKV_CL_MEM_OBJECT_ALLOCATION_FAILURE || err == LKV_CL_OUT_OF_HOST_MEMORY;
    return lkv_host_call_failed(memory ? LKV_OUT_OF_MEMORY : LKV_DEVICE_ERROR, "opencl", what,
                                err, lkv_cl_error_name(err), NULL);
}

static lkv_status list_devices(lkv_cl_lib *lib)
{
    cl_platform_id plats[16];
    cl_uint n_plat = 0;
    cl_int err = lib->fn.clGetPlatformIDs(16, plats, &n_plat);
    /* The ICD loader answers PLATFORM_NOT_FOUND when no driver is
     * registered in /etc/OpenCL/vendors: the usual "not installed". */
    if (err == LKV_CL_PLATFORM_NOT_FOUND_KHR || (err == LKV_CL_SUCCESS && n_plat == 0))
        return lkv_fail(LKV_UNAVAILABLE, "%s found no OpenCL platform (no driver registered; "
                        "install one, e.g. pocl-opencl-icd for the CPU)", lib->path);
    if (err != LKV_CL_SUCCESS)
        return lkv_fail_context(lkv_cl_check(err, "clGetPlatformIDs"), "%s", lib->path);
    n_plat = n_plat > 16 ? 16 : n_plat;
    lib->n_devs = 0;
    for (cl_uint p = 0; p < n_plat; p++) {
        cl_uint room = (cl_uint)(LKV_CL_MAX_DEVICES - lib->n_devs), got = 0;
        /* A platform with no device answers DEVICE_NOT_FOUND: skip it. */
        if (room == 0 || lib->fn.clGetDeviceIDs(plats[p], LKV_CL_DEVICE_TYPE_ALL, room,
                                                lib->devs + lib->n_devs, &got) != LKV_CL_SUCCESS)
            continue;
        got = got > room ? room : got;
        for (cl_uint i = 0; i < got; i++)
            lib->dev_platform[lib->n_devs + (int)i] = plats[p];
        lib->n_devs += (int)got;
    }
    if (lib->n_devs == 0)
        return lkv_fail(LKV_UNAVAILABLE, "%s: %u OpenCL platform(s) but no device", lib->path,
                        n_plat);
    return LKV_OK;
}

lkv_status lkv_cl_load(lkv_cl_lib *out_lib)
{
    lkv_cl_lib *lib = out_lib;
    memset(lib, 0, sizeof *lib);
    char tried[512] = "";
    const lkv_host_library_search search = {.env = "LAZYKV_OPENCL_LIBRARY",
                                            .names = cl_names,
                                            .count = sizeof cl_names / sizeof cl_names[0]};
    lib->handle = lkv_host_library_find(&search, lib->path, sizeof lib->path, tried,
                                        sizeof tried);
    if (!lib->handle)
        return lkv_fail(LKV_UNAVAILABLE, "no OpenCL loader (tried %s): install ocl-icd-libopencl1 "
                        "and a driver", tried);
    const char *missing = lkv_host_resolve(cl_symbols, sizeof cl_symbols / sizeof cl_symbols[0],
                                           "opencl", lkv_host_dlsym, lib->handle, &lib->fn);
    lkv_status st = LKV_OK;
    if (missing)
        st = lkv_fail(LKV_UNAVAILABLE, "%s lacks %s: it is not an OpenCL 1.2 loader", lib->path,
                      missing);
    if (st == LKV_OK)
        st = list_devices(lib);
    if (st != LKV_OK)
        lkv_cl_unload(lib);
    return st;
}

void lkv_cl_unload(lkv_cl_lib *lib)
{
    lkv_host_library_close(lib->handle);
    lib->handle = NULL;
}
