/* gather, reference: each span's words copied from its source to its
 * destination, one span after the other (the spans never overlap, so the
 * order is not observable). */
#include <string.h>

#include "ref_ops.h"

lkv_status lkv_ref_gather(lkv_device *dev, const lkv_gather_args *a)
{
    (void)dev;
    size_t bytes = (size_t)a->words * 4;
    for (int32_t i = 0; i < a->n; i++)
        memcpy(a->dst->data + (size_t)a->dst_word[i] * 4,
               a->src->data + (size_t)a->src_word[i] * 4, bytes);
    return LKV_OK;
}
