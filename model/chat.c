/* ChatML rendering for one user turn, as tokenizer.chat_template writes it:
 *   <|im_start|>system\n{system}<|im_end|>\n      (given, or the template's default)
 *   <|im_start|>user\n{user}<|im_end|>\n
 *   <|im_start|>assistant\n                      (add_generation_prompt)
 * The template is not run: the default system message is read out of it, so
 * what the model was trained with is not copied into this code. */
#include "chat.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

#define IM_START "<|im_start|>"
#define IM_END "<|im_end|>"
#define SYSTEM_HEAD IM_START "system"

static const char *find(const char *hay, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; p && (size_t)(end - p) >= n; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* Whether pos is inside a {{ }} or {% %} tag, and if so the quote that
 * opens the string literal pos is in (0 when it is in none). */
static int literal_quote(const char *text, const char *pos, int *out_in_tag)
{
    int in_tag = 0;
    char quote = 0;
    for (const char *p = text; p < pos; p++) {
        if (!in_tag) {
            if (p[0] == '{' && p + 1 < pos && (p[1] == '{' || p[1] == '%'))
                in_tag = 1, p++;
        } else if (quote) {
            if (*p == '\\' && p + 1 < pos)
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if ((p[0] == '}' || p[0] == '%') && p + 1 < pos && p[1] == '}') {
            in_tag = 0, p++;
        }
    }
    *out_in_tag = in_tag;
    return quote;
}

static char unescape(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    default: return c; /* \\ \' \" */
    }
}

/* Copies [p, e) into out, undoing a string literal's escapes when quote is
 * set; 0 when the text is not a plain constant (the literal ends, or a tag
 * starts, before <|im_end|>). */
static int copy_constant(const char *p, const char *e, char quote, char *out)
{
    size_t n = 0;
    for (; p < e; p++) {
        if (quote && *p == '\\' && p + 1 < e) {
            out[n++] = unescape(*++p);
        } else if (quote && *p == quote) {
            return 0;
        } else if (!quote && *p == '{' && p + 1 < e && (p[1] == '{' || p[1] == '%')) {
            return 0;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return 1;
}

/* The system message of the system turn written at `head`, when it is a
 * constant: *out is malloc'd, or NULL when the text is computed. */
static lkv_status read_constant_turn(const char *text, const char *end, const char *head,
                                     char **out)
{
    *out = NULL;
    int in_tag;
    char quote = (char)literal_quote(text, head, &in_tag);
    if (in_tag && !quote)
        return LKV_OK;
    const char *p = head + strlen(SYSTEM_HEAD);
    if (p < end && *p == '\n')
        p++;
    else if (quote && end - p >= 2 && p[0] == '\\' && p[1] == 'n')
        p += 2;
    else
        return LKV_OK;
    const char *e = find(p, end, IM_END);
    if (!e)
        return LKV_OK;
    char *s = malloc((size_t)(e - p) + 1);
    if (!s)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for the chat template's system message");
    if (copy_constant(p, e, quote, s))
        *out = s;
    else
        free(s);
    return LKV_OK;
}

/* A template may write the system turn twice, once from a given system
 * message and once with its default (Qwen2's does): the default is the
 * one whose text is a constant. */
static lkv_status read_default(const char *text, const char *end, lkv_chat_template *t)
{
    t->has_default = LKV_CHAT_NO_DEFAULT;
    for (const char *head = find(text, end, SYSTEM_HEAD); head;
         head = find(head + 1, end, SYSTEM_HEAD)) {
        t->has_default = LKV_CHAT_DEFAULT_UNREAD;
        lkv_status st = read_constant_turn(text, end, head, &t->default_system);
        if (st != LKV_OK)
            return st;
        if (t->default_system) {
            t->has_default = LKV_CHAT_DEFAULT;
            return LKV_OK;
        }
    }
    return LKV_OK;
}

lkv_status lkv_chat_template_parse(const char *text, size_t len, lkv_chat_template *out)
{
    lkv_chat_template t = {1, 0, LKV_CHAT_NO_DEFAULT, NULL};
    const char *end = text + len;
    t.chatml = find(text, end, IM_START) != NULL;
    if (t.chatml) {
        lkv_status st = read_default(text, end, &t);
        if (st != LKV_OK)
            return st;
    }
    *out = t;
    return LKV_OK;
}

void lkv_chat_template_free(lkv_chat_template *t)
{
    free(t->default_system);
    t->default_system = NULL;
}

static char *append(char *at, const char *s)
{
    size_t n = strlen(s);
    memcpy(at, s, n);
    return at + n;
}

static lkv_status pick_system(const lkv_chat_template *t, const char *system,
                              const char **out_system)
{
    if (!t->present)
        return lkv_fail(LKV_UNSUPPORTED, "the model has no tokenizer.chat_template to render");
    if (!t->chatml)
        return lkv_fail(LKV_UNSUPPORTED,
                        "tokenizer.chat_template is not ChatML (it never writes '" IM_START
                        "'): only ChatML templates are rendered");
    if (!system && t->has_default == LKV_CHAT_DEFAULT_UNREAD)
        return lkv_fail(LKV_UNSUPPORTED,
                        "tokenizer.chat_template writes a default system message that is not a "
                        "plain string: pass a system message");
    *out_system = system ? system : t->default_system;
    return LKV_OK;
}

lkv_status lkv_chat_render(const lkv_tokenizer *tok, const char *system, const char *user,
                           char **out_text)
{
    lkv_clear_error();
    if (!tok || !user || !out_text)
        return lkv_fail(LKV_INVALID_ARGUMENT, "chat render: %s is NULL",
                        !tok ? "the tokenizer" : !user ? "the user message" : "out_text");
    const char *sys = NULL;
    lkv_status st = pick_system(lkv_tokenizer_chat_template(tok), system, &sys);
    if (st != LKV_OK)
        return st;
    static const char sys_head[] = IM_START "system\n", user_head[] = IM_START "user\n",
                      turn_end[] = IM_END "\n", reply_head[] = IM_START "assistant\n";
    size_t len = strlen(user) + 2 * strlen(turn_end) + strlen(user_head) + strlen(reply_head);
    if (sys)
        len += strlen(sys_head) + strlen(sys);
    char *text = malloc(len + 1);
    if (!text)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for a chat of %zu bytes", len);
    char *at = text;
    if (sys) {
        at = append(at, sys_head);
        at = append(at, sys);
        at = append(at, turn_end);
    }
    at = append(at, user_head);
    at = append(at, user);
    at = append(at, turn_end);
    at = append(at, reply_head);
    *at = '\0';
    *out_text = text;
    return LKV_OK;
}
