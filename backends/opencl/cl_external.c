/* open_external: lazykv on the engine's cl_context, cl_device_id and
 * in-order cl_command_queue. Everything lazykv enqueues goes on that queue
 * in call order, so the queue's order is the hand-off (docs/embedding.md,
 * "OpenCL"): the engine's earlier commands run before lazykv's, its later
 * ones after, with no host wait. An out-of-order queue would break that and
 * is refused. The objects are retained while open and released at close,
 * never destroyed. */
#include "cl_internal.h"
#include "error.h"

static lkv_status queue_info(lkv_device *d, cl_command_queue q, cl_command_queue_info what,
                             size_t size, void *out)
{
    cl_int err = d->lib.fn.clGetCommandQueueInfo(q, what, size, out, NULL);
    if (err != LKV_CL_SUCCESS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: stream %p is not a "
                        "cl_command_queue (clGetCommandQueueInfo: %s)", (void *)q,
                        lkv_cl_error_name(err) ? lkv_cl_error_name(err) : "error");
    return LKV_OK;
}

lkv_status lkv_cl_external_check(lkv_device *d, cl_context ctx, cl_command_queue queue)
{
    if (!queue)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: stream (the engine's "
                        "cl_command_queue) is NULL");
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_command_queue_properties props = 0;
    lkv_status st = queue_info(d, queue, LKV_CL_QUEUE_CONTEXT, sizeof qctx, &qctx);
    if (st == LKV_OK)
        st = queue_info(d, queue, LKV_CL_QUEUE_DEVICE, sizeof qdev, &qdev);
    if (st == LKV_OK)
        st = queue_info(d, queue, LKV_CL_QUEUE_PROPERTIES, sizeof props, &props);
    if (st != LKV_OK)
        return st;
    if (qctx != ctx)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: the queue belongs to "
                        "another context than `context`");
    if (qdev != d->dev)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: the queue is on another "
                        "device than `physical_device`");
    if (props & LKV_CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: the queue is out of order; "
                        "lazykv orders its work by the queue, so it needs an in-order queue");
    return LKV_OK;
}

lkv_status lkv_cl_open_external(const lkv_external_device *ext, lkv_device **out_dev)
{
    if (!ext || !ext->context || !ext->physical_device || !ext->stream)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: context (cl_context), "
                        "physical_device (cl_device_id) and stream (cl_command_queue) are all "
                        "needed; %s is missing",
                        !ext ? "the whole description" : !ext->context ? "context"
                        : !ext->physical_device ? "physical_device" : "stream");
    if (ext->instance || ext->logical_device)
        return lkv_fail(LKV_INVALID_ARGUMENT, "opencl open_external: instance and "
                        "logical_device are Vulkan's fields and must be NULL");
    return lkv_cl_open_on(-1, (cl_device_id)ext->physical_device, (cl_context)ext->context,
                          (cl_command_queue)ext->stream, out_dev);
}
