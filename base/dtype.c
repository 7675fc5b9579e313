/* The storage types' names, sizes and ranges: the one table tools, reports
 * and the cache's input checks read. */
#include "dtype.h"

#include <float.h>

#include "error.h"

typedef struct dtype_info {
    const char *name;
    size_t size;
    float largest;
} dtype_info;

static const dtype_info infos[] = {
    [LKV_DTYPE_F32] = {"f32", 4, FLT_MAX},
    [LKV_DTYPE_F16] = {"f16", 2, 65504.0f},
    [LKV_DTYPE_BF16] = {"bf16", 2, 3.38953139e38f}, /* bits 0x7f7f0000 */
};
_Static_assert(sizeof infos / sizeof infos[0] == LKV_DTYPE_COUNT, "one row per lkv_dtype");

static const dtype_info *info(lkv_dtype dtype)
{
    if ((int)dtype < 0 || (size_t)dtype >= sizeof infos / sizeof infos[0])
        return NULL;
    return &infos[dtype];
}

const char *lkv_dtype_name(lkv_dtype dtype)
{
    const dtype_info *i = info(dtype);
    return i ? i->name : NULL;
}

size_t lkv_dtype_size(lkv_dtype dtype)
{
    const dtype_info *i = info(dtype);
    return i ? i->size : 0;
}

float lkv_dtype_largest(lkv_dtype dtype)
{
    const dtype_info *i = info(dtype);
    return i ? i->largest : 0.0f;
}

lkv_status lkv_dtype_check(lkv_dtype dtype, const char *backend, const char *op)
{
    if (info(dtype))
        return LKV_OK;
    return lkv_fail(LKV_INVALID_ARGUMENT, "%s %s: K/V dtype %d is not f32, f16 or bf16", backend,
                    op, (int)dtype);
}

lkv_status lkv_dtype_from_name(const char *name, lkv_dtype *out_dtype)
{
    if (!name || !out_dtype)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_dtype_from_name: %s is NULL",
                        name ? "out_dtype" : "name");
    for (size_t d = 0; d < sizeof infos / sizeof infos[0]; d++)
        if (!strcmp(name, infos[d].name)) {
            *out_dtype = (lkv_dtype)d;
            lkv_clear_error();
            return LKV_OK;
        }
    return lkv_fail(LKV_INVALID_ARGUMENT, "dtype '%s' is not one of f32, f16, bf16", name);
}
