/* The per-position fidelity measures and the answer extraction. Everything is
 * double: a KL of 1e-7 nats summed over 50K vocabulary entries would drown in
 * float rounding. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "eval.h"

double lkv_eval_logsumexp(const float *x, int32_t n)
{
    double m = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (x[i] > m)
            m = x[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)x[i] - m);
    return m + log(sum);
}

/* sum_i p_i (log p_i - log q_i), with log p_i = x_i - lse computed the same
 * way on both sides, so identical logits cancel to exactly 0 term by term. */
double lkv_eval_kl(const float *p_logits, double p_lse, const double *p_probs,
                   const float *q_logits, double q_lse, int32_t n)
{
    double kl = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double lp = (double)p_logits[i] - p_lse;
        double lq = (double)q_logits[i] - q_lse;
        double p = p_probs ? p_probs[i] : exp(lp);
        kl += p * (lp - lq);
    }
    /* Rounding can leave a true 0 a hair below it. */
    return kl > 0.0 ? kl : 0.0;
}

int32_t lkv_eval_argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

double lkv_eval_nll(const float *x, double lse, int32_t target)
{
    return lse - (double)x[target];
}

int32_t lkv_eval_common_prefix(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    int32_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* A thousands separator: a comma between a digit and exactly three digits. */
static int is_separator(const char *s, size_t at, size_t len)
{
    if (s[at] != ',' || at == 0 || at + 3 >= len || !isdigit((unsigned char)s[at - 1]))
        return 0;
    for (size_t k = 1; k <= 3; k++)
        if (!isdigit((unsigned char)s[at + k]))
            return 0;
    return at + 4 >= len || !isdigit((unsigned char)s[at + 4]);
}

/* Digits with separators dropped, then an optional fraction, written to out;
 * trailing fractional zeros and a bare point are dropped. */
static void normalise(const char *s, size_t start, size_t end, int negative, char *out,
                      size_t cap)
{
    char buf[LKV_EVAL_ANSWER_LEN * 2];
    size_t n = 0, point = 0;
    if (negative)
        buf[n++] = '-';
    for (size_t i = start; i < end && n + 1 < sizeof buf; i++) {
        if (s[i] == ',')
            continue;
        if (s[i] == '.')
            point = n;
        buf[n++] = s[i];
    }
    if (point) {
        while (n > point + 1 && buf[n - 1] == '0')
            n--;
        if (n == point + 1)
            n = point;
    }
    buf[n] = '\0';
    if (!strcmp(buf, "-0"))
        strcpy(buf, "0");
    snprintf(out, cap, "%s", buf);
}

int lkv_eval_last_number(const char *text, char *out, size_t cap)
{
    size_t len = strlen(text), start = 0, end = 0;
    int found = 0;
    for (size_t i = 0; i < len;) {
        if (!isdigit((unsigned char)text[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && (isdigit((unsigned char)text[j]) || is_separator(text, j, len)))
            j++;
        /* a fraction needs a digit after the point: "18." ends a sentence */
        if (j + 1 < len && text[j] == '.' && isdigit((unsigned char)text[j + 1])) {
            j++;
            while (j < len && isdigit((unsigned char)text[j]))
                j++;
        }
        start = i;
        end = j;
        found = 1;
        i = j;
    }
    if (!found) {
        if (cap)
            out[0] = '\0';
        return 0;
    }
    /* "-3" but not "5-3": a minus sign counts after a space or the start */
    int negative = start > 0 && text[start - 1] == '-' &&
                   (start == 1 || !isalnum((unsigned char)text[start - 2]));
    normalise(text, start, end, negative, out, cap);
    return 1;
}

int lkv_eval_dataset_answer(const char *answer, char *out, size_t cap)
{
    const char *mark = NULL;
    for (const char *p = strstr(answer, "####"); p; p = strstr(p + 4, "####"))
        mark = p;
    if (!mark) {
        if (cap)
            out[0] = '\0';
        return 0;
    }
    return lkv_eval_last_number(mark + 4, out, cap);
}
