/* The tokenizer's encode and the chat rendering, on a toy byte-level BPE
 * vocabulary made in code (fuzz_util.c), so the harness needs no model.
 *
 * Input: one selector byte, then pieces separated by NUL bytes.
 *   mode 0 (sel % 3): encode the rest as text (parse_special = sel bit 2)
 *     and check that the pieces of the ids give the text back;
 *   mode 1: render a chat of system \0 user with the default template
 *     (no system piece: the template's default), then encode it;
 *   mode 2: template \0 system \0 user: a tokenizer with that
 *     tokenizer.chat_template, then as mode 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "fuzz_util.h"

static lkv_tokenizer *chatml;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fz_toy_tokenizer(fz_chatml_template, strlen(fz_chatml_template), &chatml) != LKV_OK) {
        fprintf(stderr, "fuzz_tokenizer: toy tokenizer: %s\n", lkv_last_error());
        abort();
    }
    return 0;
}

/* Encodes text and joins the ids' pieces (specials shown): byte-level BPE
 * loses nothing, so the join is the text whenever the encode succeeds. */
static void encode_round_trip(const lkv_tokenizer *tok, const char *text, size_t len,
                              int parse_special)
{
    int32_t *ids = NULL, n = -1;
    if (lkv_tokenizer_encode(tok, text, len, parse_special, &ids, &n) != LKV_OK)
        return;
    char *joined = malloc(len + 1);
    size_t at = 0;
    int same = joined != NULL;
    for (int32_t i = 0; i < n && same; i++) {
        char piece[64];
        size_t plen = 0;
        if (lkv_tokenizer_piece(tok, ids[i], 1, piece, sizeof piece, &plen) != LKV_OK ||
            plen > sizeof piece || at + plen > len) {
            same = 0;
            break;
        }
        memcpy(joined + at, piece, plen);
        at += plen;
        (void)lkv_tokenizer_is_end(tok, ids[i]);
        (void)lkv_tokenizer_piece(tok, ids[i], 0, piece, 1, &plen);
    }
    if (!same || at != len || (len && memcmp(joined, text, len) != 0)) {
        fprintf(stderr, "fuzz_tokenizer: %d ids do not give the %zu bytes of text back\n", n, len);
        abort();
    }
    free(joined);
    free(ids);
}

static void render_and_encode(const lkv_tokenizer *tok, const char *system, const char *user)
{
    char *text = NULL;
    if (lkv_chat_render(tok, system, user, &text) != LKV_OK)
        return;
    encode_round_trip(tok, text, strlen(text), 1);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++;
    size--;
    char *part[3] = {NULL, NULL, NULL};
    switch (sel % 3) {
    case 0:
        encode_round_trip(chatml, (const char *)data, size, (sel >> 2) & 1);
        break;
    case 1: {
        int n = fz_split(data, size, part, 2);
        render_and_encode(chatml, n == 2 ? part[0] : NULL, part[n - 1]);
        break;
    }
    default: {
        int n = fz_split(data, size, part, 3);
        lkv_tokenizer *tok = NULL;
        if (fz_toy_tokenizer(part[0], strlen(part[0]), &tok) == LKV_OK) {
            const lkv_chat_template *t = lkv_tokenizer_chat_template(tok);
            if (t->has_default == LKV_CHAT_DEFAULT && !t->default_system)
                abort();
            render_and_encode(tok, n == 3 ? part[1] : NULL, n >= 2 ? part[n - 1] : "");
            lkv_tokenizer_free(tok);
        }
        break;
    }
    }
    for (int i = 0; i < 3; i++)
        free(part[i]);
    return 0;
}
