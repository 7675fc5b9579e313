/* The slice of the OpenCL 1.2 API the backend uses, declared here so lazykv
 * builds without OpenCL headers (libOpenCL is dlopen'ed, never linked).
 * Values are the Khronos headers' (CL/cl.h, CL/cl_ext.h); the test build
 * checks each against them where they are installed
 * (tests/opencl/cl_api_check.c). */
#ifndef LKV_CL_API_H
#define LKV_CL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef intptr_t cl_context_properties;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_kernel_work_group_info;
typedef cl_uint cl_command_queue_info;
typedef cl_uint cl_mem_info;

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define LKV_CL_SUCCESS 0
#define LKV_CL_DEVICE_NOT_FOUND (-1)
#define LKV_CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)
#define LKV_CL_OUT_OF_RESOURCES (-5)
#define LKV_CL_OUT_OF_HOST_MEMORY (-6)
#define LKV_CL_BUILD_PROGRAM_FAILURE (-11)
#define LKV_CL_INVALID_BINARY (-42)
#define LKV_CL_PLATFORM_NOT_FOUND_KHR (-1001)

#define LKV_CL_TRUE 1u
#define LKV_CL_FALSE 0u

#define LKV_CL_PLATFORM_VERSION 0x0901
#define LKV_CL_PLATFORM_NAME 0x0902
#define LKV_CL_DEVICE_VENDOR_ID 0x1001

#define LKV_CL_DEVICE_TYPE 0x1000
#define LKV_CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define LKV_CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define LKV_CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define LKV_CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define LKV_CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define LKV_CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define LKV_CL_DEVICE_AVAILABLE 0x1027
#define LKV_CL_DEVICE_COMPILER_AVAILABLE 0x1028
#define LKV_CL_DEVICE_NAME 0x102B
#define LKV_CL_DEVICE_VENDOR 0x102C
#define LKV_CL_DRIVER_VERSION 0x102D
#define LKV_CL_DEVICE_VERSION 0x102F
#define LKV_CL_DEVICE_EXTENSIONS 0x1030
#define LKV_CL_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define LKV_CL_DEVICE_OPENCL_C_VERSION 0x103D
/* cl_khr_device_uuid, cl_khr_pci_bus_info, and the vendors' PCI queries */
#define LKV_CL_DEVICE_UUID_KHR 0x106A
#define LKV_CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#define LKV_CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define LKV_CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define LKV_CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A

#define LKV_CL_DEVICE_TYPE_CPU (1u << 1)
#define LKV_CL_DEVICE_TYPE_GPU (1u << 2)
#define LKV_CL_DEVICE_TYPE_ALL 0xFFFFFFFFu

#define LKV_CL_CONTEXT_PLATFORM 0x1084
#define LKV_CL_MEM_READ_WRITE (1u << 0)

#define LKV_CL_PROGRAM_BINARY_SIZES 0x1165
#define LKV_CL_PROGRAM_BINARIES 0x1166
#define LKV_CL_PROGRAM_BUILD_LOG 0x1183
#define LKV_CL_KERNEL_WORK_GROUP_SIZE 0x11B0

/* open_external and wrap: what a borrowed queue and buffer belong to */
#define LKV_CL_INVALID_VALUE (-30)
#define LKV_CL_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019
#define LKV_CL_DEVICE_PLATFORM 0x1031
#define LKV_CL_QUEUE_CONTEXT 0x1090
#define LKV_CL_QUEUE_DEVICE 0x1091
#define LKV_CL_QUEUE_PROPERTIES 0x1093
#define LKV_CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE (1u << 0)
#define LKV_CL_MEM_SIZE 0x1102
#define LKV_CL_MEM_CONTEXT 0x1106

/* cl_khr_pci_bus_info's answer */
typedef struct lkv_cl_pci_bus_info {
    cl_uint domain, bus, device, function;
} lkv_cl_pci_bus_info;

typedef void (*lkv_cl_notify)(const char *errinfo, const void *private_info, size_t cb,
                              void *user_data);
typedef void (*lkv_cl_build_notify)(cl_program program, void *user_data);

#endif /* LKV_CL_API_H */
