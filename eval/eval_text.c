/* Decoding for the answer check: what a reader of the output would see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval_text.h"

lkv_status lkv_eval_decode(const lkv_tokenizer *tok, const int32_t *ids, int32_t n,
                           char **out_text)
{
    size_t cap = 256, len = 0;
    char *text = malloc(cap);
    if (!text)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory decoding %d tokens", n);
    for (int32_t i = 0; i < n; i++) {
        size_t piece = 0;
        lkv_status st = lkv_tokenizer_piece(tok, ids[i], 0, text + len, cap - len - 1, &piece);
        if (st == LKV_OK && len + piece + 1 > cap) {
            size_t grown = (len + piece + 1) * 2;
            char *t = realloc(text, grown);
            if (!t) {
                free(text);
                return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory decoding %d tokens", n);
            }
            text = t;
            cap = grown;
            st = lkv_tokenizer_piece(tok, ids[i], 0, text + len, cap - len - 1, &piece);
        }
        if (st != LKV_OK) {
            free(text);
            return st;
        }
        len += piece;
    }
    text[len] = '\0';
    *out_text = text;
    return LKV_OK;
}

void lkv_eval_final_answer(const char *text, const int32_t *ids, int32_t n, char *out,
                           size_t cap)
{
    if (text)
        lkv_eval_last_number(text, out, cap);
    else if (n > 0)
        snprintf(out, cap, "%d", ids[n - 1]);
    else if (cap)
        out[0] = '\0';
}
