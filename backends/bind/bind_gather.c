/* gather: the sources into the device's kept scratch (compact's), then the
 * scratch to the destinations, in dispatches of at most 2^31 words each;
 * dispatches run in order, each seeing the writes before it, so moves in
 * place cannot race. The scratch, the lists' room and the pipeline are
 * acquired first, so a failure moves nothing. */
#include <stdlib.h>

#include "error.h"
#include "bind_internal.h"

/* Spans per dispatch: the kernel's uint index covers n * words < 2^31. */
static int32_t spans_per_dispatch(int32_t words)
{
    return (int32_t)(((uint32_t)1 << 31) / (uint32_t)words);
}

/* One pass: span i from word from[i] of `src` to word to[i] of `dst`. */
static lkv_status pass(lkv_device *d, const lkv_gather_args *a, const int32_t *from,
                       const int32_t *to, const lkv_buffer *src, const lkv_buffer *dst)
{
    const int32_t *cols[2] = {from, to};
    int32_t most = spans_per_dispatch(a->words);
    lkv_status st = LKV_OK;
    for (int32_t first = 0, len = 0; st == LKV_OK && first < a->n; first += len) {
        len = a->n - first < most ? a->n - first : most;
        lkv_bind_buf list;
        st = lkv_bind_put_list(d, cols, 2, first, len, &list);
        if (st != LKV_OK)
            break;
        lkv_bind_buf b[3] = {list, lkv_bind_whole(d, src), lkv_bind_whole(d, dst)};
        struct { uint32_t n, words; } push = {(uint32_t)len, (uint32_t)a->words};
        st = lkv_bind_dispatch(d, LKV_BIND_PIPE_gather, b, &push,
                               lkv_bind_groups(d, (int64_t)len * a->words, 1), 1, 1);
    }
    return st;
}

lkv_status lkv_bind_gather(lkv_device *d, const lkv_gather_args *a)
{
    if (a->n <= 0 || a->words <= 0)
        return LKV_OK;
    uint64_t held_bytes = (uint64_t)a->n * (uint64_t)a->words * 4;
    lkv_status st = lkv_bind_check_fits(d, lkv_bind_size(d, a->buf), "gather", "buffer");
    if (st == LKV_OK)
        st = lkv_bind_check_fits(d, held_bytes, "gather", "scratch");
    int32_t *held = st == LKV_OK ? malloc(sizeof(int32_t) * (size_t)a->n) : NULL;
    if (st == LKV_OK && !held)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "%s gather: out of host memory for %d spans",
                      lkv_bind_name(d), a->n);
    for (int32_t i = 0; st == LKV_OK && i < a->n; i++)
        held[i] = (int32_t)((uint32_t)i * (uint32_t)a->words);
    lkv_buffer **scratch = &lkv_bind_of(d)->compact_scratch;
    if (st == LKV_OK)
        st = lkv_bind_reserve(d, scratch, (size_t)held_bytes);
    if (st == LKV_OK)
        st = lkv_bind_pipe_ready(d, LKV_BIND_PIPE_gather);
    if (st == LKV_OK)
        st = lkv_bind_list_room(d, 2 * a->n, 2);
    const int32_t *src = (const int32_t *)(const void *)a->src_word;
    const int32_t *dst = (const int32_t *)(const void *)a->dst_word;
    if (st == LKV_OK)
        st = pass(d, a, src, held, a->buf, *scratch);
    if (st == LKV_OK)
        st = pass(d, a, held, dst, *scratch, a->buf);
    free(held);
    return st;
}
