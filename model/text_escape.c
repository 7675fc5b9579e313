#include "text_escape.h"

#define LKV_ELLIPSIS "..."

static int shown_as_is(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '\\'; }

const char *lkv_text_escape(const char *p, uint64_t len, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    /* What is left once the ellipsis and the NUL have their room. */
    size_t room = cap - sizeof LKV_ELLIPSIS, at = 0;
    uint64_t i = 0;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        size_t need = shown_as_is(c) ? 1 : 4;
        if (at + need > room)
            break;
        if (need == 1) {
            buf[at++] = (char)c;
        } else {
            buf[at++] = '\\';
            buf[at++] = 'x';
            buf[at++] = hex[c >> 4];
            buf[at++] = hex[c & 15];
        }
    }
    if (i < len)
        for (size_t k = 0; k < sizeof LKV_ELLIPSIS - 1; k++)
            buf[at++] = LKV_ELLIPSIS[k];
    buf[at] = '\0';
    return buf;
}
