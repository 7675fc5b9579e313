/* GSM8K questions and SmolLM2's chat format: prompts.h says what. */
#include "prompts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_utf8(char **at, unsigned cp)
{
    unsigned char *o = (unsigned char *)*at;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (unsigned char)(0xE0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    *at = (char *)o;
}

/* The JSON string value of "question" in `line`, unescaped (the escapes
 * GSM8K uses: \" \\ \/ \n \t and \uXXXX of the basic plane). NULL when the
 * line has none. The text grows by the instruction's room. */
static char *question_of(const char *line)
{
    const char *q = strstr(line, "\"question\"");
    if (!q || !(q = strchr(q + 10, ':')) || !(q = strchr(q, '"')))
        return NULL;
    q++;
    size_t room = strlen(q) * 3 + sizeof PROMPT_GSM8K_INSTRUCTION + 2;
    char *out = malloc(room), *at = out;
    if (!out)
        return NULL;
    for (; *q && *q != '"'; q++) {
        if (*q != '\\') {
            *at++ = *q;
            continue;
        }
        q++;
        unsigned cp = 0;
        switch (*q) {
        case 'n': *at++ = '\n'; break;
        case 't': *at++ = '\t'; break;
        case 'u':
            if (sscanf(q + 1, "%4x", &cp) != 1) {
                free(out);
                return NULL;
            }
            put_utf8(&at, cp);
            q += 4;
            break;
        case '\0': free(out); return NULL;
        default: *at++ = *q; break;
        }
    }
    if (*q != '"') {
        free(out);
        return NULL;
    }
    strcpy(at, "\n" PROMPT_GSM8K_INSTRUCTION);
    return out;
}

int prompts_read_gsm8k(const char *path, int skip, int count, char ***out, int *out_n,
                       char *err, size_t err_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "cannot open --gsm8k '%s'", path);
        return 1;
    }
    char **texts = calloc((size_t)count, sizeof *texts);
    char *line = NULL;
    size_t cap = 0;
    int n = 0, line_no = 0, bad = !texts;
    while (!bad && n < count && getline(&line, &cap, f) > 0) {
        if (line_no++ < skip)
            continue;
        if (!(texts[n] = question_of(line))) {
            snprintf(err, err_len, "%s line %d: no \"question\" string", path, line_no);
            bad = 1;
            break;
        }
        n++;
    }
    free(line);
    fclose(f);
    if (bad || n == 0) {
        if (!bad)
            snprintf(err, err_len, "%s has no question past line %d", path, skip);
        prompts_free(texts, n);
        return 1;
    }
    *out = texts;
    *out_n = n;
    return 0;
}

void prompts_free(char **texts, int n)
{
    for (int i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
}

/* The default system message a ChatML template writes when the chat has
 * none: the text of its literal "<|im_start|>system\n...<|im_end|>". */
static char *default_system(const char *tmpl)
{
    static const char head[] = "<|im_start|>system\\n", end[] = "<|im_end|>";
    const char *s = tmpl ? strstr(tmpl, head) : NULL;
    const char *e = s ? strstr(s + sizeof head - 1, end) : NULL;
    if (!e)
        return NULL;
    s += sizeof head - 1;
    char *out = malloc((size_t)(e - s) + 1);
    if (out) {
        memcpy(out, s, (size_t)(e - s));
        out[e - s] = '\0';
    }
    return out;
}

static int tokenize(const struct llama_model *model, const char *text, llama_token **out_ids,
                    int32_t *out_n, char *err, size_t err_len)
{
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int32_t len = (int32_t)strlen(text);
    int32_t n = -llama_tokenize(vocab, text, len, NULL, 0, false, true);
    llama_token *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
    if (!ids || llama_tokenize(vocab, text, len, ids, n, false, true) != n) {
        snprintf(err, err_len, "llama_tokenize failed on a prompt of %d bytes", len);
        free(ids);
        return 1;
    }
    *out_ids = ids;
    *out_n = n;
    return 0;
}

int prompts_encode_chat(const struct llama_model *model, const char *user, llama_token **out_ids,
                        int32_t *out_n, char *err, size_t err_len)
{
    const char *tmpl = llama_model_chat_template(model, NULL);
    if (!tmpl) {
        snprintf(err, err_len, "the model has no chat template");
        return 1;
    }
    char *sys = default_system(tmpl);
    struct llama_chat_message msgs[2] = {{"system", sys}, {"user", user}};
    int first = sys ? 0 : 1;
    int32_t need = llama_chat_apply_template(tmpl, msgs + first, (size_t)(2 - first), true, NULL, 0);
    char *text = need > 0 ? malloc((size_t)need + 1) : NULL;
    int bad = !text || llama_chat_apply_template(tmpl, msgs + first, (size_t)(2 - first), true,
                                                 text, need + 1) != need;
    if (bad) {
        snprintf(err, err_len, "llama_chat_apply_template cannot render the model's template");
    } else {
        text[need] = '\0';
        bad = tokenize(model, text, out_ids, out_n, err, err_len);
    }
    free(text);
    free(sys);
    return bad;
}
