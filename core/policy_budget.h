/* Budgets, default windows and peak bounds of the eviction policies: one
 * rule for `lazykv generate` and `lazykv eval`, so a budget, a window and a
 * cache size mean the same in both.
 *
 * A budget is B slots per cache head: a share of a sequence's length ("25%",
 * "12.5%": rounded up) or a count ("512"); either way at least 1 and at most
 * the length, since no cache holds more than its sequence.
 *
 * A window the user did not give is the policy's default, but at most half
 * the budget (at least 1): lazy keeps its last W slots and snapkv its voting
 * window at every eviction, so a default window as large as a small budget
 * would leave nothing to choose (and the runtime refuses W > B). */
#ifndef LKV_POLICY_BUDGET_H
#define LKV_POLICY_BUDGET_H

#include <stdint.h>

#include "lazykv.h"

typedef struct lkv_budget {
    double fraction; /* share of the sequence, in (0, 1]; 0 when `tokens` is used */
    int32_t tokens;  /* slots, >= 1; 0 when `fraction` is used */
    char label[16];  /* as given: "25%", "512" */
} lkv_budget;

/* "25%", "12.5%" (a share in (0%, 100%]) or "512" (a count >= 1). The
 * message names `what` ("--budget", "--budgets entry") and the text. */
lkv_status lkv_budget_parse(const char *text, const char *what, lkv_budget *out);

/* B for a sequence of `length` tokens: ceil(fraction x length), or the
 * count; then clamped to 1 .. length. */
int32_t lkv_budget_slots(const lkv_budget *b, int64_t length);

/* 1 for the policies whose `window` keeps the last slots at every eviction
 * (lazy, snapkv, rkv): they need budget >= window; 0 for the others. */
int lkv_budget_has_window(lkv_policy_kind kind);

/* The window `kind` runs with when none is given: min(the policy's default,
 * max(1, budget / 2)) for lazy (W) and snapkv (its window); 0 for the
 * policies without one. */
int32_t lkv_budget_default_window(lkv_policy_kind kind, int32_t budget);

/* The most slots one cache head holds at once when a cache with policy `p`
 * (budget and window resolved) reads a prompt of `prompt` tokens at prefill
 * and then `steps` tokens one at a time. The whole prompt is held at prefill
 * before any policy acts; then streaming, h2o and tova run one slot above B,
 * lazy up to W above max(P, B) (with the peak schedule: B, or P + 1 after
 * a prompt of P >= B), snapkv (down to B at prefill) up to its
 * interval above B; full and nacl (whose prefill share is known only once it
 * has run) may hold everything. Never more than prompt + steps. */
int64_t lkv_budget_peak_bound(const lkv_policy_params *p, int64_t prompt, int64_t steps);

/* The capacity lkv_cache_create demands of `p` whatever the sequence (the
 * checks of core/policy_*.c): a shorter sequence still pays it. */
int64_t lkv_budget_min_capacity(const lkv_policy_params *p);

/* The smallest capacity for that sequence: the peak bound, the policy's
 * minimum and the prompt (prefill holds it whole). */
int64_t lkv_budget_capacity(const lkv_policy_params *p, int64_t prompt, int64_t steps);

#endif
