/* attend: placeholder until the kernel lands (being written). */
#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_attend(lkv_device *d, const lkv_attend_args *a)
{
    (void)a;
    return lkv_fail(LKV_UNSUPPORTED, "%s attend: not written yet", d->drv->name);
}
