/* The prompts of an eval: token ids given directly (models without a
 * tokenizer), or JSONL records (GSM8K and the like) rendered with the chat
 * template. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "eval.h"
#include "json.h"

void lkv_eval_prompts_free(lkv_eval_prompts *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->count; i++) {
        free(p->items[i].ids);
        free(p->items[i].question);
    }
    free(p->items);
    p->items = NULL;
    p->count = 0;
}

static lkv_status grow(lkv_eval_prompts *p, int *cap)
{
    if (p->count < *cap)
        return LKV_OK;
    int n = *cap ? *cap * 2 : 4;
    lkv_eval_prompt *items = realloc(p->items, sizeof *items * (size_t)n);
    if (!items)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for %d prompts", n);
    p->items = items;
    *cap = n;
    return LKV_OK;
}

/* One prompt: ids separated by ',' (spaces allowed), in [begin, end). */
static lkv_status parse_ids(const char *begin, const char *end, int index, lkv_eval_prompt *out)
{
    const char *first = begin;
    while (first < end && isspace((unsigned char)*first))
        first++;
    if (first == end)
        return lkv_fail(LKV_INVALID_ARGUMENT, "--prompt-ids prompt %d is empty", index + 1);
    int32_t n = 1;
    for (const char *c = begin; c < end; c++)
        n += *c == ',';
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    if (!ids)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for prompt %d", index + 1);
    int32_t k = 0;
    for (const char *c = begin; c <= end && k < n; k++) {
        while (c < end && isspace((unsigned char)*c))
            c++;
        char *stop = NULL;
        errno = 0;
        long v = c < end && isdigit((unsigned char)*c) ? strtol(c, &stop, 10) : -1;
        if (v >= 0)
            while (stop < end && isspace((unsigned char)*stop))
                stop++;
        if (v < 0 || errno || v > INT32_MAX || (stop != end && *stop != ',')) {
            const char *to = c;
            while (to < end && *to != ',')
                to++;
            free(ids);
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "--prompt-ids prompt %d, id %d: '%.*s' is not a token id (an "
                            "integer >= 0)", index + 1, k + 1, (int)(to - c), c);
        }
        ids[k] = (int32_t)v;
        c = stop + 1;
    }
    *out = (lkv_eval_prompt){.ids = ids, .n_ids = n};
    return LKV_OK;
}

lkv_status lkv_eval_prompts_from_ids(const char *text, lkv_eval_prompts *out)
{
    lkv_eval_prompts p = {0};
    int cap = 0;
    lkv_status st = LKV_OK;
    for (const char *c = text; st == LKV_OK;) {
        const char *end = c + strcspn(c, ";");
        if ((st = grow(&p, &cap)) == LKV_OK &&
            (st = parse_ids(c, end, p.count, &p.items[p.count])) == LKV_OK)
            p.count++;
        if (!*end)
            break;
        c = end + 1;
    }
    if (st != LKV_OK) {
        lkv_eval_prompts_free(&p);
        return st;
    }
    *out = p;
    return LKV_OK;
}

/* The chat template around question + "\n" + instruction, encoded. */
static lkv_status encode_question(const lkv_tokenizer *tok, const char *question,
                                  const char *instruction, lkv_eval_prompt *out)
{
    size_t qn = strlen(question), in = instruction ? strlen(instruction) : 0;
    char *user = malloc(qn + in + 2);
    if (!user)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a prompt");
    memcpy(user, question, qn);
    user[qn] = '\0';
    if (in) {
        user[qn] = '\n';
        memcpy(user + qn + 1, instruction, in + 1);
    }
    char *text = NULL;
    lkv_status st = lkv_chat_render(tok, NULL, user, &text);
    free(user);
    if (st != LKV_OK)
        return st;
    st = lkv_tokenizer_encode(tok, text, strlen(text), 1, &out->ids, &out->n_ids);
    free(text);
    if (st == LKV_OK && !(out->question = strdup(question))) {
        free(out->ids);
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a prompt");
    }
    return st;
}

static lkv_status parse_record(const char *line, size_t len, int line_no, const lkv_tokenizer *tok,
                               const char *instruction, lkv_eval_prompt *out)
{
    lkv_json v;
    char err[160];
    if (lkv_json_parse(line, len, &v, err, sizeof err) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "--prompts line %d: %s", line_no, err);
    const lkv_json *q = v.type == LKV_JSON_OBJECT ? lkv_json_get(&v, "question") : NULL;
    const lkv_json *a = v.type == LKV_JSON_OBJECT ? lkv_json_get(&v, "answer") : NULL;
    lkv_status st = LKV_OK;
    memset(out, 0, sizeof *out);
    if (!q || q->type != LKV_JSON_STRING)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "--prompts line %d: no \"question\" string", line_no);
    else
        st = encode_question(tok, q->text, instruction, out);
    if (st == LKV_OK && a && a->type == LKV_JSON_STRING)
        lkv_eval_dataset_answer(a->text, out->answer, sizeof out->answer);
    lkv_json_free(&v);
    if (st != LKV_OK && lkv_last_error()[0] && !strstr(lkv_last_error(), "--prompts line"))
        lkv_fail_context(st, "--prompts line %d", line_no);
    return st;
}

lkv_status lkv_eval_prompts_from_jsonl(const char *text, int skip, int n,
                                       const lkv_tokenizer *tok, const char *instruction,
                                       lkv_eval_prompts *out)
{
    if (!tok)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "--prompts needs a model with a tokenizer; for this model give "
                        "--prompt-ids \"1,34,7;1,99\"");
    lkv_eval_prompts p = {0};
    int cap = 0, record = 0, line_no = 0;
    lkv_status st = LKV_OK;
    for (const char *c = text; *c && p.count < n && st == LKV_OK;) {
        size_t len = strcspn(c, "\n");
        line_no++;
        size_t k = 0;
        while (k < len && isspace((unsigned char)c[k]))
            k++;
        if (k < len && record++ >= skip && (st = grow(&p, &cap)) == LKV_OK &&
            (st = parse_record(c, len, line_no, tok, instruction, &p.items[p.count])) == LKV_OK)
            p.count++;
        c += len + (c[len] == '\n');
    }
    if (st == LKV_OK && p.count == 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "--prompts holds %d record(s): none left after "
                      "--skip %d", record, skip);
    if (st != LKV_OK) {
        lkv_eval_prompts_free(&p);
        return st;
    }
    *out = p;
    return LKV_OK;
}

lkv_status lkv_eval_prompts_check(const lkv_eval_prompts *p, int32_t vocab)
{
    if (p->count < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "no prompts to evaluate");
    for (int i = 0; i < p->count; i++) {
        if (p->items[i].n_ids < 1)
            return lkv_fail(LKV_INVALID_ARGUMENT, "prompt %d is empty", i + 1);
        for (int32_t k = 0; k < p->items[i].n_ids; k++)
            if (p->items[i].ids[k] < 0 || p->items[i].ids[k] >= vocab)
                return lkv_fail(LKV_INVALID_ARGUMENT,
                                "prompt %d, token %d: id %d is outside the vocabulary 0..%d",
                                i + 1, k + 1, p->items[i].ids[k], vocab - 1);
    }
    return LKV_OK;
}

lkv_status lkv_eval_prompts_fit(const lkv_eval_prompts *p, int32_t max_tokens, int32_t context)
{
    for (int i = 0; i < p->count; i++) {
        int64_t total = (int64_t)p->items[i].n_ids + max_tokens;
        if (p->items[i].n_ids >= context)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "prompt %d: %d prompt tokens leave no room in the model's context of "
                            "%d tokens", i + 1, p->items[i].n_ids, context);
        if (total > context)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "prompt %d: %d prompt tokens + --max-tokens %d = %lld exceeds the "
                            "model's context of %d tokens: lower --max-tokens to %d or less",
                            i + 1, p->items[i].n_ids, max_tokens, (long long)total, context,
                            context - p->items[i].n_ids);
    }
    return LKV_OK;
}
