/* The benchmarked ops: names, and the bytes each one moves.
 *
 * Bytes model, for one layer of one sequence (R = kv_heads cache rows, n =
 * slots, k = slots kept, d = head_dim, e = bytes per K/V element, H = q_heads):
 *   attend + probs  reads K and V once (2 R n d e) and q (4 H d); writes out
 *                   (4 H d) and the probabilities (4 R n)
 *   attend (plain)  the same without the probabilities
 *   observe (lazy)  reads probs, last and mri, writes last and mri: 20 R n
 *                   (an upper bound: a slot below the threshold is not written)
 *   score (lazy)    reads last and mri, writes the score: 12 R n
 *   select          reads the scores (4 R n), writes the kept list (4 R k)
 *   compact         per kept slot: reads the index (4), reads and writes its
 *                   K and V (2 x 2 d e) and pos, last, mri, state_f (2 x 16)
 *   attend + observe  attend (plain) and the lazy observe's state, read and
 *                   written (16 R n, an upper bound as above); no
 *                   probabilities in memory: what a fused kernel moves (a
 *                   backend that runs the two ops moves both ops' bytes)
 * Each query head re-reads its group's K and V; the model counts them once,
 * as a kernel that keeps a group's heads together does. */
#include <stdio.h>

#include "bench.h"

static const struct {
    const char *id;
    const char *label;
    const char *formula; /* of lkv_bench_op_bytes, in the letters above */
} op_names[LKV_BENCH_OP_COUNT] = {
    {"attend_probs", "attend + probs", "2 R n d e + 8 H d + 4 R n"},
    {"attend_plain", "attend (plain)", "2 R n d e + 8 H d"},
    {"observe", "observe (lazy)", "20 R n"},
    {"score", "score (lazy)", "12 R n"},
    {"select", "select", "4 R n + 4 R k"},
    {"compact", "compact", "R k (4 + 4 d e + 32)"},
    {"attend_observe", "attend + observe", "2 R n d e + 8 H d + 16 R n"},
};

const char *lkv_bench_op_id(lkv_bench_op op)
{
    return (unsigned)op < LKV_BENCH_OP_COUNT ? op_names[op].id : "unknown";
}

const char *lkv_bench_op_label(lkv_bench_op op)
{
    return (unsigned)op < LKV_BENCH_OP_COUNT ? op_names[op].label : "unknown";
}

const char *lkv_bench_op_formula(lkv_bench_op op)
{
    return (unsigned)op < LKV_BENCH_OP_COUNT ? op_names[op].formula : "";
}

void lkv_bench_shape_label(const lkv_bench_shape *s, char *buf, size_t len)
{
    const char *dtype = lkv_dtype_name(s->dtype);
    snprintf(buf, len, "hq%d/hkv%d/d%d %s", s->q_heads, s->kv_heads, s->head_dim,
             dtype ? dtype : "?");
}

double lkv_bench_op_bytes(lkv_bench_op op, const lkv_bench_shape *s, int32_t length, int32_t keep)
{
    double rows = s->kv_heads, n = length, k = keep, d = s->head_dim;
    double e = (double)lkv_dtype_size(s->dtype);
    double q_and_out = 2.0 * 4.0 * s->q_heads * d;
    switch (op) {
    case LKV_BENCH_ATTEND_PROBS: return 2.0 * rows * n * d * e + q_and_out + 4.0 * rows * n;
    case LKV_BENCH_ATTEND_PLAIN: return 2.0 * rows * n * d * e + q_and_out;
    case LKV_BENCH_OBSERVE: return 20.0 * rows * n;
    case LKV_BENCH_SCORE: return 12.0 * rows * n;
    case LKV_BENCH_SELECT: return 4.0 * rows * n + 4.0 * rows * k;
    case LKV_BENCH_COMPACT: return rows * k * (4.0 + 2.0 * (2.0 * d * e) + 2.0 * 16.0);
    case LKV_BENCH_ATTEND_OBSERVE: return 2.0 * rows * n * d * e + q_and_out + 16.0 * rows * n;
    default: return 0.0;
    }
}
