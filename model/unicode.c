#include "unicode.h"

static int cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t lkv_utf8_decode(const unsigned char *s, size_t n, uint32_t *out_cp)
{
    unsigned char c = s[0];
    *out_cp = LKV_UNICODE_INVALID;
    if (c < 0x80) {
        *out_cp = c;
        return 1;
    }
    size_t len;
    uint32_t cp;
    uint32_t min;
    if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0Fu, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07u, min = 0x10000;
    } else {
        return 1;
    }
    if (n < len) {
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if (!cont(s[i])) {
            return 1;
        }
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 1;
    }
    *out_cp = cp;
    return len;
}

size_t lkv_utf8_encode(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
        return 0;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (unsigned char)(0xF0 | (cp >> 18));
        out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

static int in_ranges(const lkv_unicode_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first) {
            hi = mid;
        } else if (cp > r[mid].last) {
            lo = mid + 1;
        } else {
            return 1;
        }
    }
    return 0;
}

static lkv_unicode_class classify_ascii(uint32_t cp)
{
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
        return LKV_UCLASS_LETTER;
    }
    if (cp >= '0' && cp <= '9') {
        return LKV_UCLASS_NUMBER;
    }
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) {
        return LKV_UCLASS_SPACE;
    }
    return LKV_UCLASS_OTHER;
}

lkv_unicode_class lkv_unicode_classify(uint32_t cp)
{
    if (cp < 0x80) {
        return classify_ascii(cp); /* most text: skip the searches */
    }
    if (cp == LKV_UNICODE_INVALID) {
        return LKV_UCLASS_OTHER;
    }
    if (in_ranges(lkv_unicode_letters, lkv_unicode_letters_count, cp)) {
        return LKV_UCLASS_LETTER;
    }
    if (in_ranges(lkv_unicode_numbers, lkv_unicode_numbers_count, cp)) {
        return LKV_UCLASS_NUMBER;
    }
    if (in_ranges(lkv_unicode_spaces, lkv_unicode_spaces_count, cp)) {
        return LKV_UCLASS_SPACE;
    }
    return LKV_UCLASS_OTHER;
}

/* Bytes GPT-2 keeps as themselves: printable ASCII and printable Latin-1
 * (but the soft hyphen 0xAD). */
static int byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t lkv_byte_to_unicode(uint8_t byte)
{
    if (byte_is_printable(byte)) {
        return byte;
    }
    /* The others take U+0100 onward in byte order. */
    uint32_t n = 0;
    for (unsigned b = 0; b < byte; b++) {
        n += !byte_is_printable(b);
    }
    return 0x100 + n;
}

int lkv_unicode_to_byte(uint32_t cp)
{
    if (cp < 0x100) {
        return byte_is_printable(cp) ? (int)cp : -1;
    }
    uint32_t n = 0;
    for (unsigned b = 0; b < 0x100; b++) {
        if (!byte_is_printable(b)) {
            if (0x100 + n == cp) {
                return (int)b;
            }
            n++;
        }
    }
    return -1;
}
