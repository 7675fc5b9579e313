/* The roofline model of the CUDA/HIP kernels (bench_model.h). Every figure
 * here is an estimate; the per-device numbers are assumptions written next
 * to their source. */
#include "bench_model.h"

#include <math.h>
#include <string.h>

#include "gpu/kernels/lkv_kernel_abi.h"
#include "plan/attend_plan.h"

/* Copy bandwidths of the measured class (what a device-to-device copy
 * reaches, not the data sheet's peak); SM counts from the data sheets.
 * split_loads: the 16-byte K/V loads a split thread has in flight, 4 in
 * both passes on sm_80 and sm_90 (LKV_ATT_INFLIGHT; scripts/kernel-report.sh
 * reads it from nvdisasm's SASS and fails CI below 4), 4 taken for the
 * MI300X's gfx942 from the gfx90a ISA (its loops keep 4-6). Launch, sync
 * and loop steps are typical host-observed and per-iteration costs, not
 * measured here; grid_sync_s, a cooperative launch's wait for every block
 * of a group (an atomic per block and the polling of it through L2), is a
 * guess of the same kind. */
static const lkv_bench_gpu gpus[] = {
    {"h200", "NVIDIA H200 SXM (HBM3e)", 4.3e12, 132, 0.8e-6, 4, 2.0e-6, 3.0e-6, 70e-9, 20e-9,
     1.0e-6},
    {"h100", "NVIDIA H100 SXM (HBM3)", 3.0e12, 132, 0.8e-6, 4, 2.0e-6, 3.0e-6, 70e-9, 20e-9,
     1.0e-6},
    {"a100", "NVIDIA A100 SXM 80 GB (HBM2e)", 1.7e12, 108, 0.7e-6, 4, 2.0e-6, 3.0e-6, 70e-9,
     20e-9, 1.0e-6},
    {"mi300x", "AMD Instinct MI300X (HBM3)", 4.2e12, 304, 1.0e-6, 4, 3.0e-6, 4.0e-6, 70e-9,
     20e-9, 1.5e-6},
};

const lkv_bench_gpu *lkv_bench_gpu_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof gpus / sizeof gpus[0]; i++)
        if (strcmp(name, gpus[i].name) == 0)
            return &gpus[i];
    return NULL;
}

const char *lkv_bench_gpu_names(void) { return "h200, h100, a100, mi300x"; }

/* Bandwidth with `threads` each keeping `bytes` in flight, at most the
 * copy bandwidth (Little's law: bytes in flight over latency). */
static double bandwidth(const lkv_bench_gpu *g, double threads, double bytes)
{
    double reach = threads * bytes / g->latency_s;
    return reach < g->copy_bytes_per_s ? reach : g->copy_bytes_per_s;
}

/* A kernel of `blocks` blocks of `block` threads moving `bytes` evenly,
 * `per_thread` bytes in flight each, `resident` blocks a multiprocessor:
 * one wave after another. */
static double kernel_s(const lkv_bench_gpu *g, double bytes, int64_t blocks, int block,
                       double per_thread, int resident, int64_t *out_waves)
{
    int64_t fit = (int64_t)g->sms * resident;
    int64_t waves = (blocks + fit - 1) / fit, left = blocks;
    double t = 0.0, per_block = blocks > 0 ? bytes / (double)blocks : 0.0;
    for (int64_t w = 0; w < waves; w++, left -= fit) {
        int64_t active = left < fit ? left : fit;
        t += (double)active * per_block / bandwidth(g, (double)active * block, per_thread);
    }
    if (out_waves)
        *out_waves = waves;
    return t;
}

/* Query heads a split block holds: the smallest of 1, 2, 4, 8 that holds a
 * cache head's group (gpu_attend.c). */
static int32_t qblock_of(int32_t per)
{
    int32_t qb = 1;
    while (qb < per && qb < LKV_ATT_QBLOCK)
        qb <<= 1;
    return qb;
}

/* attend: the split kernel. Where its blocks fit the device at once (one
 * wave: the plan's aim) it is launched cooperatively (gpu_attend.c): the
 * split's logits stay in shared memory, the blocks wait for each other
 * once (grid_sync_s), share the combine (each sums its P-th of the splits
 * for its elements: ceil(splits / P) steps) and write the probabilities
 * themselves: one launch, and no logits in memory where a split fits the
 * tile. Otherwise the last split block combines (a step per split) and
 * the probs pass reads the logits back. `probs`: 0 none, 1 written,
 * ATTEND_OBSERVED the lazy observe applied where they are computed
 * instead (last and mri read and written, 16 bytes a row's slot; no
 * probabilities in memory): no launch of its own. */
enum { ATTEND_OBSERVED = 2 };

static void attend_model(const lkv_bench_gpu *g, const lkv_bench_shape *s, int32_t n, int probs,
                         lkv_bench_model *m)
{
    int32_t per = s->q_heads / s->kv_heads, qb = qblock_of(per);
    double e = (double)lkv_dtype_size(s->dtype), d = s->head_dim;
    int vec = ((int)d * (int)e) % 16 == 0;
    int resident = 2; /* every split kernel: the kernel report's gate on sm_90 */
    lkv_attend_split_in in = {
        .slots = (uint64_t)n,
        .longest = n,
        .units = lkv_attend_units(s->kv_heads, s->q_heads, qb),
        .budget = lkv_attend_budget(g->sms, resident),
        .align = LKV_ATT_BLOCK,
        .rounding = LKV_ATTEND_SPREAD,
    };
    uint64_t len = lkv_attend_split_len(&in);
    m->splits = (int32_t)lkv_attend_splits((uint64_t)n, len);
    m->blocks = (int64_t)m->splits * (int64_t)in.units;
    int32_t qblocks = (per + qb - 1) / qb;
    int coop = m->blocks <= (int64_t)g->sms * resident;
    int fused = coop && probs && qblocks == 1;
    int long_split = len > (uint64_t)(LKV_ATT_TILE / qb);
    /* each block reads its cache head's K and V of its split; the logits
     * stay in the tile where the split fits it (else out and back in the
     * split's own V pass, and once more for fused probabilities); the
     * probs pass reads them (counted there) */
    double kv = 2.0 * s->kv_heads * qblocks * (double)n * d * e;
    double logit_bytes = 4.0 * s->q_heads * (double)n;
    double logits = long_split      ? (fused ? 3.0 : 2.0) * logit_bytes
                    : probs && !fused ? logit_bytes
                                      : 0.0;
    /* what a row's slot costs where its probability is computed: written,
     * or the observe's state read and written */
    double sink = (probs == ATTEND_OBSERVED ? 16.0 : 4.0) * s->kv_heads * (double)n;
    double pw = fused ? sink : 0.0;
    double in_flight = vec ? 16.0 * g->split_loads : e;
    double t = kernel_s(g, kv + logits + pw, m->blocks, LKV_ATT_BLOCK, in_flight, resident,
                        &m->waves);
    double partials = (double)s->q_heads * m->splits * (d + 2.0) * 4.0;
    if (coop) {
        double elems = ceil((double)per * d / m->splits);
        double share = elems < LKV_ATT_BLOCK ? floor(LKV_ATT_BLOCK / elems) : 1.0;
        t += g->grid_sync_s + g->combine_step_s * ceil(m->splits / share);
    } else {
        t += g->combine_step_s * m->splits;
    }
    m->bytes = kv + logits + pw + partials;
    m->launches = 1;
    if (probs && !fused) { /* every logit read once more; the probabilities written or observed */
        double pb = 4.0 * s->q_heads * (double)n + sink;
        t += kernel_s(g, pb, (n + LKV_ATT_BLOCK - 1) / LKV_ATT_BLOCK * s->kv_heads,
                      LKV_ATT_BLOCK, 4.0 * per, 8, NULL);
        m->bytes += pb;
        m->launches = 2;
    }
    m->seconds = t;
}

/* A kernel of a block per 256 slots of every row, 4-byte loads. */
static double per_slot_s(const lkv_bench_gpu *g, double bytes, const lkv_bench_shape *s,
                         int32_t n, double loads, int64_t *blocks, int64_t *waves)
{
    *blocks = (int64_t)((n + 255) / 256) * s->kv_heads;
    return kernel_s(g, bytes, *blocks, 256, 4.0 * loads, 8, waves);
}

/* select, one block a row (lkv_select_rows): four radix passes over the
 * row's scores with LKV_SELECT_INFLIGHT 4-byte loads in flight a thread
 * (8: the kernel report reads them in the SASS), each pass's digit by a
 * block scan of its 256 bins (log2 256 = 8 steps); then the last pass over
 * the row writing the kept slots, with 4 in flight (the report's figure:
 * nvcc issues its 8 loads in two halves there). */
static double select_rows_s(const lkv_bench_gpu *g, const lkv_bench_shape *s, int32_t n,
                            int32_t k, lkv_bench_model *m)
{
    double pass = 4.0 * s->kv_heads * (double)n, kept = 4.0 * s->kv_heads * (double)k;
    m->blocks = s->kv_heads;
    m->bytes = 5.0 * pass + kept;
    return kernel_s(g, 4.0 * pass, m->blocks, LKV_SELECT_BLOCK, 4.0 * LKV_SELECT_INFLIGHT, 8,
                    &m->waves) +
           kernel_s(g, pass + kept, m->blocks, LKV_SELECT_BLOCK, 4.0 * 4.0, 8, NULL) +
           4.0 * 8.0 * g->scan_step_s;
}

/* select where a row's blocks fit the device at once (gpu_select.c):
 * ceil(n / LKV_SELECT_CHUNK) blocks a row each read their chunk once (8
 * scores in flight a thread) and keep it in shared memory; the four passes'
 * histograms and then the blocks' counts are exchanged through memory, a
 * wait for the row's blocks each (5 x grid_sync_s), each digit found by a
 * block scan of the bins, the blocks' counts by one more. Resident: 4
 * blocks a multiprocessor (its launch bounds ask for 4; ptxas fits it in
 * 64 registers with no spill on sm_80 and sm_90: kernel report).
 * Otherwise lkv_select_rows. */
static double select_s(const lkv_bench_gpu *g, const lkv_bench_shape *s, int32_t n, int32_t k,
                       lkv_bench_model *m)
{
    const int resident = 4;
    int64_t parts = (n + LKV_SELECT_CHUNK - 1) / LKV_SELECT_CHUNK;
    int64_t blocks = parts * s->kv_heads;
    if (parts < 1 || blocks > (int64_t)g->sms * resident)
        return select_rows_s(g, s, n, k, m);
    double pass = 4.0 * s->kv_heads * (double)n, kept = 4.0 * s->kv_heads * (double)k;
    m->blocks = blocks;
    m->bytes = pass + kept;
    double waits = parts > 1 ? 5.0 * g->grid_sync_s + 1.0 * 8.0 * g->scan_step_s : 0.0;
    return kernel_s(g, pass + kept, blocks, LKV_SELECT_BLOCK, 4.0 * LKV_SELECT_INFLIGHT, resident,
                    &m->waves) +
           4.0 * 8.0 * g->scan_step_s + waits;
}

void lkv_bench_model_op(const lkv_bench_gpu *g, lkv_bench_op op, const lkv_bench_shape *s,
                        int32_t length, int32_t keep, lkv_bench_model *out)
{
    lkv_bench_model m = {0};
    double bytes = lkv_bench_op_bytes(op, s, length, keep);
    m.launches = 1;
    switch (op) {
    case LKV_BENCH_ATTEND_PROBS:
    case LKV_BENCH_ATTEND_PLAIN:
        attend_model(g, s, length, op == LKV_BENCH_ATTEND_PROBS, &m);
        break;
    case LKV_BENCH_ATTEND_OBSERVE: /* the CUDA/HIP backend fuses them */
        attend_model(g, s, length, ATTEND_OBSERVED, &m);
        break;
    case LKV_BENCH_OBSERVE: /* probs, last and mri in flight */
        m.bytes = bytes;
        m.seconds = per_slot_s(g, bytes, s, length, 3.0, &m.blocks, &m.waves);
        break;
    case LKV_BENCH_SCORE: /* last and mri */
        m.bytes = bytes;
        m.seconds = per_slot_s(g, bytes, s, length, 2.0, &m.blocks, &m.waves);
        break;
    case LKV_BENCH_SELECT:
        m.seconds = select_s(g, s, length, keep, &m);
        break;
    case LKV_BENCH_COMPACT: /* 16-byte units, slices of every row */
        m.bytes = bytes;
        m.seconds = per_slot_s(g, bytes, s, keep, 4.0, &m.blocks, &m.waves);
        break;
    default:
        break;
    }
    m.seconds += m.launches * g->launch_s + g->sync_s;
    m.ideal_s = bytes / g->copy_bytes_per_s;
    *out = m;
}

static void print_shape(FILE *f, const lkv_bench_settings *st, const lkv_bench_gpu *g,
                        const lkv_bench_shape *s)
{
    char shape[48];
    lkv_bench_shape_label(s, shape, sizeof shape);
    fprintf(f, "%s\n%-15s %7s | %10s %10s %6s | %8s %7s %6s %6s\n", shape, "op", "slots",
            "model", "ideal", "%copy", "launches", "blocks", "waves", "splits");
    for (int op = 0; op < LKV_BENCH_OP_COUNT; op++)
        for (int l = 0; l < st->n_lengths; l++) {
            int32_t n = st->lengths[l];
            lkv_bench_model m;
            lkv_bench_model_op(g, (lkv_bench_op)op, s, n, lkv_bench_keep(st, n), &m);
            char len[16], t[16], ideal[16], splits[16] = "-";
            lkv_bench_format_length(n, len, sizeof len);
            lkv_bench_format_time(m.seconds, t, sizeof t);
            lkv_bench_format_time(m.ideal_s, ideal, sizeof ideal);
            if (m.splits > 0)
                snprintf(splits, sizeof splits, "%d", m.splits);
            fprintf(f, "%-15s %7s | %10s %10s %5.0f%% | %8d %7lld %6lld %6s\n",
                    lkv_bench_op_label((lkv_bench_op)op), len, t, ideal,
                    100.0 * m.ideal_s / m.seconds, m.launches, (long long)m.blocks,
                    (long long)m.waves, splits);
        }
}

void lkv_bench_model_print(FILE *f, const lkv_bench_settings *st, const lkv_bench_gpu *const *g,
                           int n_gpus)
{
    for (int i = 0; i < n_gpus; i++) {
        fprintf(f, "\nMODEL (estimates: no such device ran) of the CUDA/HIP kernels on %s:\n"
                   "%.1f TB/s copy, %d multiprocessors, %.1f us load latency, %d 16-byte load%s "
                   "in flight a split thread,\n%.1f us a launch, %.1f us the sync "
                   "(bench/bench_model.c); batch 1, one layer;\n"
                   "ideal = the ops table's bytes at copy bandwidth, %%copy = ideal / model\n",
                g[i]->label, g[i]->copy_bytes_per_s / 1e12, g[i]->sms, g[i]->latency_s * 1e6,
                g[i]->split_loads, g[i]->split_loads == 1 ? "" : "s", g[i]->launch_s * 1e6,
                g[i]->sync_s * 1e6);
        for (int sh = 0; sh < st->n_shapes; sh++)
            print_shape(f, st, g[i], &st->shapes[sh]);
    }
}
