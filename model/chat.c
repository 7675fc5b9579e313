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

/* The template is read in one pass from left to right: a lexer that knows
 * whether it is inside a {{ }} / {% %} tag and inside which string literal,
 * and cursors that only move forward. A template can hold any number of
 * system heads (a hostile one, tens of thousands), so nothing here may go
 * back to the start or rescan a stretch once per head. */
typedef struct scan {
    const char *text, *end;
    const char *at; /* the lexer has read [text, at) */
    int in_tag;
    char quote;           /* the literal `at` is in, 0 when in none */
    const char *next_end; /* the first <|im_end|> at or after the last head, or NULL */
    const char *fail_at;  /* where the last rejected turn's constant was cut short */
    char fail_quote;      /* and the literal it was in */
    size_t work;          /* bytes looked at, for the linear-time test */
} scan;

static const char *find(scan *s, const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; (size_t)(s->end - p) >= n; p++, s->work++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* Moves the lexer to `pos` (never backwards). pos starts a system head
 * ('<'), so no tag mark or escape straddles it. */
static void lex_to(scan *s, const char *pos)
{
    const char *p = s->at;
    for (; p < pos; p++, s->work++) {
        if (!s->in_tag) {
            if (p[0] == '{' && p + 1 < pos && (p[1] == '{' || p[1] == '%'))
                s->in_tag = 1, p++;
        } else if (s->quote) {
            if (*p == '\\' && p + 1 < pos)
                p++;
            else if (*p == s->quote)
                s->quote = 0;
        } else if (*p == '\'' || *p == '"') {
            s->quote = *p;
        } else if ((p[0] == '}' || p[0] == '%') && p + 1 < pos && p[1] == '}') {
            s->in_tag = 0, p++;
        }
    }
    s->at = p > pos ? p : pos;
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

/* Length of [p, e) as a constant (a literal's escapes undone when quote is
 * set), or -1 when it is not one: the literal ends, or a tag starts, before
 * <|im_end|>; then *cut is where. With out, the constant is written there. */
static long constant_text(scan *s, const char *p, const char *e, char quote, char *out,
                          const char **cut)
{
    long n = 0;
    for (; p < e; p++, n++, s->work++) {
        char c = *p;
        if (quote && c == '\\' && p + 1 < e) {
            c = unescape(*++p);
        } else if ((quote && c == quote) ||
                   (!quote && c == '{' && p + 1 < e && (p[1] == '{' || p[1] == '%'))) {
            *cut = p;
            return -1;
        }
        if (out)
            out[n] = c;
    }
    if (out)
        out[n] = '\0';
    return n;
}

/* The system message of the system turn written at `head`, when it is a
 * constant: *out is malloc'd, or NULL when the text is computed. */
static lkv_status read_constant_turn(scan *s, const char *head, char **out)
{
    *out = NULL;
    lex_to(s, head);
    char quote = s->quote;
    if (s->in_tag && !quote)
        return LKV_OK;
    const char *p = head + strlen(SYSTEM_HEAD);
    if (p < s->end && *p == '\n')
        p++;
    else if (quote && s->end - p >= 2 && p[0] == '\\' && p[1] == 'n')
        p += 2;
    else
        return LKV_OK;
    if (s->next_end && s->next_end < p)
        s->next_end = find(s, p, IM_END);
    const char *e = s->next_end, *cut = NULL;
    /* The constant of an earlier head in the same stretch was cut at
     * fail_at, before an <|im_end|> at or past this one's: so is this. */
    if (!e || (s->fail_at && p < s->fail_at && quote == s->fail_quote))
        return LKV_OK;
    long n = constant_text(s, p, e, quote, NULL, &cut);
    if (n < 0) {
        s->fail_at = cut;
        s->fail_quote = quote;
        return LKV_OK;
    }
    char *text = malloc((size_t)n + 1);
    if (!text)
        return lkv_fail(LKV_OUT_OF_MEMORY, "no memory for the chat template's system message");
    constant_text(s, p, e, quote, text, &cut);
    *out = text;
    return LKV_OK;
}

/* A template may write the system turn twice, once from a given system
 * message and once with its default (Qwen2's does): the default is the
 * one whose text is a constant. */
static lkv_status read_default(scan *s, lkv_chat_template *t)
{
    t->has_default = LKV_CHAT_NO_DEFAULT;
    s->next_end = s->text; /* found at the first head */
    for (const char *head = find(s, s->text, SYSTEM_HEAD); head;
         head = find(s, head + 1, SYSTEM_HEAD)) {
        t->has_default = LKV_CHAT_DEFAULT_UNREAD;
        lkv_status st = read_constant_turn(s, head, &t->default_system);
        if (st != LKV_OK)
            return st;
        if (t->default_system) {
            t->has_default = LKV_CHAT_DEFAULT;
            return LKV_OK;
        }
    }
    return LKV_OK;
}

lkv_status lkv_chat_template_parse_counted(const char *text, size_t len,
                                           lkv_chat_template *out, size_t *out_work)
{
    lkv_chat_template t = {1, 0, LKV_CHAT_NO_DEFAULT, NULL};
    scan s = {.text = text, .end = text + len, .at = text};
    t.chatml = find(&s, text, IM_START) != NULL;
    lkv_status st = t.chatml ? read_default(&s, &t) : LKV_OK;
    if (out_work)
        *out_work = s.work;
    if (st != LKV_OK)
        return st;
    *out = t;
    return LKV_OK;
}

lkv_status lkv_chat_template_parse(const char *text, size_t len, lkv_chat_template *out)
{
    return lkv_chat_template_parse_counted(text, len, out, NULL);
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
