/* --eval lanes against plain llama.cpp: fidelity.h says what is measured. */
#include "fidelity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "session.h"

typedef struct lane {
    const char *policy;
    double share;         /* 0 for the full-cache lane */
    /* sums over prompts */
    double kl, budget, window, peak, peak_share, prefix, prefix_share, seconds;
    int64_t positions, top1, steps;
    int prompts;
} lane;

void fidelity_set_budget(lkv_policy_params *p, int32_t budget, int32_t window)
{
    p->budget = budget;
    if (p->kind == LKV_POLICY_LAZY && window > 0) {
        p->window = window;
    } else if (p->kind == LKV_POLICY_LAZY || p->kind == LKV_POLICY_SNAPKV) {
        int32_t half = budget / 2 > 1 ? budget / 2 : 1;
        p->window = p->window < half ? p->window : half;
    }
}

void fidelity_budget(lkv_policy_params *p, double share, int32_t total, int32_t window)
{
    int64_t b = (int64_t)ceil(share * (double)total - 1e-9);
    fidelity_set_budget(p, (int32_t)(b < 1 ? 1 : b > total ? total : b), window);
}

/* KL(p || q) of the softmaxes of logits a and b, in double. */
static double kl_of(const float *a, const float *b, int32_t n)
{
    double ma = a[session_argmax(a, n)], mb = b[session_argmax(b, n)], sa = 0, sb = 0;
    for (int32_t i = 0; i < n; i++) {
        sa += exp((double)a[i] - ma);
        sb += exp((double)b[i] - mb);
    }
    double la = ma + log(sa), lb = mb + log(sb), kl = 0;
    for (int32_t i = 0; i < n; i++) {
        double lpa = a[i] - la;
        kl += exp(lpa) * (lpa - (b[i] - lb));
    }
    return kl > 0 ? kl : 0;
}

/* The reference: plain llama.cpp's greedy tokens and the logits that chose
 * them ([g][vocab]). */
typedef struct reference {
    llama_token *tokens;
    float *logits;
    int32_t g, vocab;
    double seconds;
} reference;

static int make_reference(const fidelity_settings *s, const llama_token *prompt, int32_t p,
                          reference *ref)
{
    char err[512];
    session ss;
    if (session_open(s->model, NULL, s->backend, p + s->max_tokens, 0, p, s->threads, &ss, err,
                     sizeof err)) {
        fprintf(stderr, "lazykv-llama: %s\n", err);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(s->model);
    ref->vocab = ss.vocab;
    ref->tokens = malloc((size_t)s->max_tokens * sizeof *ref->tokens);
    ref->logits = malloc((size_t)s->max_tokens * ss.vocab * sizeof *ref->logits);
    ref->g = 0;
    int bad = !ref->tokens || !ref->logits;
    double t0 = clock_seconds();
    bad = bad || session_decode(&ss, prompt, p);
    while (!bad && ref->g < s->max_tokens) {
        const float *lg = session_logits(&ss);
        memcpy(ref->logits + (size_t)ref->g * ss.vocab, lg, (size_t)ss.vocab * sizeof *lg);
        llama_token tok = session_argmax(lg, ss.vocab);
        ref->tokens[ref->g++] = tok;
        if ((!s->ignore_eos && llama_vocab_is_eog(vocab, tok)) || ref->g == s->max_tokens)
            break;
        bad = session_decode(&ss, &tok, 1);
    }
    ref->seconds = clock_seconds() - t0;
    if (bad)
        fprintf(stderr, "lazykv-llama: reference: %s\n", ss.error[0] ? ss.error : "no memory");
    session_close(&ss);
    return bad;
}

/* One lane on one prompt: teacher-forced over R, then free until it leaves
 * R. The full-cache lane must match the reference exactly. */
static int run_lane(const fidelity_settings *s, lane *ln, const llama_token *prompt, int32_t p,
                    const reference *ref)
{
    lkv_policy_params pol;
    lkv_policy_kind kind;
    if (lkv_policy_from_name(ln->policy, &kind) != LKV_OK || lkv_policy_init(&pol, kind) != LKV_OK) {
        fprintf(stderr, "lazykv-llama: %s\n", lkv_last_error());
        return 1;
    }
    int32_t total = p + ref->g, steps = ref->g - 1;
    if (kind != LKV_POLICY_FULL)
        fidelity_budget(&pol, ln->share, total, s->window);
    int64_t bound = 0, cap = 0;
    if (lkv_policy_peak_slots(&pol, p, steps, &bound, &cap) != LKV_OK) {
        fprintf(stderr, "lazykv-llama: %s\n", lkv_last_error());
        return 1;
    }
    char err[512];
    session ss;
    if (session_open(s->model, &pol, s->backend, (int32_t)bound, (int32_t)cap, p, s->threads, &ss,
                     err, sizeof err)) {
        fprintf(stderr, "lazykv-llama: %s lane: %s\n", ln->policy, err);
        return 1;
    }
    int bad = 0, exact = 1;
    double kl = 0, t0 = clock_seconds();
    int64_t top1 = 0;
    for (int32_t t = 0; t < ref->g && !bad; t++) {
        bad = t == 0 ? session_decode(&ss, prompt, p) : session_decode(&ss, &ref->tokens[t - 1], 1);
        if (bad)
            break;
        const float *lg = session_logits(&ss), *rl = ref->logits + (size_t)t * ref->vocab;
        kl += kl_of(rl, lg, ref->vocab);
        top1 += session_argmax(lg, ref->vocab) == session_argmax(rl, ref->vocab);
        exact = exact && memcmp(lg, rl, (size_t)ref->vocab * sizeof *lg) == 0;
    }
    double seconds = clock_seconds() - t0;
    int32_t peak = session_counts(&ss).peak, prefix = 0;
    bad = bad || session_reset(&ss) || session_decode(&ss, prompt, p);
    while (!bad && prefix < ref->g) {
        llama_token tok = session_argmax(session_logits(&ss), ref->vocab);
        if (tok != ref->tokens[prefix])
            break;
        if (++prefix < ref->g)
            bad = session_decode(&ss, &tok, 1);
    }
    if (!bad && session_counts(&ss).peak > peak)
        peak = session_counts(&ss).peak;
    if (bad)
        fprintf(stderr, "lazykv-llama: %s lane: %s\n", ln->policy, ss.error);
    if (!bad && peak > bound)
        bad = fprintf(stderr, "lazykv-llama: %s lane held %d cells at peak, above its bound %lld\n",
                      ln->policy, peak, (long long)bound) > 0;
    if (!bad && kind == LKV_POLICY_FULL && (!exact || prefix != ref->g))
        bad = fprintf(stderr, "lazykv-llama: the full-cache lane differs from plain llama.cpp "
                              "(logits %s, %d of %d tokens agree)\n",
                      exact ? "equal" : "differ", prefix, ref->g) > 0;
    session_close(&ss);
    ln->kl += kl, ln->top1 += top1, ln->positions += ref->g;
    ln->budget += kind == LKV_POLICY_FULL ? total : pol.budget;
    ln->window += kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV ? pol.window : 0;
    ln->peak += peak, ln->peak_share += (double)peak / total;
    ln->prefix += prefix, ln->prefix_share += (double)prefix / ref->g;
    ln->seconds += seconds, ln->steps += ref->g;
    ln->prompts++;
    return bad;
}

static void print_table(FILE *out, const lane *lanes, int n, int n_prompts, int64_t ref_tokens,
                        double ref_seconds)
{
    fprintf(out, "| policy | budget | slots B | W | peak cells | peak / full | KL mean | top-1 | "
                 "common prefix | tokens/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    fprintf(out, "| plain llama.cpp | - | - | - | - | - | - | - | - | %.1f |\n",
            ref_tokens / ref_seconds);
    for (int i = 0; i < n; i++) {
        const lane *l = &lanes[i];
        double np = l->prompts ? l->prompts : 1;
        char budget[32] = "-";
        if (l->share > 0)
            snprintf(budget, sizeof budget, "%g%%", 100 * l->share);
        fprintf(out, "| %s%s | %s | %.1f | %.1f | %.1f | %.1f%% | %.3g | %.4f | %.1f (%.0f%%) | %.1f |\n",
                l->policy, l->share > 0 ? "" : " (through lazykv)", budget, l->budget / np,
                l->window / np, l->peak / np, 100 * l->peak_share / np,
                l->positions ? l->kl / l->positions : 0,
                l->positions ? (double)l->top1 / l->positions : 0, l->prefix / np,
                100 * l->prefix_share / np, l->seconds > 0 ? l->steps / l->seconds : 0);
    }
    fprintf(out, "\n%d prompt(s), %lld reference tokens; llama.cpp's own full cache is the "
                 "reference; per-token decisions (one per position for every layer and head).\n",
            n_prompts, (long long)ref_tokens);
}

int fidelity_run(const fidelity_settings *s, llama_token *const *prompts, const int32_t *lens,
                 int n_prompts, FILE *markdown)
{
    int n_lanes = 1 + s->n_policies * s->n_shares, bad = 0;
    lane *lanes = calloc((size_t)n_lanes, sizeof *lanes);
    if (!lanes)
        return 1;
    lanes[0].policy = "full";
    for (int i = 0; i < s->n_policies; i++)
        for (int j = 0; j < s->n_shares; j++) {
            lanes[1 + i * s->n_shares + j].policy = s->policies[i];
            lanes[1 + i * s->n_shares + j].share = s->shares[j];
        }
    int64_t ref_tokens = 0;
    double ref_seconds = 0;
    for (int k = 0; k < n_prompts && !bad; k++) {
        reference ref = {0};
        bad = make_reference(s, prompts[k], lens[k], &ref);
        fprintf(stderr, "lazykv-llama: prompt %d/%d: %d tokens, reference %d tokens\n", k + 1,
                n_prompts, lens[k], ref.g);
        ref_tokens += ref.g, ref_seconds += ref.seconds;
        for (int i = 0; i < n_lanes && !bad; i++)
            bad = run_lane(s, &lanes[i], prompts[k], lens[k], &ref);
        free(ref.tokens);
        free(ref.logits);
    }
    if (!bad)
        print_table(stdout, lanes, n_lanes, n_prompts, ref_tokens, ref_seconds);
    if (!bad && markdown)
        print_table(markdown, lanes, n_lanes, n_prompts, ref_tokens, ref_seconds);
    free(lanes);
    return bad;
}
