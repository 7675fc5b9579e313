/* Greedy decoding, or a seeded draw from the temperature-scaled softmax cut
 * to its top-p nucleus. The generator is splitmix64, so a seed gives the same
 * tokens on every machine (given the same logits). */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "eval.h"
#include "gen.h"

int gen_sampler_init(gen_sampler *s, int32_t vocab, double temperature, double top_p,
                     uint64_t seed)
{
    *s = (gen_sampler){.vocab = vocab, .temperature = temperature, .top_p = top_p,
                       .state = seed};
    if (temperature > 0.0) {
        s->cands = malloc(sizeof(gen_candidate) * (size_t)vocab);
        if (!s->cands)
            return cli_error("generate", "out of host memory for the sampler (vocab %d)", vocab);
    }
    return 0;
}

void gen_sampler_free(gen_sampler *s)
{
    free(s->cands);
    s->cands = NULL;
}

static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* In [0, 1). */
static double uniform(uint64_t *state)
{
    return (double)(next_u64(state) >> 11) / 9007199254740992.0;
}

/* Descending probability, then ascending id: a total order, so the nucleus
 * does not depend on the sort's stability. */
static int by_prob(const void *a, const void *b)
{
    const gen_candidate *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int32_t gen_sample(gen_sampler *s, const float *logits)
{
    int32_t n = s->vocab, best = lkv_eval_argmax(logits, n);
    if (s->temperature <= 0.0)
        return best;
    double sum = 0.0, top = logits[best];
    for (int32_t i = 0; i < n; i++) {
        s->cands[i] = (gen_candidate){exp(((double)logits[i] - top) / s->temperature), i};
        sum += s->cands[i].p;
    }
    int32_t kept = n;
    if (s->top_p < 1.0) {
        qsort(s->cands, (size_t)n, sizeof(gen_candidate), by_prob);
        double mass = 0.0;
        for (kept = 0; kept < n;) {
            mass += s->cands[kept++].p;
            if (mass >= s->top_p * sum)
                break;
        }
        sum = mass;
    }
    double r = uniform(&s->state) * sum, acc = 0.0;
    for (int32_t k = 0; k < kept; k++) {
        acc += s->cands[k].p;
        if (r < acc)
            return s->cands[k].id;
    }
    return s->cands[kept - 1].id; /* rounding left r at the very top */
}
