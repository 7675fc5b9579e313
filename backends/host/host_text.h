/* Words every GPU backend writes the same way: a failed driver call's
 * message, UUIDs and PCI addresses, and appending to a fixed buffer. Plain
 * C with no vendor header. */
#ifndef LKV_HOST_TEXT_H
#define LKV_HOST_TEXT_H

#include <stddef.h>

#include "lazykv.h"

/* Appends `text` to the NUL-terminated string in buf (cap bytes), after
 * `sep` when buf is not empty, truncating rather than overrunning. */
void lkv_host_append(char *buf, size_t cap, const char *sep, const char *text);

/* A driver's error code in words: "CUDA_ERROR_UNKNOWN (unknown error)",
 * "NAME" without a text, "error 999 (text)" or "error 999" when the driver
 * cannot name it. `name` and `text` may be NULL. */
void lkv_host_error_text(int code, const char *name, const char *text, char *buf, size_t len);

/* The one shape of a failed driver call, for every GPU backend:
 * "<backend>: <what>: <error text as above>", failed with status `st`.
 * Returns `st`. */
lkv_status lkv_host_call_failed(lkv_status st, const char *backend, const char *what, int code,
                                const char *name, const char *text);

/* 16 UUID bytes as 8-4-4-4-12 lowercase hex; all zero bytes (a driver that
 * has no UUID for the device) give "". `len` should be at least 37. */
void lkv_host_uuid_text(const unsigned char bytes[16], char *buf, size_t len);

/* A PCI address as a driver writes it ("0000:65:00.0", "00000000:65:00.0")
 * in the one form reports use, "dddd:bb:dd.f"; "" when `raw` is not one. */
void lkv_host_pci_text(const char *raw, char *buf, size_t len);

#endif /* LKV_HOST_TEXT_H */
