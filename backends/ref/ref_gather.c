/* gather, reference: every source span copied out first, then every
 * destination written, so moves in place read what was there before. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ref_ops.h"

lkv_status lkv_ref_gather(lkv_device *dev, const lkv_gather_args *a)
{
    (void)dev;
    size_t bytes = (size_t)a->words * 4;
    if (a->n <= 0 || !bytes)
        return LKV_OK;
    unsigned char *held = malloc(bytes * (size_t)a->n);
    if (!held)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gather: out of host memory for %d spans", a->n);
    for (int32_t i = 0; i < a->n; i++)
        memcpy(held + (size_t)i * bytes, a->buf->data + (size_t)a->src_word[i] * 4, bytes);
    for (int32_t i = 0; i < a->n; i++)
        memcpy(a->buf->data + (size_t)a->dst_word[i] * 4, held + (size_t)i * bytes, bytes);
    free(held);
    return LKV_OK;
}
