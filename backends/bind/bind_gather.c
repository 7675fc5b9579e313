/* gather: dispatches of at most 2^31 words each over the span list, both
 * buffers bound whole (a plan's layer of K or V, or its scratch). The
 * lists' room and the pipeline are acquired first, so a failure moves
 * nothing. */
#include "error.h"
#include "bind_internal.h"

/* Spans per dispatch: the kernel's uint index covers n * words < 2^31. */
static int32_t spans_per_dispatch(int32_t words)
{
    return (int32_t)(((uint32_t)1 << 31) / (uint32_t)words);
}

static lkv_status check_fits(lkv_device *d, const lkv_buffer *b, const char *what)
{
    uint64_t size = lkv_bind_size(d, b), range = lkv_bind_lim(d)->max_range;
    if (size > range || size > ((uint64_t)1 << 34))
        return lkv_fail(LKV_UNSUPPORTED,
                        "%s gather: the %s buffer's %llu bytes exceed one binding (%llu bytes, "
                        "at most 16 GiB of 32-bit words): apply the plan per smaller buffer",
                        lkv_bind_name(d), what, (unsigned long long)size,
                        (unsigned long long)(range < ((uint64_t)1 << 34) ? range
                                                                         : ((uint64_t)1 << 34)));
    return LKV_OK;
}

lkv_status lkv_bind_gather(lkv_device *d, const lkv_gather_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    lkv_status st = check_fits(d, a->src, "source");
    if (st == LKV_OK)
        st = check_fits(d, a->dst, "destination");
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_gather);
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, a->n, 2);
    const int32_t *cols[2] = {(const int32_t *)(const void *)a->src_word,
                              (const int32_t *)(const void *)a->dst_word};
    int32_t most = spans_per_dispatch(a->words);
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n; first += len) {
        len = a->n - first < most ? a->n - first : most;
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 2, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_buf b[3] = {list, lkv_bind_whole(d, a->src), lkv_bind_whole(d, a->dst)};
        struct { uint32_t n, words; } push = {(uint32_t)len, (uint32_t)a->words};
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_gather, b, &push,
                               lkv_bind_groups(d, (int64_t)len * a->words, 1), 1, 1);
    }
    return st;
}
