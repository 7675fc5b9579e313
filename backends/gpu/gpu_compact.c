/* compact: placeholder until the kernel lands (being written). */
#include "error.h"
#include "gpu_internal.h"

lkv_status lkv_gpu_compact(lkv_device *d, const lkv_compact_args *a)
{
    (void)a;
    return lkv_fail(LKV_UNSUPPORTED, "%s compact: not written yet", d->drv->name);
}
