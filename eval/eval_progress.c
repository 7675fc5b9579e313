/* The progress report on stderr. On a terminal one line is redrawn (at most
 * ten times a second): prompt, phase, positions, lanes, speed and ETA. In a
 * log (CI, a pipe) redrawing would leave thousands of lines, so a line is
 * printed when a phase ends (which also gives its speed) and once a minute
 * within a long phase. */
#include <stdio.h>

#include "eval.h"

#define TTY_PERIOD_S 0.1
#define LOG_PERIOD_S 60.0

void lkv_eval_progress_printer_init(lkv_eval_progress_printer *p, FILE *f, int tty)
{
    lkv_progress_line_init(&p->line, f, tty, LKV_PROGRESS_PAD);
    p->last_s = 0.0; /* the first line after one period: an ETA needs a rate */
}

static void duration(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t % 3600 / 60);
    else if (t >= 60)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lds", t);
}

static void describe(const lkv_eval_progress *p, char *buf, size_t len)
{
    double rate = p->phase_elapsed_s > 0.0 ? p->phase_lane_tokens / p->phase_elapsed_s : 0.0;
    char eta[24] = "?";
    if (p->eta_s >= 0.0)
        duration(p->eta_s, eta, sizeof eta);
    if (p->phase_done)
        snprintf(buf, len, "prompt %d/%d %s done: %lld lane-tokens in %.1f s (%.1f/s); ETA %s",
                 p->prompt + 1, p->n_prompts, lkv_eval_phase_name(p->phase),
                 (long long)p->phase_lane_tokens, p->phase_elapsed_s, rate, eta);
    else
        snprintf(buf, len, "prompt %d/%d %s %d/%d x %d lanes, %.1f lane-tokens/s, ETA %s",
                 p->prompt + 1, p->n_prompts, lkv_eval_phase_name(p->phase), p->step, p->steps,
                 p->lanes, rate, eta);
}

void lkv_eval_progress_print(void *user, const lkv_eval_progress *p)
{
    lkv_eval_progress_printer *pr = user;
    double period = pr->line.tty ? TTY_PERIOD_S : LOG_PERIOD_S;
    if (!p->phase_done && p->elapsed_s - pr->last_s < period)
        return;
    pr->last_s = p->elapsed_s;
    char line[256];
    describe(p, line, sizeof line);
    if (pr->line.tty)
        lkv_progress_line_show(&pr->line, "%s", line);
    else
        lkv_progress_line_log(&pr->line, "lazykv eval: %s", line);
}

void lkv_eval_progress_printer_end(lkv_eval_progress_printer *p)
{
    lkv_progress_line_end(&p->line);
}
