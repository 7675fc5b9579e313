/* Eval prompt files: lkv_eval_prompts_from_jsonl (JSONL records rendered
 * with the toy tokenizer's chat template and encoded) and
 * lkv_eval_prompts_from_ids ("1,34,7;1,99"), then the checks an eval runs
 * on them.
 *
 * Input: one selector byte, then the text. Selector bit 0: ids (1) or
 * JSONL (0); bits 1-2: records to skip; bits 3-5: records wanted - 1;
 * bit 6: with an instruction; bit 7: the tokenizer has no chat template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "fuzz_util.h"

static lkv_tokenizer *toy[2];
static volatile int32_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fz_toy_tokenizer(fz_chatml_template, strlen(fz_chatml_template), &toy[0]) != LKV_OK ||
        fz_toy_tokenizer(NULL, 0, &toy[1]) != LKV_OK) {
        fprintf(stderr, "fuzz_eval_prompts: toy tokenizer: %s\n", lkv_last_error());
        abort();
    }
    return 0;
}

static void use_prompts(const lkv_eval_prompts *p, int32_t vocab)
{
    for (int i = 0; i < p->count; i++) {
        const lkv_eval_prompt *e = &p->items[i];
        if (e->n_ids < 0 || (e->n_ids > 0 && !e->ids) || strnlen(e->answer, sizeof e->answer) >=
                                                           sizeof e->answer)
            abort();
        for (int32_t k = 0; k < e->n_ids; k++)
            sink = e->ids[k];
        if (e->question)
            (void)strlen(e->question);
    }
    (void)lkv_eval_prompts_check(p, vocab);
    (void)lkv_eval_prompts_fit(p, 16, 64);
    (void)lkv_eval_prompts_fit(p, INT32_MAX, 2048);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    char *text = fz_strndup(data + 1, size - 1);
    lkv_eval_prompts p = {0};
    lkv_status st;
    const lkv_tokenizer *tok = toy[sel >> 7];
    if (sel & 1) {
        st = lkv_eval_prompts_from_ids(text, &p);
    } else {
        int skip = (sel >> 1) & 3, n = ((sel >> 3) & 7) + 1;
        const char *instruction = sel & 64 ? "Answer with a number." : NULL;
        st = lkv_eval_prompts_from_jsonl(text, skip, n, tok, instruction, &p);
    }
    if (st == LKV_OK) {
        use_prompts(&p, lkv_tokenizer_vocab(tok));
        lkv_eval_prompts_free(&p);
    } else if (p.count != 0 || p.items) {
        abort(); /* a failure leaves *out untouched */
    }
    /* The answer readers run on the record text as it is. */
    char number[LKV_EVAL_ANSWER_LEN];
    (void)lkv_eval_last_number(text, number, sizeof number);
    (void)lkv_eval_dataset_answer(text, number, sizeof number);
    free(text);
    return 0;
}
