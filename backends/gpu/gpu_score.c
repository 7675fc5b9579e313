/* score: placeholder until the kernel lands (being written). */
#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_score(lkv_device *d, const lkv_score_args *a)
{
    (void)a;
    return lkv_fail(LKV_UNSUPPORTED, "%s score: not written yet", d->drv->name);
}
