#include "gguf_cursor.h"

#include "error.h"

lkv_status lkv_gguf_cur_need(const lkv_gguf_cursor *c, uint64_t n, const char *what)
{
    if (n <= lkv_gguf_cur_left(c))
        return LKV_OK;
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "%s at byte %llu needs %llu bytes but only %llu are left in the file "
                    "(%llu bytes): truncated or corrupt",
                    what, (unsigned long long)c->pos, (unsigned long long)n,
                    (unsigned long long)lkv_gguf_cur_left(c), (unsigned long long)c->size);
}

lkv_status lkv_gguf_cur_take(lkv_gguf_cursor *c, uint64_t n, const char *what,
                             const uint8_t **out)
{
    lkv_status st = lkv_gguf_cur_need(c, n, what);
    if (st != LKV_OK)
        return st;
    *out = c->base + c->pos;
    c->pos += n;
    return LKV_OK;
}

lkv_status lkv_gguf_cur_u32(lkv_gguf_cursor *c, const char *what, uint32_t *out)
{
    const uint8_t *p;
    lkv_status st = lkv_gguf_cur_take(c, 4, what, &p);
    if (st == LKV_OK)
        *out = lkv_le32(p);
    return st;
}

lkv_status lkv_gguf_cur_u64(lkv_gguf_cursor *c, const char *what, uint64_t *out)
{
    const uint8_t *p;
    lkv_status st = lkv_gguf_cur_take(c, 8, what, &p);
    if (st == LKV_OK)
        *out = lkv_le64(p);
    return st;
}

lkv_status lkv_gguf_cur_str(lkv_gguf_cursor *c, const char *what, lkv_gguf_str *out)
{
    uint64_t start = c->pos, len;
    lkv_status st = lkv_gguf_cur_u64(c, what, &len);
    if (st != LKV_OK)
        return st;
    if (len > lkv_gguf_cur_left(c)) {
        c->pos = start;
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "%s at byte %llu: length %llu exceeds the %llu bytes left in the file "
                        "(%llu bytes)",
                        what, (unsigned long long)start, (unsigned long long)len,
                        (unsigned long long)(c->size - start - 8), (unsigned long long)c->size);
    }
    out->ptr = (const char *)(c->base + c->pos);
    out->len = len;
    c->pos += len;
    return LKV_OK;
}
