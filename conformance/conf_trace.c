/* Random attention traces for the end-to-end replays, in the format of
 * spec/policies.md section 4.
 *
 * Every probability is a multiple of 2^-12. Such numbers add exactly in f32
 * (h2o's accumulation, tova's and snapkv's means of a few heads or slots
 * round at most in the final division, monotonically), so two correct
 * backends see the same totals and the same ties, and a replay that diverges
 * points at a real difference, not at summation order. None of them is near
 * the lazy threshold alpha = 0.005 (20.48 / 4096), so no decision hangs on
 * the last bit of a comparison either.
 *
 * The attention has a shape the policies care about: a sink (id 0), the
 * newest token, a recent window, a per-head pool of favourite tokens that
 * recur at intervals (what LazyEviction's MRI tracks; the pool drifts so old
 * favourites go quiet and get evicted), and scattered noise around alpha. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"
#include "error.h"
#include "strbuf.h"

#define TRACE_QUANTUM 4096 /* probabilities are k / 4096 */
#define TRACE_FAVOURITES 32
#define TRACE_RECENT 24


/* "0" costs 1 byte; most of a trace is zeros. k / 4096 prints exactly. */
static void put_prob(lkv_strbuf *t, int32_t k)
{
    if (k == 0)
        lkv_strbuf_printf(t, "0");
    else
        lkv_strbuf_printf(t, "%.12g", (double)k / TRACE_QUANTUM);
}

static void header(lkv_strbuf *t, const conf_trace_shape *s, uint64_t seed)
{
    int32_t b = s->prompt * 3 / 4; /* budget: a quarter of the prompt goes at once */
    lkv_strbuf_printf(t, "{\"prompt\": %d, \"heads\": %d, \"policy\": \"%s\"", s->prompt, s->heads,
        lkv_policy_name(s->policy));
    switch (s->policy) {
    case LKV_POLICY_FULL: break;
    case LKV_POLICY_LAZY: lkv_strbuf_printf(t, ", \"budget\": %d, \"window\": 16, \"alpha\": 0.005", b); break;
    case LKV_POLICY_STREAMING: lkv_strbuf_printf(t, ", \"budget\": %d, \"sinks\": 4", b); break;
    case LKV_POLICY_H2O: lkv_strbuf_printf(t, ", \"budget\": %d, \"recent\": %d", b, b / 4); break;
    case LKV_POLICY_TOVA: lkv_strbuf_printf(t, ", \"budget\": %d", b); break;
    case LKV_POLICY_SNAPKV: lkv_strbuf_printf(t, ", \"budget\": %d, \"window\": 8, \"interval\": 32", b); break;
    case LKV_POLICY_RKV: lkv_strbuf_printf(t, ", \"budget\": %d, \"window\": 8, \"interval\": 32", b); break;
    case LKV_POLICY_NACL:
        lkv_strbuf_printf(t, ", \"min_length\": %d, \"sinks\": 4, \"proxy_ratio\": 0.05, \"proxy_keep_ratio\": "
               "0.25, \"random_keep_ratio\": 0.15, \"protect_ratio\": 0.1, \"seed\": %llu",
            s->prompt / 2, (unsigned long long)(seed * 7919u + 1u));
        break;
    default: break;
    }
    lkv_strbuf_printf(t, "}\n");
}

static int votes_at_prefill(lkv_policy_kind p)
{
    return p == LKV_POLICY_SNAPKV || p == LKV_POLICY_NACL || p == LKV_POLICY_H2O ||
           p == LKV_POLICY_RKV;
}

/* Summed prompt probabilities: some coarse (exact ties for the pooling and
 * the tie rule), some fine, some zero. */
static void prefill_line(lkv_strbuf *t, const conf_trace_shape *s, conf_rng *rng)
{
    lkv_strbuf_printf(t, "{\"prefill\": [");
    for (int32_t h = 0; h < s->heads; h++) {
        lkv_strbuf_printf(t, "%s[", h ? ", " : "");
        for (int32_t i = 0; i < s->prompt; i++) {
            int pick = conf_rng_below(rng, 4);
            int32_t k = pick == 0 ? 0
                        : pick == 1 ? 256 * conf_rng_below(rng, 8)
                                    : conf_rng_below(rng, 3 * TRACE_QUANTUM);
            lkv_strbuf_printf(t, "%s", i ? ", " : "");
            put_prob(t, k);
        }
        lkv_strbuf_printf(t, "]");
    }
    lkv_strbuf_printf(t, "]}\n");
}

typedef struct head_state {
    int32_t favourite[TRACE_FAVOURITES];
} head_state;

static int32_t between(conf_rng *rng, int32_t lo, int32_t hi)
{
    return lo + conf_rng_below(rng, hi - lo + 1);
}

/* One head's quantised probabilities over ids 0 .. n-1 at one step. */
static void attend_step(int32_t *k, int32_t n, head_state *hs, conf_rng *rng)
{
    memset(k, 0, sizeof *k * (size_t)n);
    k[n - 1] = between(rng, 200, 1200);
    if (conf_rng_below(rng, 10) < 7)
        k[0] = between(rng, 100, 800);
    for (int32_t i = n > TRACE_RECENT ? n - TRACE_RECENT : 0; i < n - 1; i++)
        k[i] = between(rng, 0, 60);
    for (int j = 0; j < TRACE_FAVOURITES; j++)
        if (hs->favourite[j] < n && conf_rng_below(rng, 4) == 0)
            k[hs->favourite[j]] = between(rng, 21, 400);
    for (int j = 0; j < 8; j++)
        k[conf_rng_below(rng, n)] = between(rng, 0, 40);
    if (conf_rng_below(rng, 50) == 0) /* the pool drifts towards recent tokens */
        hs->favourite[conf_rng_below(rng, TRACE_FAVOURITES)] =
            n - 1 - conf_rng_below(rng, n < 200 ? n : 200);
}

static void step_line(lkv_strbuf *t, int32_t step, int32_t n, int32_t heads, head_state *hs,
                      int32_t *k, conf_rng *rng)
{
    lkv_strbuf_printf(t, "{\"t\": %d, \"p\": [", step);
    for (int32_t h = 0; h < heads; h++) {
        attend_step(k, n, &hs[h], rng);
        lkv_strbuf_printf(t, "%s[", h ? ", " : "");
        for (int32_t i = 0; i < n; i++) {
            if (i)
                lkv_strbuf_printf(t, ", ");
            put_prob(t, k[i]);
        }
        lkv_strbuf_printf(t, "]");
    }
    lkv_strbuf_printf(t, "]}\n");
}

lkv_status conf_trace_make(const conf_trace_shape *s, uint64_t seed, char **out_text)
{
    conf_rng rng;
    conf_rng_init(&rng, seed, lkv_policy_name(s->policy));
    lkv_strbuf t = {0};
    int32_t *k = malloc(sizeof *k * ((size_t)s->prompt + (size_t)s->steps + 1));
    head_state *hs = calloc((size_t)s->heads, sizeof *hs);
    if (!k || !hs) {
        free(k);
        free(hs);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a trace of %d steps",
                        s->steps);
    }
    for (int32_t h = 0; h < s->heads; h++)
        for (int j = 0; j < TRACE_FAVOURITES; j++)
            hs[h].favourite[j] = conf_rng_below(&rng, s->prompt > 0 ? s->prompt : 1);
    header(&t, s, seed);
    if (votes_at_prefill(s->policy))
        prefill_line(&t, s, &rng);
    for (int32_t step = 1; step <= s->steps && !t.failed; step++)
        step_line(&t, step, s->prompt + step, s->heads, hs, k, &rng);
    free(k);
    free(hs);
    if (t.failed) {
        free(t.s);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory for a trace of %d steps",
                        s->steps);
    }
    *out_text = t.s;
    return LKV_OK;
}
