/* Text read from a model file (keys, tensor names, token texts, merges, the
 * model's name) is arbitrary bytes: a corrupt or hostile file can put
 * terminal escape sequences or invalid UTF-8 there. Anything such a string
 * contributes to a message or a display name goes through this first. */
#ifndef LKV_TEXT_ESCAPE_H
#define LKV_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* Room for a quoted string in a message: about 60 plain characters. */
#define LKV_ESCAPE_CAP 68

/* Writes into buf (cap >= 8 bytes, NUL-terminated) the first bytes of
 * p[0 .. len): printable ASCII as itself, every other byte and the backslash
 * as \xNN, and "..." after the last byte shown when not all of them fit.
 * Returns buf, so a call can sit in a printf argument list. */
const char *lkv_text_escape(const char *p, uint64_t len, char *buf, size_t cap);

#endif
