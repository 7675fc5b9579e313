/* select, reference: a full sort per row by (score desc, slot asc), NaN last;
 * the simplest statement of the order, which GPU top-k kernels must match. */
#include <math.h>
#include <stdlib.h>

#include "cpu_internal.h"
#include "error.h"

typedef struct ranked {
    float score;
    int32_t slot;
} ranked;

static int by_rank(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    int na = isnan(a->score), nb = isnan(b->score);
    if (na != nb)
        return na - nb;
    if (!na && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->slot > b->slot) - (a->slot < b->slot);
}

static int by_slot(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

lkv_status lkv_cpu_select(lkv_device *dev, const lkv_select_args *a)
{
    (void)dev;
    ranked *tmp = malloc(sizeof *tmp * (size_t)(a->capacity ? a->capacity : 1));
    if (!tmp)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cpu select: no host memory for %d slots", a->capacity);
    for (int32_t r = 0; r < a->n_rows; r++) {
        int32_t row = a->rows[r], n = a->row_n[r], k = a->row_k[r];
        const float *s = lkv_cpu_row_f32(a->scores, a->capacity, row);
        int32_t *kept = lkv_cpu_row_i32(a->kept, a->capacity, row);
        for (int32_t i = 0; i < n; i++)
            tmp[i] = (ranked){s[i], i};
        qsort(tmp, (size_t)n, sizeof *tmp, by_rank);
        for (int32_t j = 0; j < k; j++)
            kept[j] = tmp[j].slot;
        qsort(kept, (size_t)k, sizeof *kept, by_slot);
    }
    free(tmp);
    return LKV_OK;
}
