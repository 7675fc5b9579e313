/* Every OpenCL entry point the backend calls, one line each, all OpenCL 1.2
 * and exported by every ICD loader, in the shape of
 * backends/host/host_symbols.h: LKV_SYM(opencl, REQ, return type, name,
 * (parameter types)). A loader lacking any of them is refused
 * (backends/opencl/cl_loader.c). clCreateCommandQueue is the 1.x call:
 * 2.0's replacement is missing from 1.2-only loaders, and the old one is
 * still exported by newer ones. The marker, barrier and event calls are
 * the lanes' (cl_lane.c). */

LKV_SYM(opencl, REQ, cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))
LKV_SYM(opencl, REQ, cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *,
        size_t *))
LKV_SYM(opencl, REQ, cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint,
        cl_device_id *, cl_uint *))
LKV_SYM(opencl, REQ, cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *,
        size_t *))
LKV_SYM(opencl, REQ, cl_context, clCreateContext, (const cl_context_properties *, cl_uint,
        const cl_device_id *, lkv_cl_notify, void *, cl_int *))
LKV_SYM(opencl, REQ, cl_int, clReleaseContext, (cl_context))
LKV_SYM(opencl, REQ, cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id,
        cl_command_queue_properties, cl_int *))
LKV_SYM(opencl, REQ, cl_int, clReleaseCommandQueue, (cl_command_queue))
LKV_SYM(opencl, REQ, cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))
LKV_SYM(opencl, REQ, cl_int, clReleaseMemObject, (cl_mem))
LKV_SYM(opencl, REQ, cl_int, clRetainMemObject, (cl_mem))
LKV_SYM(opencl, REQ, cl_int, clGetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))
LKV_SYM(opencl, REQ, cl_int, clRetainContext, (cl_context))
LKV_SYM(opencl, REQ, cl_int, clRetainCommandQueue, (cl_command_queue))
LKV_SYM(opencl, REQ, cl_int, clGetCommandQueueInfo, (cl_command_queue, cl_command_queue_info,
        size_t, void *, size_t *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_bool, size_t,
        size_t, const void *, cl_uint, const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_bool, size_t,
        size_t, void *, cl_uint, const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueCopyBuffer, (cl_command_queue, cl_mem, cl_mem, size_t, size_t,
        size_t, cl_uint, const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueFillBuffer, (cl_command_queue, cl_mem, const void *, size_t,
        size_t, size_t, cl_uint, const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char **,
        const size_t *, cl_int *))
LKV_SYM(opencl, REQ, cl_program, clCreateProgramWithBinary, (cl_context, cl_uint,
        const cl_device_id *, const size_t *, const unsigned char **, cl_int *, cl_int *))
LKV_SYM(opencl, REQ, cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id *,
        const char *, lkv_cl_build_notify, void *))
LKV_SYM(opencl, REQ, cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void *,
        size_t *))
LKV_SYM(opencl, REQ, cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id,
        cl_program_build_info, size_t, void *, size_t *))
LKV_SYM(opencl, REQ, cl_int, clReleaseProgram, (cl_program))
LKV_SYM(opencl, REQ, cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *))
LKV_SYM(opencl, REQ, cl_int, clReleaseKernel, (cl_kernel))
LKV_SYM(opencl, REQ, cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *))
LKV_SYM(opencl, REQ, cl_int, clGetKernelWorkGroupInfo, (cl_kernel, cl_device_id,
        cl_kernel_work_group_info, size_t, void *, size_t *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueNDRangeKernel, (cl_command_queue, cl_kernel, cl_uint,
        const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clFlush, (cl_command_queue))
LKV_SYM(opencl, REQ, cl_int, clFinish, (cl_command_queue))
LKV_SYM(opencl, REQ, cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue, cl_uint,
        const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clEnqueueBarrierWithWaitList, (cl_command_queue, cl_uint,
        const cl_event *, cl_event *))
LKV_SYM(opencl, REQ, cl_int, clReleaseEvent, (cl_event))
