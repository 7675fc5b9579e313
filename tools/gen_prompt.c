/* The prompt of `lazykv generate` as token ids: raw text, one chat turn
 * through the model's template, a file, or ids written out (the only form a
 * model without a tokenizer, such as a llama2.c checkpoint, can take). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen.h"

static const char *const cmd = "generate";

static int which_source(const gen_prompt_spec *s, const char **out_flag)
{
    const char *given[4];
    int n = 0;
    if (s->text)
        given[n++] = "--prompt";
    if (s->chat)
        given[n++] = "--chat";
    if (s->file)
        given[n++] = "--prompt-file";
    if (s->ids)
        given[n++] = "--prompt-ids";
    if (n == 0)
        return cli_error(cmd, "no prompt: give one of --prompt, --chat, --prompt-file, "
                              "--prompt-ids (see --help)");
    if (n > 1)
        return cli_error(cmd, "%s and %s both given: the prompt comes from exactly one of "
                              "--prompt, --chat, --prompt-file, --prompt-ids",
                         given[0], given[1]);
    if (s->system && !s->chat)
        return cli_error(cmd, "--system goes with --chat (the system message of a chat turn), "
                              "not with %s", given[0]);
    *out_flag = given[0];
    return 0;
}

/* "1,2,3" (spaces allowed around the commas) into ids in 0 .. vocab - 1. */
static int parse_ids(const char *text, const lkv_model *m, int32_t **out_ids, int32_t *out_n)
{
    size_t cap = strlen(text) / 2 + 1;
    int32_t *ids = malloc(sizeof(int32_t) * cap), n = 0;
    if (!ids)
        return cli_error(cmd, "out of host memory for --prompt-ids");
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno) {
            free(ids);
            return cli_error(cmd, "--prompt-ids '%s' is not a comma-separated list of token ids "
                                  "(bad at '%.16s')", text, p);
        }
        if (v < 0 || v >= m->cfg.vocab) {
            free(ids);
            return cli_error(cmd, "--prompt-ids: token id %ld (number %d of the list) is out of "
                                  "range 0..%d for model '%s'",
                             v, (int)n + 1, (int)m->cfg.vocab - 1, m->name);
        }
        ids[n++] = (int32_t)v;
        for (p = end; isspace((unsigned char)*p);)
            p++;
        if (*p == '\0')
            break;
        if (*p != ',') {
            free(ids);
            return cli_error(cmd, "--prompt-ids '%s' is not a comma-separated list of token ids "
                                  "(bad at '%.16s')", text, p);
        }
        p++;
    }
    *out_ids = ids;
    *out_n = n;
    return 0;
}

/* tokenizer.ggml.add_bos_token: llama.cpp's rule for whether text starts with
 * BOS (SmolLM2 says no). */
static int adds_bos(const lkv_model *m, const lkv_tokenizer *tok)
{
    const lkv_gguf_value *v =
        m->gguf ? lkv_gguf_find(m->gguf, "tokenizer.ggml.add_bos_token") : NULL;
    return v && v->kind == LKV_GGUF_BOOL && v->as.u && lkv_tokenizer_bos(tok) >= 0;
}

static int encode(const char *flag, const char *text, const lkv_model *m,
                  const lkv_tokenizer *tok, int32_t **out_ids, int32_t *out_n)
{
    int32_t *ids = NULL, n = 0;
    lkv_status st = lkv_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n);
    if (st != LKV_OK)
        return cli_error(cmd, "%s: %s: %s", flag, lkv_status_name(st), lkv_last_error());
    int bos = adds_bos(m, tok);
    int32_t *all = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!all) {
        free(ids);
        return cli_error(cmd, "out of host memory for the prompt's %d tokens", (int)n);
    }
    if (bos)
        all[0] = lkv_tokenizer_bos(tok);
    if (n > 0)
        memcpy(all + bos, ids, sizeof(int32_t) * (size_t)n);
    free(ids);
    for (int32_t i = 0; i < n + bos; i++) {
        if (all[i] < 0 || all[i] >= m->cfg.vocab) {
            int32_t bad = all[i];
            free(all);
            return cli_error(cmd, "%s: the tokenizer gave id %d, outside the model's vocabulary "
                                  "0..%d: tokenizer and weights do not match",
                             flag, (int)bad, (int)m->cfg.vocab - 1);
        }
    }
    *out_ids = all;
    *out_n = n + bos;
    return 0;
}

static int text_of(const gen_prompt_spec *s, const char *flag, const lkv_tokenizer *tok,
                   char **out_text)
{
    if (s->chat) {
        lkv_status st = lkv_chat_render(tok, s->system, s->chat, out_text);
        return st == LKV_OK ? 0 : cli_error(cmd, "--chat: %s: %s", lkv_status_name(st),
                                            lkv_last_error());
    }
    *out_text = strdup(s->file ? s->file_text : s->text);
    return *out_text ? 0 : cli_error(cmd, "out of host memory for %s", flag);
}

int gen_prompt_check(const gen_prompt_spec *spec)
{
    const char *flag;
    return which_source(spec, &flag);
}

int gen_prompt_read_file(gen_prompt_spec *spec, char **out_buf)
{
    *out_buf = NULL;
    if (!spec->file)
        return 0;
    int rc = cli_read_text(cmd, spec->file, "a text prompt (--prompt-file takes text; token ids "
                                            "go in --prompt-ids)", out_buf);
    spec->file_text = *out_buf;
    return rc;
}

int gen_prompt_ids(const gen_prompt_spec *spec, const lkv_model *m, const lkv_tokenizer *tok,
                   int32_t **out_ids, int32_t *out_n, char **out_text)
{
    const char *flag = NULL;
    int rc = which_source(spec, &flag);
    if (rc)
        return rc;
    int32_t *ids = NULL, n = 0;
    char *text = NULL;
    if (spec->ids) {
        rc = parse_ids(spec->ids, m, &ids, &n);
    } else if (!tok) {
        return cli_error(cmd, "model '%s' has no tokenizer (a llama2.c checkpoint): give the "
                              "prompt as token ids with --prompt-ids, not %s", m->name, flag);
    } else {
        rc = text_of(spec, flag, tok, &text);
        if (rc == 0)
            rc = encode(flag, text, m, tok, &ids, &n);
    }
    if (rc == 0 && n == 0) {
        free(ids);
        rc = cli_error(cmd, "%s: the prompt is empty; at least one token is needed", flag);
    }
    if (rc) {
        free(text);
        return rc;
    }
    *out_ids = ids;
    *out_n = n;
    *out_text = text;
    return 0;
}
