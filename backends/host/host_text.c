/* The words the GPU backends share (host_text.h): a failed driver call's
 * message in one shape for every backend, UUIDs, PCI addresses, and
 * appending to a fixed buffer. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "host_text.h"

void lkv_host_append(char *buf, size_t cap, const char *sep, const char *text)
{
    size_t used = cap ? strnlen(buf, cap) : 0;
    if (used + 1 >= cap)
        return;
    snprintf(buf + used, cap - used, "%s%s", used ? sep : "", text);
}

void lkv_host_error_text(int code, const char *name, const char *text, char *buf, size_t len)
{
    char number[32];
    if (!name || !*name) {
        snprintf(number, sizeof number, "error %d", code);
        name = number;
    }
    if (text && *text)
        snprintf(buf, len, "%s (%s)", name, text);
    else
        snprintf(buf, len, "%s", name);
}

lkv_status lkv_host_call_failed(lkv_status st, const char *backend, const char *what, int code,
                                const char *name, const char *text)
{
    char words[256];
    lkv_host_error_text(code, name, text, words, sizeof words);
    return lkv_fail(st, "%s: %s: %s", backend, what, words);
}

void lkv_host_uuid_text(const unsigned char bytes[16], char *buf, size_t len)
{
    const unsigned char *b = bytes;
    int any = 0;
    for (int i = 0; i < 16; i++)
        any |= b[i];
    if (!any) {
        if (len)
            buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

void lkv_host_pci_text(const char *raw, char *buf, size_t len)
{
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    char end = 0;
    buf[0] = '\0';
    /* Hex digits and separators only: sscanf's %x would take "0x" too. */
    if (raw && strspn(raw, "0123456789abcdefABCDEF:.") == strlen(raw) &&
        sscanf(raw, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &end) == 4 && bus < 256 &&
        dev < 32 && fn < 8)
        snprintf(buf, len, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
}
