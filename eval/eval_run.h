/* The state of one `lkv_eval_run` and the pieces the phases share. The run
 * (eval_run.c) goes prompt by prompt: the reference (eval_reference.c), then
 * every lane teacher-forced on it (eval_teacher.c), then every lane
 * free-running (eval_free.c). Lanes step together through the batch of
 * eval_batch.c, so the forward pass reads the weights once per position for
 * all of them; eval_eta.c keeps the time and tells the progress callback. */
#ifndef LKV_EVAL_RUN_H
#define LKV_EVAL_RUN_H

#include "eval.h"
#include "eval_lanes.h"
#include "forward.h"

typedef struct lkv_eval_run_lane {
    lkv_eval_lane_plan plan;
    lkv_cache *cache;   /* NULL: skipped for this prompt */
    lkv_lane lane;
    int32_t *gen;       /* free-running tokens */
    int32_t n_gen;
    int done;
} lkv_eval_run_lane;

typedef struct lkv_eval_state {
    const lkv_eval_env *env;
    const lkv_eval_settings *s;
    const lkv_eval_prompts *prompts;
    lkv_eval_results *r;
    lkv_forward *fw;
    int32_t vocab;
    int n;                      /* lanes (specs) */
    lkv_eval_run_lane *lanes;   /* [n] */
    lkv_lane *batch;            /* [n] lanes stepping now */
    int *batch_of;              /* [n] lane index of each batch entry */
    int32_t *tokens;            /* [n] */
    float *logits;              /* [n][vocab] */
    const float **lane_logits;  /* [n] */
    double *p_full;             /* [vocab] the full lane's probabilities */
    double t0;
} lkv_eval_state;

/* ---- eval_eta.c ---- */

/* One forward call of a phase, `lane_tokens` lanes stepping. */
void lkv_eval_count_step(lkv_eval_state *R, int pi, lkv_eval_phase ph, int64_t lane_tokens);

/* Tells the progress callback (if any) where the run is, with its ETA. */
void lkv_eval_report(const lkv_eval_state *R, int pi, lkv_eval_phase ph, int32_t step,
                     int32_t steps, int lanes, int done, double phase_t0);

/* ---- eval_batch.c ---- */

/* An end token ends a generation, unless --ignore-eos or the model has no
 * tokenizer. */
int lkv_eval_is_end(const lkv_eval_state *R, int32_t id);

/* Plans and creates every lane's cache for prompt `pi` (with room for the
 * free-running tokens when `free_running`); a lane the runtime refuses is
 * skipped. On failure nothing stays open. */
lkv_status lkv_eval_lanes_open(lkv_eval_state *R, int pi, int free_running);
void lkv_eval_lanes_close(lkv_eval_state *R);

/* The lanes still stepping, in lane order (the reference first), into the
 * batch; returns their number. */
int lkv_eval_batch_gather(lkv_eval_state *R);
/* The batch's lane positions back into the lanes. */
void lkv_eval_batch_scatter(lkv_eval_state *R, int n_batch);

/* The prompt into every lane of the batch; the logits (one row, the same for
 * all) into R->logits; each lane's slots after prefill into its result. */
lkv_status lkv_eval_batch_prefill(lkv_eval_state *R, int pi, int n_batch);

/* A batched step failed: the message names the lanes whose cache is full
 * (the usual cause), else the batch. */
lkv_status lkv_eval_step_failed(const lkv_eval_state *R, lkv_status st, int pi,
                                lkv_eval_phase ph, int32_t position, int n_batch);

/* ---- the phases ---- */

/* eval_reference.c: the full cache generates R greedily; fills the prompt's
 * result (reference, its text and answer, P, G, T). */
lkv_status lkv_eval_reference(lkv_eval_state *R, int pi);

/* eval_teacher.c: after prefill, the batch reads R and every lane's measures
 * are taken at each position. */
lkv_status lkv_eval_teacher_steps(lkv_eval_state *R, int pi, int n_batch, double t0);

/* eval_free.c: after prefill, every lane generates greedily for up to G
 * tokens; then a lane's tokens go to its result, graded. */
lkv_status lkv_eval_free_steps(lkv_eval_state *R, int pi, double t0);
lkv_status lkv_eval_grade(lkv_eval_state *R, int pi, int k);

#endif
