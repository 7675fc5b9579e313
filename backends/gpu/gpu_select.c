/* select: placeholder until the kernel lands (being written). */
#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_select(lkv_device *d, const lkv_select_args *a)
{
    (void)a;
    return lkv_fail(LKV_UNSUPPORTED, "%s select: not written yet", d->drv->name);
}
