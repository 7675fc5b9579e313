/* move_kept, reference: every moved source copied out first, then every
 * destination written, as ref_gather.c does for host lists. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ref_ops.h"

/* Pass 0 copies the moved sources into `held`, pass 1 writes them. */
static void pass(const lkv_move_kept_args *a, uint32_t *held, int back)
{
    const int32_t *kept = (const int32_t *)(const void *)a->kept->data;
    uint32_t *buf = (uint32_t *)(void *)a->buf->data;
    size_t bytes = (size_t)a->words * 4;
    for (int32_t i = 0; i < a->n; i++) {
        const int32_t *row = kept + (size_t)a->kept_row[i] * (size_t)a->kept_stride;
        for (int32_t j = 0; j < a->n_kept[i]; j++) {
            if (row[j] == j)
                continue;
            uint32_t *h = held + a->at[i] + (size_t)j * (size_t)a->words;
            if (back)
                memcpy(buf + lkv_ref_slot_word(&a->slots, i, j), h, bytes);
            else
                memcpy(h, buf + lkv_ref_slot_word(&a->slots, i, row[j]), bytes);
        }
    }
}

lkv_status lkv_ref_move_kept(lkv_device *dev, const lkv_move_kept_args *a)
{
    (void)dev;
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    uint32_t *held = malloc(a->held ? (size_t)a->held : 4);
    if (!held)
        return lkv_fail(LKV_OUT_OF_MEMORY, "move_kept: out of host memory for %llu bytes",
                        (unsigned long long)a->held);
    pass(a, held, 0);
    pass(a, held, 1);
    free(held);
    return LKV_OK;
}
