/* Checks backends/opencl/cl_api.h and cl_symbols.h against the Khronos
 * headers, where they are installed (opencl-c-headers): every constant the
 * backend declares that Khronos defines must equal CL/cl.h's or
 * CL/cl_ext.h's, the structs the backend reads device answers into must
 * have the Khronos layout, and every entry point must exist in CL/cl.h
 * with those parameter types. A mismatch is a compile error; nothing here
 * runs.
 *
 * cl_api.h's typedefs (cl_int, cl_device_id, ...) repeat the Khronos ones
 * word for word; C11 accepts a repeated identical typedef and rejects a
 * different one, so including both headers already checks those. */
#define CL_TARGET_OPENCL_VERSION 300
/* clCreateCommandQueue is deprecated from OpenCL 2.0 on; the backend calls
 * it on purpose (cl_symbols.h says why), so its prototype must stay visible
 * without a deprecation warning. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stddef.h>

#include "cl_api.h"

#define SAME(ours, theirs)                                                                   \
    _Static_assert((long long)(ours) == (long long)(theirs),                                 \
                   #ours " differs from the Khronos " #theirs)

/* error codes */
SAME(LKV_CL_SUCCESS, CL_SUCCESS);
SAME(LKV_CL_DEVICE_NOT_FOUND, CL_DEVICE_NOT_FOUND);
SAME(LKV_CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_MEM_OBJECT_ALLOCATION_FAILURE);
SAME(LKV_CL_OUT_OF_RESOURCES, CL_OUT_OF_RESOURCES);
SAME(LKV_CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_HOST_MEMORY);
SAME(LKV_CL_BUILD_PROGRAM_FAILURE, CL_BUILD_PROGRAM_FAILURE);
SAME(LKV_CL_INVALID_BINARY, CL_INVALID_BINARY);
SAME(LKV_CL_PLATFORM_NOT_FOUND_KHR, CL_PLATFORM_NOT_FOUND_KHR);

SAME(LKV_CL_TRUE, CL_TRUE);
SAME(LKV_CL_FALSE, CL_FALSE);

/* platform and device queries */
SAME(LKV_CL_PLATFORM_VERSION, CL_PLATFORM_VERSION);
SAME(LKV_CL_PLATFORM_NAME, CL_PLATFORM_NAME);
SAME(LKV_CL_DEVICE_VENDOR_ID, CL_DEVICE_VENDOR_ID);
SAME(LKV_CL_DEVICE_TYPE, CL_DEVICE_TYPE);
SAME(LKV_CL_DEVICE_MAX_COMPUTE_UNITS, CL_DEVICE_MAX_COMPUTE_UNITS);
SAME(LKV_CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_GROUP_SIZE);
SAME(LKV_CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_MAX_WORK_ITEM_SIZES);
SAME(LKV_CL_DEVICE_MAX_MEM_ALLOC_SIZE, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
SAME(LKV_CL_DEVICE_GLOBAL_MEM_SIZE, CL_DEVICE_GLOBAL_MEM_SIZE);
SAME(LKV_CL_DEVICE_LOCAL_MEM_SIZE, CL_DEVICE_LOCAL_MEM_SIZE);
SAME(LKV_CL_DEVICE_AVAILABLE, CL_DEVICE_AVAILABLE);
SAME(LKV_CL_DEVICE_COMPILER_AVAILABLE, CL_DEVICE_COMPILER_AVAILABLE);
SAME(LKV_CL_DEVICE_NAME, CL_DEVICE_NAME);
SAME(LKV_CL_DEVICE_VENDOR, CL_DEVICE_VENDOR);
SAME(LKV_CL_DRIVER_VERSION, CL_DRIVER_VERSION);
SAME(LKV_CL_DEVICE_VERSION, CL_DEVICE_VERSION);
SAME(LKV_CL_DEVICE_EXTENSIONS, CL_DEVICE_EXTENSIONS);
SAME(LKV_CL_DEVICE_DOUBLE_FP_CONFIG, CL_DEVICE_DOUBLE_FP_CONFIG);
SAME(LKV_CL_DEVICE_OPENCL_C_VERSION, CL_DEVICE_OPENCL_C_VERSION);

/* identity extensions: cl_khr_device_uuid, cl_khr_pci_bus_info. NVIDIA's
 * PCI queries (LKV_CL_DEVICE_PCI_BUS_ID_NV, LKV_CL_DEVICE_PCI_SLOT_ID_NV,
 * LKV_CL_DEVICE_PCI_DOMAIN_ID_NV, of cl_nv_device_attribute_query) are in
 * no Khronos header, so they go unchecked here. */
SAME(LKV_CL_DEVICE_UUID_KHR, CL_DEVICE_UUID_KHR);
SAME(LKV_CL_DEVICE_PCI_BUS_INFO_KHR, CL_DEVICE_PCI_BUS_INFO_KHR);

SAME(LKV_CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_CPU);
SAME(LKV_CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_GPU);
SAME(LKV_CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_ALL);

SAME(LKV_CL_CONTEXT_PLATFORM, CL_CONTEXT_PLATFORM);
SAME(LKV_CL_MEM_READ_WRITE, CL_MEM_READ_WRITE);

SAME(LKV_CL_PROGRAM_BINARY_SIZES, CL_PROGRAM_BINARY_SIZES);
SAME(LKV_CL_PROGRAM_BINARIES, CL_PROGRAM_BINARIES);
SAME(LKV_CL_PROGRAM_BUILD_LOG, CL_PROGRAM_BUILD_LOG);
SAME(LKV_CL_KERNEL_WORK_GROUP_SIZE, CL_KERNEL_WORK_GROUP_SIZE);
/* open_external and wrap */
SAME(LKV_CL_INVALID_VALUE, CL_INVALID_VALUE);
SAME(LKV_CL_DEVICE_MEM_BASE_ADDR_ALIGN, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
SAME(LKV_CL_DEVICE_PLATFORM, CL_DEVICE_PLATFORM);
SAME(LKV_CL_QUEUE_CONTEXT, CL_QUEUE_CONTEXT);
SAME(LKV_CL_QUEUE_DEVICE, CL_QUEUE_DEVICE);
SAME(LKV_CL_QUEUE_PROPERTIES, CL_QUEUE_PROPERTIES);
SAME(LKV_CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
SAME(LKV_CL_MEM_SIZE, CL_MEM_SIZE);
SAME(LKV_CL_MEM_CONTEXT, CL_MEM_CONTEXT);

/* The struct a device answer is read into: the driver writes the Khronos
 * layout, so size and every field's offset must agree. */
SAME(sizeof(lkv_cl_pci_bus_info), sizeof(cl_device_pci_bus_info_khr));
SAME(offsetof(lkv_cl_pci_bus_info, domain), offsetof(cl_device_pci_bus_info_khr, pci_domain));
SAME(offsetof(lkv_cl_pci_bus_info, bus), offsetof(cl_device_pci_bus_info_khr, pci_bus));
SAME(offsetof(lkv_cl_pci_bus_info, device), offsetof(cl_device_pci_bus_info_khr, pci_device));
SAME(offsetof(lkv_cl_pci_bus_info, function), offsetof(cl_device_pci_bus_info_khr, pci_function));

/* The callback typedefs the prototypes below use in place of Khronos's
 * inline function-pointer parameters. */
_Static_assert(__builtin_types_compatible_p(lkv_cl_notify,
                                            void (*)(const char *, const void *, size_t, void *)),
               "lkv_cl_notify differs from clCreateContext's pfn_notify");
_Static_assert(__builtin_types_compatible_p(lkv_cl_build_notify, void (*)(cl_program, void *)),
               "lkv_cl_build_notify differs from clBuildProgram's pfn_notify");

/* Every entry point: here the names in cl_symbols.h are CL/cl.h's own
 * declarations, so each line checks the return and parameter types. */
#define LKV_SYM(group, need, ret, name, params)                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret (*) params),           \
                   #name ": cl_symbols.h and CL/cl.h disagree");
#include "cl_symbols.h"
#undef LKV_SYM
