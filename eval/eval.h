/* `lazykv eval`: how far each eviction policy and budget moves a real model
 * away from the full cache.
 *
 * Per prompt: (1) the full-cache model generates a greedy reference R of G
 * tokens (T = P + G with the prompt); (2) teacher-forced, every lane (the
 * full cache again, then one cache per policy x budget x GQA mode) reads R
 * and we compare its next-token distribution with the full lane's at every
 * position: KL(p_full || p_lane), top-1 agreement, NLL of R; (3) free-running,
 * every lane generates greedily for G tokens: common prefix with R and the
 * final answer. Peaks come from lkv_cache_get_stats and are checked against
 * the bound each policy promises. eval/README.md explains the choices.
 *
 * The library does the work and keeps plain results; the table, JSON, SVG
 * and progress writers only read them, so tests drive lkv_eval_run directly. */
#ifndef LKV_EVAL_H
#define LKV_EVAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lazykv.h"
#include "model.h"
#include "policy_budget.h"
#include "pool.h"
#include "progress_line.h"
#include "tokenizer.h"

#define LKV_EVAL_MAX_POLICIES 8
#define LKV_EVAL_MAX_BUDGETS 16
#define LKV_EVAL_ANSWER_LEN 48
#define LKV_EVAL_ERROR_LEN 320

/* ---- settings (eval_settings.c) ---- */

typedef struct lkv_eval_settings {
    int n_policies;
    lkv_policy_kind policies[LKV_EVAL_MAX_POLICIES];
    lkv_lazy_schedule schedules[LKV_EVAL_MAX_POLICIES]; /* lazy: faithful, or peak (lazy-peak) */
    /* 0: a budget entry is each lane's B (--at budget); 1: each lane's B is
     * chosen so that its peak bound is the entry (--at peak), so lanes of one
     * entry hold the same memory at their worst moment. */
    int at_peak;
    int n_budgets;
    lkv_budget budgets[LKV_EVAL_MAX_BUDGETS]; /* of each prompt's full sequence T */
    int n_gqa;
    lkv_gqa_mode gqa[2];
    int n_granularity;
    lkv_granularity granularity[3]; /* which rows share a decision (lkv_granularity) */
    int32_t max_tokens; /* cap on the reference length G */
    int ignore_eos;     /* generate max_tokens even past end tokens */
    int32_t window;     /* lazy W; 0: lkv_budget_default_window for each lane's B */
    double alpha;       /* lazy threshold; < 0: the policy's default */
    int32_t buffer;     /* rkv's interval (steps between compressions); 0: its default */
    lkv_dtype dtype;
} lkv_eval_settings;

/* Defaults: lazy,streaming,h2o,tova,snapkv,nacl; 25%,50%; grouped;
 * max_tokens 1024; f16; at budget. */
void lkv_eval_settings_init(lkv_eval_settings *s);

/* The name a lane's policy goes by: the policy's, or "lazy-peak" for lazy
 * with the peak schedule (lazykv's own variant, never the paper's). */
const char *lkv_eval_policy_name(lkv_policy_kind kind, lkv_lazy_schedule schedule);

/* List parsers for the command line. Each replaces its part of `s` on success
 * and leaves `s` unchanged on failure, with a message naming the bad entry.
 * A policies entry is a policy's name or lazy-peak. */
lkv_status lkv_eval_parse_policies(const char *list, lkv_eval_settings *s);
/* "budget" or "peak" (lkv_eval_settings.at_peak). */
lkv_status lkv_eval_parse_at(const char *text, lkv_eval_settings *s);
lkv_status lkv_eval_parse_budgets(const char *list, lkv_eval_settings *s);
/* "grouped", "expanded" or "both". */
lkv_status lkv_eval_parse_gqa(const char *text, lkv_eval_settings *s);
/* A list of "head", "layer", "token" (or "all"). */
lkv_status lkv_eval_parse_granularity(const char *list, lkv_eval_settings *s);

/* ---- prompts (eval_prompts.c) ---- */

typedef struct lkv_eval_prompt {
    int32_t *ids;
    int32_t n_ids;
    char *question;                      /* NULL for id prompts */
    char answer[LKV_EVAL_ANSWER_LEN];    /* the dataset's final answer, "" when none */
} lkv_eval_prompt;

typedef struct lkv_eval_prompts {
    lkv_eval_prompt *items;
    int count;
} lkv_eval_prompts;

/* "1,34,7;1,99": prompts of token ids, separated by ';'. */
lkv_status lkv_eval_prompts_from_ids(const char *text, lkv_eval_prompts *out);

/* JSONL records with a "question" string (and optionally an "answer" whose
 * "#### N" gives the expected number): records skip .. skip + n - 1 (fewer
 * when the file ends first; none is an error). Each becomes the chat
 * template's rendering of question + "\n" + instruction, encoded with special
 * tokens parsed. */
lkv_status lkv_eval_prompts_from_jsonl(const char *text, int skip, int n,
                                       const lkv_tokenizer *tok, const char *instruction,
                                       lkv_eval_prompts *out);

/* Every id within the vocabulary and every prompt non-empty. */
lkv_status lkv_eval_prompts_check(const lkv_eval_prompts *p, int32_t vocab);

/* Every prompt leaves room for `max_tokens` more within the model's
 * `context`; else the first that does not is named with the numbers. */
lkv_status lkv_eval_prompts_fit(const lkv_eval_prompts *p, int32_t max_tokens, int32_t context);

void lkv_eval_prompts_free(lkv_eval_prompts *p);

/* ---- metrics (eval_metrics.c): pure functions, double precision ---- */

/* log(sum_i exp(x_i)), shifted by the maximum. */
double lkv_eval_logsumexp(const float *x, int32_t n);

/* KL(p || q) in nats between softmax(p_logits) and softmax(q_logits), given
 * their logsumexp. `p_probs` (may be NULL) holds exp(p_logits - p_lse)
 * precomputed. Bitwise-identical logits give exactly 0. */
double lkv_eval_kl(const float *p_logits, double p_lse, const double *p_probs,
                   const float *q_logits, double q_lse, int32_t n);

/* Index of the largest logit, the lowest index among equals. */
int32_t lkv_eval_argmax(const float *x, int32_t n);

/* -log softmax(x)[target]. */
double lkv_eval_nll(const float *x, double lse, int32_t target);

/* Length of the common prefix of two token sequences. */
int32_t lkv_eval_common_prefix(const int32_t *a, int32_t na, const int32_t *b, int32_t nb);

/* The last number in `text` ("The answer is 1,234." -> "1234", "$18" -> "18",
 * "-3.5" -> "-3.5"), normalised: thousands separators dropped, trailing
 * decimal zeros dropped ("18.00" -> "18"). Returns 1, or 0 with out = "" when
 * there is none. */
int lkv_eval_last_number(const char *text, char *out, size_t cap);

/* The number after the last "####" of a GSM8K-style answer; 0 and "" without. */
int lkv_eval_dataset_answer(const char *answer, char *out, size_t cap);

/* ---- lanes (eval_lanes.c) ---- */

/* One row of the results: the full-cache reference (lane 0), or a policy at
 * one budget entry and GQA mode. */
typedef struct lkv_eval_lane_spec {
    lkv_policy_kind policy;
    lkv_lazy_schedule schedule; /* lazy only */
    lkv_gqa_mode gqa;
    lkv_granularity granularity;
    int budget;        /* index into settings.budgets; -1 for full caches */
    int reference;     /* 1 for lane 0 */
    char name[48];     /* "lazy expanded 25%" */
} lkv_eval_lane_spec;

/* Lane 0 is the reference, then per policy, per GQA mode, per budget (a
 * single lane per GQA mode for "full"). Caller frees *out_specs. */
lkv_status lkv_eval_lane_specs(const lkv_eval_settings *s, lkv_eval_lane_spec **out_specs,
                               int *out_n);

/* ---- results ---- */

typedef enum lkv_eval_phase {
    LKV_EVAL_REFERENCE = 0, /* the full cache generates R */
    LKV_EVAL_TEACHER,       /* every lane reads R */
    LKV_EVAL_FREE,          /* every lane generates */
    LKV_EVAL_PHASES
} lkv_eval_phase;

const char *lkv_eval_phase_name(lkv_eval_phase p);

/* How a lane's peak is judged. */
typedef enum lkv_eval_bound_kind {
    LKV_EVAL_BOUND_PEAK = 0,   /* peak slots <= bound */
    LKV_EVAL_BOUND_PREFILL     /* nacl: evicts once at prefill; kept <= budget */
} lkv_eval_bound_kind;

typedef struct lkv_eval_lane_result {
    lkv_status status;          /* LKV_OK, or why the lane was skipped for this prompt */
    char error[LKV_EVAL_ERROR_LEN];
    int32_t budget;             /* B: slots per cache head (0 for full caches) */
    int32_t window;             /* lazy's W or snapkv's window; 0 for the others */
    int32_t cache_heads;        /* per layer: kv_heads, or q_heads when expanded */
    int32_t capacity;
    int32_t prefill_kept;       /* slots per cache head right after prefill */
    int32_t peak;               /* most slots per cache head held at once, both phases */
    int32_t bound;              /* the promised peak (LKV_EVAL_BOUND_PEAK) */
    lkv_eval_bound_kind bound_kind;
    int within_bound;
    int64_t evictions;          /* teacher-forced phase, lkv_cache_stats */
    int64_t tokens_evicted;
    int64_t kv_bytes_peak;
    /* teacher-forced, summed over `positions` */
    int32_t positions;
    double kl_sum, kl_max, nll_sum;
    int32_t top1;               /* argmax equal to the full lane's */
    int32_t ref_top1;           /* argmax equal to the reference token */
    /* free-running */
    int32_t generated;
    int32_t *tokens;            /* [generated] */
    char *text;                 /* decoded, NULL for id-only models */
    int32_t common_prefix;
    char answer[LKV_EVAL_ANSWER_LEN];
    int answer_match;           /* equal to the full model's answer */
    int correct;                /* equal to the dataset's answer; -1 without one */
} lkv_eval_lane_result;

typedef struct lkv_eval_phase_time {
    double seconds;
    int64_t steps;       /* forward calls (prefill counts one) */
    int64_t lane_tokens; /* tokens processed, summed over lanes (prompt tokens excluded) */
    int64_t prompt_tokens;
} lkv_eval_phase_time;

typedef struct lkv_eval_prompt_result {
    int32_t prompt_tokens;     /* P */
    int32_t generated;         /* G */
    int32_t total;             /* T = P + G */
    int32_t *reference;        /* [G] */
    char *reference_text;      /* NULL for id-only models */
    char ref_answer[LKV_EVAL_ANSWER_LEN];
    char dataset_answer[LKV_EVAL_ANSWER_LEN];
    int ref_correct;           /* -1 without a dataset answer */
    lkv_eval_phase_time phase[LKV_EVAL_PHASES];
    lkv_eval_lane_result *lanes; /* [n_lanes] */
} lkv_eval_prompt_result;

typedef struct lkv_eval_results {
    lkv_eval_settings settings;
    char model[128];
    lkv_model_config shape;
    int tokenized;               /* the model has a tokenizer */
    char backend[64];
    int threads;
    int n_lanes;
    lkv_eval_lane_spec *lanes;
    int n_prompts;
    lkv_eval_prompt_result *prompts;
    double seconds;
} lkv_eval_results;

void lkv_eval_results_free(lkv_eval_results *r);

/* ---- the run (eval_run.c) ---- */

typedef struct lkv_eval_progress {
    int prompt;                  /* 0-based */
    int n_prompts;
    lkv_eval_phase phase;
    int32_t step;                /* positions done in this phase */
    int32_t steps;               /* its length (max_tokens while R is unknown) */
    int lanes;                   /* lanes stepping now */
    int phase_done;              /* 1 on the last report of a phase */
    double eta_s;                /* seconds left in the run; < 0 while unknown */
    double elapsed_s;
    double phase_elapsed_s;
    int64_t phase_lane_tokens;
} lkv_eval_progress;

typedef void (*lkv_eval_progress_fn)(void *user, const lkv_eval_progress *p);

typedef struct lkv_eval_env {
    const lkv_model *model;
    const lkv_tokenizer *tok;    /* NULL: id prompts, no end token, answers are last tokens */
    lkv_runtime *rt;
    lkv_pool *pool;              /* borrowed by the forward pass and the metrics */
    lkv_eval_progress_fn progress; /* may be NULL */
    void *progress_user;
} lkv_eval_env;

/* Runs every prompt. A lane whose cache the runtime refuses for a prompt (a
 * budget below the lazy window, say) is skipped for that prompt with the
 * reason in its result; a failure while running (OUT_OF_MEMORY, a device
 * error) stops the run with a message naming the prompt, phase and lane.
 * *out is written only on success. */
lkv_status lkv_eval_run(const lkv_eval_env *env, const lkv_eval_settings *s,
                        const lkv_eval_prompts *prompts, lkv_eval_results *out);

/* ---- aggregation over prompts (eval_summary.c) ---- */

typedef struct lkv_eval_summary {
    int prompts;            /* prompts where the lane ran */
    int skipped;
    int64_t positions;      /* teacher-forced positions evaluated */
    double budget_mean;     /* B, slots per cache head */
    double window_mean;     /* W (lazy, snapkv); NaN for the other policies */
    double fraction_mean;   /* memory of B as a share of the full sequence's */
    double peak_mean, bound_mean; /* slots per cache head */
    double memory_mean;     /* peak K/V memory held as a share of the full sequence's */
    int over_bound;         /* prompts whose peak broke the bound */
    double kl_mean, kl_max; /* over positions */
    double top1, ref_top1;  /* shares of positions */
    double ppl_ratio;       /* exp(mean NLL lane - mean NLL full), pooled over positions */
    double prefix_mean;     /* tokens, mean over prompts */
    double prefix_share;    /* common prefix / G, mean over prompts */
    double answer_match;    /* share of prompts */
    double accuracy;        /* share of graded prompts; NaN when none is graded */
    int graded;
    int64_t evictions, tokens_evicted;
} lkv_eval_summary;

void lkv_eval_summarize(const lkv_eval_results *r, int lane, lkv_eval_summary *out);

/* The most K/V memory lane `l` held at once on prompt `p`, as a share of the
 * full cache of that prompt's whole sequence: peak slots per cache head x
 * cache heads / (T x kv_heads). Expanded lanes count all their cache heads. */
double lkv_eval_memory_share(const lkv_eval_results *r, const lkv_eval_prompt_result *p,
                             const lkv_eval_lane_result *l);

/* 1 when the run passes the CI check: the full caches give KL 0, agreement 1
 * and perplexity ratio 1 exactly, the free-running full cache reproduces R,
 * no lane was skipped and every lane kept within its bound. Else 0 and the
 * first failure in `why`. */
int lkv_eval_check(const lkv_eval_results *r, char *why, size_t len);

/* ---- output ---- */

/* Markdown: settings, the table aggregated over prompts, timing. */
void lkv_eval_print_table(FILE *f, const lkv_eval_results *r);
/* Return 0, or -1 when writing failed. */
int lkv_eval_write_json(FILE *f, const lkv_eval_results *r);
int lkv_eval_write_svg(FILE *f, const lkv_eval_results *r);

/* ---- progress line (eval_progress.c) ---- */

typedef struct lkv_eval_progress_printer {
    lkv_progress_line line; /* redrawn on a terminal; else occasional plain lines */
    double last_s;          /* elapsed time of the last line drawn */
} lkv_eval_progress_printer;

void lkv_eval_progress_printer_init(lkv_eval_progress_printer *p, FILE *f, int tty);
/* An lkv_eval_progress_fn; `user` is the printer. */
void lkv_eval_progress_print(void *user, const lkv_eval_progress *p);
/* Clears the redrawn line. */
void lkv_eval_progress_printer_end(lkv_eval_progress_printer *p);

#endif
