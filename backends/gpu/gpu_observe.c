/* observe: placeholder until the kernel lands (being written). */
#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_observe(lkv_device *d, const lkv_observe_args *a)
{
    (void)a;
    return lkv_fail(LKV_UNSUPPORTED, "%s observe: not written yet", d->drv->name);
}
