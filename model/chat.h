/* What the tokenizer keeps of tokenizer.chat_template: whether it is ChatML
 * and the default system message it writes when the chat has none. */
#ifndef LKV_CHAT_H
#define LKV_CHAT_H

#include <stddef.h>

#include "lazykv.h"
#include "tokenizer.h"

typedef enum lkv_chat_default {
    LKV_CHAT_NO_DEFAULT = 0, /* the template writes no system turn of its own */
    LKV_CHAT_DEFAULT,        /* it writes `default_system` */
    LKV_CHAT_DEFAULT_UNREAD  /* it writes one that is not a plain string literal */
} lkv_chat_default;

typedef struct lkv_chat_template {
    int present;          /* the model has a tokenizer.chat_template */
    int chatml;           /* it renders <|im_start|>role\n...<|im_end|>\n turns */
    lkv_chat_default has_default;
    char *default_system; /* malloc'd, with has_default == LKV_CHAT_DEFAULT */
} lkv_chat_template;

/* Reads a template's text; any text parses (another format is only
 * recorded as not ChatML). OUT_OF_MEMORY is the only failure. */
lkv_status lkv_chat_template_parse(const char *text, size_t len, lkv_chat_template *out);
/* The same, counting in *out_work the bytes it looked at: linear in len
 * whatever the template holds (the tests hold it to that). */
lkv_status lkv_chat_template_parse_counted(const char *text, size_t len,
                                           lkv_chat_template *out, size_t *out_work);
void lkv_chat_template_free(lkv_chat_template *t);

/* The tokenizer's template (tokenizer.c). */
const lkv_chat_template *lkv_tokenizer_chat_template(const lkv_tokenizer *tok);

#endif
