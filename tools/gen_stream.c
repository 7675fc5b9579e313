/* Generated text goes out token by token, but a token's piece may end inside
 * a UTF-8 character whose last bytes come with the next token: a terminal
 * would show a replacement character, so those bytes wait. */
#include <string.h>

#include "gen.h"

/* Length of the prefix of b[0..len) that ends on a character boundary: all of
 * it unless its last bytes are the start of a character not yet complete. */
static size_t complete_prefix(const unsigned char *b, size_t len)
{
    for (size_t k = 1; k <= 3 && k <= len; k++) {
        unsigned char c = b[len - k];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back for its lead */
        size_t need = c >= 0xF8 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > k ? len - k : len;
    }
    return len; /* stray continuation bytes: nothing to wait for */
}

void gen_stream_init(gen_stream *s, FILE *f)
{
    s->f = f;
    s->n_held = 0;
    s->last = -1;
}

static void emit(gen_stream *s, const char *bytes, size_t n)
{
    if (n == 0)
        return;
    fwrite(bytes, 1, n, s->f);
    s->last = (unsigned char)bytes[n - 1];
}

void gen_stream_put(gen_stream *s, const char *bytes, size_t n)
{
    if (n >= 4) {
        /* the boundary to find lies within `bytes`: what is held goes first */
        emit(s, s->held, s->n_held);
        size_t cut = complete_prefix((const unsigned char *)bytes, n);
        emit(s, bytes, cut);
        s->n_held = n - cut;
        memcpy(s->held, bytes + cut, s->n_held);
    } else {
        char tmp[8];
        memcpy(tmp, s->held, s->n_held);
        memcpy(tmp + s->n_held, bytes, n);
        size_t len = s->n_held + n, cut = complete_prefix((const unsigned char *)tmp, len);
        emit(s, tmp, cut);
        s->n_held = len - cut;
        memcpy(s->held, tmp + cut, s->n_held);
    }
    fflush(s->f);
}

void gen_stream_finish(gen_stream *s)
{
    emit(s, s->held, s->n_held);
    s->n_held = 0;
    fflush(s->f);
}
